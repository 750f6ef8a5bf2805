// libFuzzer target for the config loader: YAML parsing, scenario and topology validation
// (including --set overrides, cluster.overrides and topology `extends`), and the Hugging Face
// config.json reader, all on files held in memory (config/file_source.hpp).
//
// An input is one or more files. Text before the first "=== NAME" line is scenario.yaml; each
// "=== NAME" line starts the file NAME; "=== --set" starts lines of KEY=VALUE assignments:
//
//   cluster: {topology: topo.yaml}
//   model: {hf_config: config.json}
//   training: {seq_len: 128}
//   === topo.yaml
//   name: x
//   extends: base.yaml
//   === --set
//   fsdp.sharding=hybrid_shard
//
// Bad input must end in a ConfigError. Anything else (a crash, a sanitizer report, another
// exception, a hang past libFuzzer's -timeout) is a bug; each one found becomes a case in
// tests/bad_inputs/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/file_source.hpp"
#include "config/scenario.hpp"
#include "config/topology.hpp"
#include "core/error.hpp"
#include "model/transformer_spec.hpp"

namespace {

struct Bundle {
  shardsim::config::MemoryFiles files;
  std::vector<std::string> assignments;
};

Bundle split(std::string_view input) {
  Bundle b;
  std::string name = "scenario.yaml";
  std::string text;
  auto flush = [&] {
    if (name == "--set") {
      std::size_t start = 0;
      while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        if (end > start) b.assignments.emplace_back(text.substr(start, end - start));
        start = end + 1;
      }
    } else {
      b.files.add(name, text);
    }
    text.clear();
  };
  std::size_t start = 0;
  while (start < input.size()) {
    std::size_t end = input.find('\n', start);
    end = end == std::string_view::npos ? input.size() : end + 1;
    const std::string_view line = input.substr(start, end - start);
    if (line.substr(0, 4) == "=== ") {
      flush();
      name = std::string(line.substr(4));
      while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
    } else {
      text += line;
    }
    start = end;
  }
  flush();
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim;
  const Bundle b = split(std::string_view(reinterpret_cast<const char*>(data), size));  // NOLINT: libFuzzer's ABI
  try {
    const config::ScenarioConfig s = config::load_scenario("scenario.yaml", b.assignments, b.files);
    (void)model::resolve_spec(s.model, b.files);
  } catch (const ConfigError&) {
  }
  // A config.json in the bundle, read directly too.
  try {
    (void)model::read_hf_config("config.json", Location{"scenario.yaml", 1, 1}, b.files);
  } catch (const ConfigError&) {
  }
  // The same first file read as a topology, as `shardsim check` does for files without cluster:.
  try {
    (void)config::load_topology("scenario.yaml", ConfigNode{}, "", b.files, std::nullopt);
  } catch (const ConfigError&) {
  }
  return 0;
}
