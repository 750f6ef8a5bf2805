// doctest's main, with one guard: CTest runs each TEST_CASE by name (--test-case=NAME, from
// doctest_discover_tests), and a name CMake splits (a ';' in it) would match no test case and
// pass without running anything. A filtered run that selects no test case fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

unsigned g_selected = 0;  // test cases that passed the filters, from the last run

struct SelectedCounter : doctest::IReporter {
  explicit SelectedCounter(const doctest::ContextOptions& /*options*/) {}
  void report_query(const doctest::QueryData& /*data*/) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override { g_selected = stats.numTestCasesPassingFilters; }
  void test_case_start(const doctest::TestCaseData& /*data*/) override {}
  void test_case_reenter(const doctest::TestCaseData& /*data*/) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& /*stats*/) override {}
  void test_case_exception(const doctest::TestCaseException& /*e*/) override {}
  void subcase_start(const doctest::SubcaseSignature& /*s*/) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& /*data*/) override {}
  void log_message(const doctest::MessageData& /*data*/) override {}
  void test_case_skipped(const doctest::TestCaseData& /*data*/) override {}
};

REGISTER_LISTENER("selected_counter", 1, SelectedCounter);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;
  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    filtered = filtered || a.starts_with("--test-case=") || a.starts_with("-tc=");
  }
  if (result == 0 && filtered && g_selected == 0) {
    std::fprintf(stderr, "no test case matches the --test-case filter (a ';' in a TEST_CASE name splits it in CTest)\n");
    return 1;
  }
  return result;
}
