// read_trace_file(): one streaming pass over a JSON file with nlohmann's SAX interface. Trace
// events are read into a small reusable record and kept or dropped as soon as each one closes;
// every other top-level key is built as a DOM (small in a trace; the whole file otherwise).
#include <fmt/format.h>

#include <cstdlib>
#include <unordered_map>

#include "core/error.hpp"
#include "validate/kineto_events.hpp"
#include "validate/text_input.hpp"

namespace shardsim::validate {
namespace {

using nlohmann::json;

// The fields of one trace event that matter, reused from event to event.
struct EventRecord {
  std::string ph, cat, name;
  double ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  std::int64_t stream = -1, correlation = -1, tid = -1;
  CommArgs comm;
  bool has_comm = false;
  // args."Input Dims", "Input type", "Concrete Inputs" (kept for ShapedOps only)
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::string> types, concrete;

  void clear() {
    ph.clear();
    cat.clear();
    name.clear();
    has_ts = has_dur = has_comm = false;
    ts = dur = 0;
    stream = correlation = tid = -1;
    comm = CommArgs{};
    dims.clear();
    types.clear();
    concrete.clear();
  }
};

// Runtime and driver calls that block the CPU until the GPU has run the work before them: the
// synchronizes, synchronous copies (HIP's hipMemcpyWithStream, PyTorch's blocking copy on ROCm)
// and freeing device memory (cudaFree / hipFree wait for the device: in the MI300X ResNet-18
// trace of shared/real-data, 469 hipFree calls last over 1 ms, 3.3 s in all, up to 70 ms each).
bool synchronizes(std::string_view call) {
  for (std::string_view prefix : {"cuda", "hip", "cu"}) {
    if (call.starts_with(prefix)) {
      call.remove_prefix(prefix.size());
      break;
    }
  }
  return call.ends_with("Synchronize") || call == "Memcpy" || call == "Memcpy2D" || call == "MemcpyWithStream" || call == "Free";
}

bool iequals(const std::string& a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

class Handler {
 public:
  explicit Handler(ParsedTraceFile& out) : out_(out) {}

  // --- scalars
  bool null() { return state_ == State::capture ? capture_scalar("", -1) : scalar(json(nullptr)); }
  bool boolean(bool v) { return state_ == State::capture ? capture_scalar(v ? "True" : "False", -1) : scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<double>(v), v, json(v)); }
  bool number_unsigned(json::number_unsigned_t v) {
    return number(static_cast<double>(v), static_cast<std::int64_t>(std::min<json::number_unsigned_t>(v, INT64_MAX)), json(v));
  }
  bool number_float(json::number_float_t v, const std::string& /*text*/) {
    const bool integral = v > -9e18 && v < 9e18;
    return number(v, integral ? static_cast<std::int64_t>(v) : -1, json(v));
  }
  bool string(std::string& v) {
    switch (state_) {
      case State::event:
        event_string(v);
        return true;
      case State::args:
        args_string(v);
        return true;
      case State::capture:
        return capture_scalar(v, -1);
      case State::skip:
      case State::events:
        return true;
      default:
        return scalar(json(std::move(v)));
    }
  }
  bool binary(json::binary_t& /*v*/) { return true; }

  // --- structure
  bool start_object(std::size_t /*n*/) {
    switch (state_) {
      case State::events:
        state_ = State::event;
        event_.clear();
        return true;
      case State::event:
        if (key_ == "args") {
          state_ = State::args;
        } else {
          enter_skip(State::event);
        }
        return true;
      case State::args:
        enter_skip(State::args);
        return true;
      case State::capture:
        if (capture_depth_ == 1) capture_scalar("", -1);  // keeps the inputs' positions
        enter_skip(State::capture);
        return true;
      case State::skip:
        ++skip_depth_;
        return true;
      default:
        open(json::object());
        return true;
    }
  }
  bool end_object() {
    switch (state_) {
      case State::event:
        finish_event();
        state_ = State::events;
        return true;
      case State::args:
        state_ = State::event;
        return true;
      case State::skip:
        leave_skip();
        return true;
      default:
        close();
        return true;
    }
  }
  bool start_array(std::size_t /*n*/) {
    switch (state_) {
      case State::event:
        enter_skip(State::event);
        return true;
      case State::args:
        if (key_ == "Input Dims" || key_ == "Input type" || key_ == "Concrete Inputs") {
          capture_dims_ = key_ == "Input Dims";
          capture_text_ = key_ == "Input type" ? &event_.types : key_ == "Concrete Inputs" ? &event_.concrete : nullptr;
          capture_depth_ = 1;
          state_ = State::capture;
        } else {
          enter_skip(State::args);
        }
        return true;
      case State::capture:
        if (++capture_depth_ == 2) {
          if (capture_dims_) event_.dims.emplace_back();
          if (capture_text_) capture_text_->emplace_back();  // a list input: its position only
        }
        return true;
      case State::skip:
        ++skip_depth_;
        return true;
      case State::events:  // an array inside traceEvents is not an event
        enter_skip(State::events);
        return true;
      default:
        if (stack_.empty()) {  // a bare array of events (Chrome's "JSON Array Format")
          out_.is_kineto = true;
          state_ = State::events;
          return true;
        }
        if (stack_.size() == 1 && key_ == "traceEvents") {
          out_.is_kineto = true;
          state_ = State::events;
          return true;
        }
        open(json::array());
        return true;
    }
  }
  bool end_array() {
    switch (state_) {
      case State::events:
        state_ = State::dom;
        return true;
      case State::capture:
        if (--capture_depth_ == 0) state_ = State::args;
        return true;
      case State::skip:
        leave_skip();
        return true;
      default:
        close();
        return true;
    }
  }
  bool key(std::string& k) {
    key_ = k;
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const nlohmann::detail::exception& e) {
    // nlohmann's what() is "[json.exception.parse_error.101] parse error at line 3, column 5:
    // syntax error ..."; our location comes from the input, the rest is the message.
    std::string what = e.what();
    if (const auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos) what.erase(0, close + 2);
    if (what.rfind("parse error", 0) == 0) {
      if (const auto colon = what.find(": "); colon != std::string::npos) what.erase(0, colon + 2);
    }
    error_ = what;
    return false;
  }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  enum class State { dom, events, event, args, capture, skip };

  // A value inside one of the args arrays kept for ShapedOps: "Input Dims" holds one array of
  // integers per input; "Input type" and "Concrete Inputs" one string per input.
  bool capture_scalar(const std::string& text, std::int64_t integer) {
    if (capture_dims_ && capture_depth_ == 2 && integer >= 0) event_.dims.back().push_back(integer);
    if (capture_dims_ && capture_depth_ == 1) event_.dims.emplace_back();
    if (capture_text_ && capture_depth_ == 1) capture_text_->push_back(text);
    return true;
  }

  void enter_skip(State back) {
    skip_back_ = back;
    skip_depth_ = 1;
    state_ = State::skip;
  }
  void leave_skip() {
    if (--skip_depth_ == 0) state_ = skip_back_;
  }

  // --- the DOM of everything outside traceEvents
  json* place(json v) {
    if (stack_.empty()) {
      out_.document = std::move(v);
      return &out_.document;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  void open(json v) { stack_.push_back(place(std::move(v))); }
  void close() {
    if (!stack_.empty()) stack_.pop_back();
  }
  bool scalar(json v) {
    if (state_ == State::dom) (void)place(std::move(v));
    return true;
  }

  // --- trace events
  bool number(double d, std::int64_t i, json v) {
    switch (state_) {
      case State::event:
        if (key_ == "ts") {
          event_.ts = d;
          event_.has_ts = true;
        } else if (key_ == "dur") {
          event_.dur = d;
          event_.has_dur = true;
        } else if (key_ == "tid") {
          event_.tid = i;
        }
        return true;
      case State::args:
        args_number(i);
        return true;
      case State::capture:
        return capture_scalar(v.dump(), i);
      case State::skip:
      case State::events:
        return true;
      default:
        return scalar(std::move(v));
    }
  }
  void event_string(std::string& v) {
    if (key_ == "ph") {
      event_.ph = v;
    } else if (key_ == "cat") {
      event_.cat = v;
    } else if (key_ == "name") {
      event_.name.swap(v);
    } else if (key_ == "ts" || key_ == "dur") {  // some exporters write times as strings
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str()) return;
      (key_ == "ts" ? event_.ts : event_.dur) = d;
      (key_ == "ts" ? event_.has_ts : event_.has_dur) = true;
    }
  }
  void args_number(std::int64_t i) {
    if (key_ == "stream") {
      event_.stream = i;
    } else if (key_ == "correlation") {
      event_.correlation = i;
    } else if (key_ == "In msg nelems") {
      event_.comm.in_nelems = i;
      event_.has_comm = true;
    } else if (key_ == "Out msg nelems") {
      event_.comm.out_nelems = i;
      event_.has_comm = true;
    } else if (key_ == "Group size") {
      event_.comm.group_size = static_cast<int>(i);
      event_.has_comm = true;
    }
  }
  void args_string(std::string& v) {
    if (key_ == "Collective name") {
      event_.comm.collective = v;
      event_.has_comm = true;
    } else if (key_ == "dtype") {
      event_.comm.dtype = v;
    } else if (key_ == "Process Group Name") {
      event_.comm.group_name = v;
    } else if (key_ == "Process Group Description") {
      event_.comm.group_description = v;
    } else if (key_ == "Process Group Ranks") {
      event_.comm.group_ranks = v;
    }
  }

  int intern(std::string& name) {
    auto it = name_ids_.find(name);
    if (it != name_ids_.end()) return it->second;
    const int id = static_cast<int>(out_.kineto.names.size());
    out_.kineto.names.push_back(name);
    name_ids_.emplace(std::move(name), id);
    return id;
  }

  void finish_event() {
    KinetoEvents& k = out_.kineto;
    ++k.events;
    if (event_.ph != "X" || !event_.has_ts) return;
    const std::string& cat = event_.cat;
    const bool kernel = iequals(cat, "kernel");
    if (kernel || iequals(cat, "gpu_memcpy") || iequals(cat, "gpu_memset")) {
      GpuOp op;
      op.kind = kernel ? GpuOpKind::kernel : iequals(cat, "gpu_memcpy") ? GpuOpKind::memcpy : GpuOpKind::memset;
      op.ts = event_.ts;
      op.dur = event_.has_dur ? std::max(0.0, event_.dur) : 0.0;
      op.stream = event_.stream >= 0 ? event_.stream : event_.tid;
      op.correlation = event_.correlation;
      op.name = intern(event_.name);
      if (event_.has_comm) {
        op.comm = static_cast<int>(k.comms.size());
        k.comms.push_back(std::move(event_.comm));
      }
      k.gpu.push_back(op);
      return;
    }
    if (starts_with(event_.name, "ProfilerStep#") || starts_with(event_.name, "Optimizer.step#")) {
      k.markers.push_back(Marker{event_.name, cat == "gpu_user_annotation", event_.ts, event_.has_dur ? event_.dur : 0.0});
      return;
    }
    if (event_.correlation >= 0 && (cat == "cuda_runtime" || cat == "cuda_driver")) {
      k.launches.push_back(
          Launch{event_.correlation, event_.ts, event_.tid, event_.has_dur ? std::max(0.0, event_.dur) : 0.0, synchronizes(event_.name)});
      return;
    }
    if (iequals(cat, "cpu_op") && event_.has_dur && keeps_shapes_of(event_.name)) {
      k.shaped_ops.push_back(ShapedOp{std::move(event_.name), event_.tid, event_.ts, std::max(0.0, event_.dur), std::move(event_.dims),
                                      std::move(event_.types), std::move(event_.concrete)});
    }
  }

  ParsedTraceFile& out_;
  State state_ = State::dom;
  State skip_back_ = State::dom;
  int skip_depth_ = 0;
  std::vector<json*> stack_;
  std::string key_;
  EventRecord event_;
  // Where State::capture puts what it reads: event_.dims, or one of event_'s string lists.
  bool capture_dims_ = false;
  std::vector<std::string>* capture_text_ = nullptr;
  int capture_depth_ = 0;
  std::unordered_map<std::string, int> name_ids_;
  std::string error_;
};

void read_distributed_info(ParsedTraceFile& f) {
  const json& doc = f.document;
  if (!doc.is_object()) return;
  KinetoEvents& k = f.kineto;
  const std::string source = k.file;
  if (const auto it = doc.find("distributedInfo"); it != doc.end() && it->is_object()) {
    auto integer = [&](const char* key) -> std::optional<int> {
      const auto v = it->find(key);
      if (v == it->end()) return std::nullopt;
      if (!v->is_number_integer() || v->get<std::int64_t>() < 0 || v->get<std::int64_t>() > 1'000'000) {
        throw ConfigError(Location{source, 0, 0}, fmt::format("distributedInfo.{}", key),
                          fmt::format("expected an integer >= 0; got {}", v->dump()));
      }
      return v->get<int>();
    };
    k.rank = integer("rank");
    k.world_size = integer("world_size");
    if (k.rank && k.world_size && *k.rank >= *k.world_size) {
      throw ConfigError(Location{source, 0, 0}, "distributedInfo.rank",
                        fmt::format("rank {} in a world of {}; expected a rank below world_size", *k.rank, *k.world_size));
    }
    if (const auto b = it->find("backend"); b != it->end() && b->is_string()) k.backend = b->get<std::string>();
  }
  if (const auto it = doc.find("deviceProperties"); it != doc.end() && it->is_array() && !it->empty()) {
    const json& d = it->front();
    if (d.is_object() && d.contains("name") && d["name"].is_string()) k.device = d["name"].get<std::string>();
  }
}

}  // namespace

ParsedTraceFile read_trace_file(const std::filesystem::path& file) {
  ParsedTraceFile out;
  out.kineto.file = file.string();
  TextInput in(file);
  Handler h(out);
  bool ok = false;
  try {
    ok = json::sax_parse(in.begin(), TextInput::end(), &h);
  } catch (const json::exception& e) {
    // A number beyond a double: nlohmann throws from inside the lexer. Its what() starts with
    // "[json.exception.out_of_range.406] ".
    std::string what = e.what();
    if (const auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos) what.erase(0, close + 2);
    throw ConfigError(in.location(), "", fmt::format("invalid JSON: {}", what));
  }
  if (!ok) throw ConfigError(in.location(), "", fmt::format("invalid JSON{}: {}", in.compressed() ? " (after gunzip)" : "", h.error()));
  read_distributed_info(out);
  return out;
}

}  // namespace shardsim::validate
