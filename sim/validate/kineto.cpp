#include "validate/kineto.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains_any(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

// The collective a kernel or "Collective name" names, from lower-case text; other_comm if none.
ActivityClass collective_class(const std::string& n) {
  if (contains_any(n, {"allgather", "all_gather"})) return ActivityClass::all_gather;
  if (contains_any(n, {"reducescatter", "reduce_scatter"})) return ActivityClass::reduce_scatter;
  if (contains_any(n, {"allreduce", "all_reduce"})) return ActivityClass::all_reduce;
  if (contains_any(n, {"alltoall", "all_to_all"})) return ActivityClass::all_to_all;
  if (contains_any(n, {"sendrecv", "send", "recv"})) return ActivityClass::send_recv;
  return ActivityClass::other_comm;
}

// "[0, 1, 2]" -> {0, 1, 2}; empty if the text is not such a list.
std::vector<int> parse_ranks(std::string_view text) {
  std::vector<int> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    if (std::isdigit(static_cast<unsigned char>(*p)) == 0) {
      ++p;
      continue;
    }
    int v = 0;
    const auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) return {};
    out.push_back(v);
    p = q;
  }
  return out;
}

std::string group_label(const CommArgs& a) {
  const bool described = !a.group_description.empty() && a.group_description != "undefined";
  if (described && !a.group_name.empty()) return fmt::format("{} ({})", a.group_description, a.group_name);
  if (described) return a.group_description;
  return a.group_name;
}

// Keeps the steps the filter asks for; throws if none is left.
std::vector<StepWindow> filter_steps(const StepSplit& split, const StepFilter& f, const std::string& file) {
  std::vector<StepWindow> kept;
  for (std::size_t i = static_cast<std::size_t>(std::max(0, f.warmup)); i < split.steps.size(); ++i) {
    const StepWindow& s = split.steps[i];
    if ((f.first && s.number < *f.first) || (f.last && s.number > *f.last)) continue;
    kept.push_back(s);
  }
  if (kept.empty()) {
    std::string found;
    for (const auto& s : split.steps) found += fmt::format("{}{}", found.empty() ? "" : ", ", s.number);
    const std::string range = fmt::format("{}:{}", f.first ? std::to_string(*f.first) : "", f.last ? std::to_string(*f.last) : "");
    throw ConfigError(Location{file, 0, 0}, "steps",
                      fmt::format("--steps {} with --warmup {} leaves no step; the trace holds steps {}", range, f.warmup, found));
  }
  return kept;
}

std::string collective_key(const Collective& c) {
  return fmt::format("{}|{}|{}|{}|{}|{}", static_cast<int>(c.cls), c.recorded, c.bytes, c.dtype, c.group_size, c.group);
}

// The index of the collective in the trace's table, adding it once.
int intern_collective(Trace& t, std::map<std::string, int>& ids, Collective c) {
  const std::string key = collective_key(c);
  const auto it = ids.find(key);
  if (it != ids.end()) return it->second;
  const int id = static_cast<int>(t.collectives.size());
  t.collectives.push_back(std::move(c));
  ids.emplace(key, id);
  return id;
}

}  // namespace

KernelClass classify_kernel(std::string_view name) {
  const std::string n = lower(name);
  // NCCL's kernels and RCCL's (which keeps NCCL's names); ncclDevKernel_Generic names nothing.
  if (contains_any(n, {"nccl", "rccl", "msccl"})) {
    const ActivityClass c = collective_class(n);
    return {c, std::string(to_string(c))};
  }
  if (contains_any(n, {"flash", "fmha", "attention", "attn"})) return {ActivityClass::compute, "attention"};
  // GEMMs: cuBLAS (gemm, xmma, nvjet, cublas), CUTLASS, rocBLAS/hipBLASLt (Tensile's Cijk_),
  // and convolutions run as implicit GEMMs (cuDNN's implicit_gemm, MIOpen's igemm, CK's grouped_conv).
  if (contains_any(n, {"gemm", "cutlass", "xmma", "nvjet", "cublas", "matmul", "cijk_", "grouped_conv", "convolution"})) {
    return {ActivityClass::compute, "gemm"};
  }
  return {ActivityClass::compute, "other"};
}

int dtype_bytes(std::string_view dtype) {
  const std::string d = lower(dtype);
  static const std::map<std::string, int, std::less<>> sizes{{"float", 4},
                                                             {"float32", 4},
                                                             {"double", 8},
                                                             {"float64", 8},
                                                             {"half", 2},
                                                             {"float16", 2},
                                                             {"bfloat16", 2},
                                                             {"int", 4},
                                                             {"int32", 4},
                                                             {"long", 8},
                                                             {"int64", 8},
                                                             {"short", 2},
                                                             {"int16", 2},
                                                             {"char", 1},
                                                             {"int8", 1},
                                                             {"byte", 1},
                                                             {"uint8", 1},
                                                             {"bool", 1},
                                                             {"float8_e4m3fn", 1},
                                                             {"float8_e5m2", 1},
                                                             {"float8_e4m3fnuz", 1},
                                                             {"float8_e5m2fnuz", 1},
                                                             {"complexfloat", 8},
                                                             {"complexdouble", 16}};
  const auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

Collective collective_from_args(const CommArgs& a) {
  Collective c;
  c.recorded = a.collective;
  c.cls = collective_class(lower(a.collective));
  c.dtype = a.dtype;
  c.group_size = a.group_size;
  c.group = group_label(a);
  c.group_ranks = parse_ranks(a.group_ranks);
  const double element = dtype_bytes(a.dtype);
  const double in = a.in_nelems >= 0 ? static_cast<double>(a.in_nelems) : 0.0;
  const double out = a.out_nelems >= 0 ? static_cast<double>(a.out_nelems) : 0.0;
  switch (c.cls) {
    case ActivityClass::all_gather:
      c.bytes = out * element;  // the gathered output
      break;
    case ActivityClass::reduce_scatter:
    case ActivityClass::all_reduce:
    case ActivityClass::all_to_all:
      c.bytes = in * element;
      break;
    default:
      c.bytes = std::max(in, out) * element;
  }
  return c;
}

void add_kineto_rank(Trace& into, const KinetoEvents& ev, int rank, const StepFilter& filter) {
  if (ev.gpu.empty()) {
    throw ConfigError(Location{ev.file, 0, 0}, "traceEvents",
                      fmt::format("no GPU kernels among {} events (no \"cat\": \"kernel\"); expected a trace recorded with "
                                  "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
                                  ev.events));
  }
  const StepSplit split = find_steps(ev);
  const std::vector<StepWindow> windows = filter_steps(split, filter, ev.file);
  if (into.steps_from.empty()) into.steps_from = split.method;
  for (const auto& n : split.notes) {
    const std::string note = into.ranks.empty() ? n : fmt::format("rank {}: {}", rank, n);
    if (std::find(into.notes.begin(), into.notes.end(), note) == into.notes.end()) into.notes.push_back(note);
  }

  RankTrace r;
  r.rank = rank;
  r.file = ev.file;
  for (const StepWindow& w : windows)
    r.steps.push_back(Step{w.number, w.start * 1e-6, w.end * 1e-6, w.cpu_span >= 0 ? w.cpu_span * 1e-6 : -1});
  std::map<std::string, int> collective_ids;
  for (std::size_t i = 0; i < into.collectives.size(); ++i)
    collective_ids.emplace(collective_key(into.collectives[i]), static_cast<int>(i));
  std::vector<int> kind_of_name(ev.names.size(), -1);
  std::vector<ActivityClass> class_of_name(ev.names.size(), ActivityClass::compute);
  for (const GpuOp& op : ev.gpu) {
    // The step whose window holds the op's start.
    const auto w = std::upper_bound(windows.begin(), windows.end(), op.ts, [](double t, const StepWindow& s) { return t < s.start; });
    if (w == windows.begin()) continue;
    const StepWindow& win = *std::prev(w);
    if (op.ts >= win.end) continue;
    Activity a;
    a.step = static_cast<int>(std::prev(w) - windows.begin());
    a.start = op.ts * 1e-6;
    a.end = (op.ts + op.dur) * 1e-6;
    a.name = into.intern_name(ev.names[static_cast<std::size_t>(op.name)]);
    a.lane = into.intern_lane(fmt::format("stream {}", op.stream));
    if (op.comm >= 0) {
      const CommArgs& args = ev.comms[static_cast<std::size_t>(op.comm)];
      if (dtype_bytes(args.dtype) == 0) {
        const std::string note = fmt::format("collectives of dtype \"{}\" have no size: its element size is not known", args.dtype);
        if (std::find(into.notes.begin(), into.notes.end(), note) == into.notes.end()) into.notes.push_back(note);
      }
      Collective c = collective_from_args(args);
      a.cls = c.cls;
      a.kind = into.intern_kind(to_string(c.cls));
      a.coll = intern_collective(into, collective_ids, std::move(c));
    } else if (op.kind != GpuOpKind::kernel) {
      a.cls = ActivityClass::compute;
      a.kind = into.intern_kind(op.kind == GpuOpKind::memcpy ? "memcpy" : "memset");
    } else {
      auto& kind = kind_of_name[static_cast<std::size_t>(op.name)];
      if (kind < 0) {
        const KernelClass kc = classify_kernel(ev.names[static_cast<std::size_t>(op.name)]);
        kind = into.intern_kind(kc.kind);
        class_of_name[static_cast<std::size_t>(op.name)] = kc.cls;
      }
      a.kind = kind;
      a.cls = class_of_name[static_cast<std::size_t>(op.name)];
    }
    r.activities.push_back(a);
  }
  std::sort(r.activities.begin(), r.activities.end(), [](const Activity& x, const Activity& y) { return x.start < y.start; });
  into.ranks.push_back(std::move(r));
}

}  // namespace shardsim::validate
