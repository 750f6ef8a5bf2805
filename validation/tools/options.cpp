#include "tools/options.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "graph/serialize.hpp"

namespace shardsim::replay {
namespace {

double fraction(const Args& args, const char* name) {
  const auto v = args.get(name);
  if (!v) return 1.0;
  try {
    std::size_t used = 0;
    const double f = std::stod(*v, &used);
    if (used == v->size() && f > 0 && f <= 1) return f;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{}: expected a fraction in (0, 1], e.g. 0.01; got \"{}\"", name, *v));
}

}  // namespace

void declare_backend_options(Args& args) {
  args.value("--backend", "nccl|cpu", "nccl: CUDA streams, cuBLAS and NCCL on GPUs; cpu: threads, CPU kernels and MPI");
  args.value("--nprocs", "N", "ranks to start when no launcher (torchrun, mpirun) started this process");
  args.value("--timeout", "SECONDS", "give up (exit 1) after this long without progress; default 300");
  args.value("--compute-scale", "F", "cpu: run this fraction of each kernel's work (default 1)");
  args.value("--bytes-scale", "F", "cpu: move this fraction of each collective's bytes (default 1)");
  args.value("--rendezvous", "DIR",
             "nccl: where rank 0 publishes the NCCL id (default: under the output; torchrun's MASTER_ADDR/PORT use TCP)");
}

BackendChoice backend_choice(const Args& args, const std::string& out_dir) {
  BackendChoice c;
  const auto backend = args.get("--backend");
  if (!backend) throw UsageError(fmt::format("--backend is required: nccl or cpu (this build has {})", available_backends()));
  if (*backend != "nccl" && *backend != "cpu") {
    throw UsageError(fmt::format("--backend: expected nccl or cpu; got \"{}\" (this build has {})", *backend, available_backends()));
  }
  c.name = *backend;
  c.scale = CpuScale{fraction(args, "--compute-scale"), fraction(args, "--bytes-scale")};
  if (c.name == "nccl" && (c.scale.compute != 1 || c.scale.bytes != 1)) {
    throw UsageError("--compute-scale and --bytes-scale are for the cpu backend; the nccl backend runs the real sizes");
  }
  if (const auto t = args.get("--timeout")) {
    try {
      std::size_t used = 0;
      c.timeout = std::stod(*t, &used);
      if (used != t->size() || !(c.timeout > 0)) throw std::invalid_argument(*t);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--timeout: expected seconds > 0; got \"{}\"", *t));
    }
  }
  c.rendezvous_dir = args.get("--rendezvous").value_or((std::filesystem::path(out_dir) / ".rendezvous").string());
  return c;
}

std::optional<int> nprocs(const Args& args) {
  const auto v = args.get("--nprocs");
  if (!v) return std::nullopt;
  try {
    std::size_t used = 0;
    const int n = std::stoi(*v, &used);
    if (used == v->size() && n >= 1 && n <= 4096) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--nprocs: expected an integer 1..4096; got \"{}\"", *v));
}

graph::StepGraph load_graph(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(Location{file, 0, 0}, "", "cannot open for reading (write one with `shardsim export SCENARIO --out FILE`)");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string t = text.str();
  try {
    return graph::from_json(parse_json(t, file, "a graph from `shardsim export`"), file);
  } catch (const ConfigError& e) {
    throw located(e, t);  // file:line:col of the key the error names
  }
}

}  // namespace shardsim::replay
