// PyTorch profiler (Kineto) traces: one process per file. Each trace event is parsed on its own
// (simdjson On-Demand over the view json_stream.hpp hands over), so memory follows the timeline,
// not the file. What is relied on, and where it is promised or observed (docs/kineto.md):
//  * complete events (ph "X") with `ts`/`dur` in microseconds (Chrome trace format); GPU activities
//    by `cat`: kernel, gpu_memcpy, gpu_memset; CUDA calls: cuda_runtime, cuda_driver; ranges on the
//    CPU thread: user_annotation (ProfilerStep#N), PyTorch's "nccl:*" ranges;
//  * `args.correlation` links a kernel to the CUDA call that launched it (CUPTI's correlation id);
//  * the time base: `baseTimeNanoseconds` + ts (2024 files), else ts is Unix-epoch microseconds;
//  * the rank: `distributedInfo.rank` (torch.distributed writes it when the profiler starts).
// Nothing relies on event order, stream or device numbering, pids or tids being numbers.
#include "ranks/kineto_reader.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "common/text.hpp"
#include "json_stream.hpp"
#include "kineto_event.hpp"
#include "ranks/cuda_api.hpp"
#include "ranks/input_stream.hpp"
#include "timeline_sort.hpp"

namespace ranks {
namespace {

using detail::KinetoArgs;
using detail::KinetoEvent;
constexpr const char* kFormat = "kineto-json";

struct Launch {
  int64_t start, corr;
  uint32_t dur, tid, call;
};

// Which kind of row an event makes, from its category (older traces capitalise: "Kernel").
bool iequals(std::string_view a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

enum class Row { None, Kernel, Memcpy, Memset, Api, Range, Capture };
Row row_of(std::string_view cat, std::string_view name) {
  auto eq = [&](const char* a) { return iequals(cat, a); };
  if (eq("kernel")) return Row::Kernel;
  if (eq("gpu_memcpy") || eq("memcpy")) return Row::Memcpy;
  if (eq("gpu_memset") || eq("memset")) return Row::Memset;
  if (eq("cuda_runtime") || eq("cuda_driver") || eq("runtime") || eq("driver")) return Row::Api;
  if (eq("user_annotation")) return Row::Range;
  if (eq("cpu_op") && name.substr(0, 5) == "nccl:") return Row::Range;  // PyTorch's collective ranges
  if (eq("trace")) return Row::Capture;
  return Row::None;
}

CopyKind copy_kind(std::string_view name) {
  if (name.find("HtoD") != std::string_view::npos) return CopyKind::HtoD;
  if (name.find("DtoH") != std::string_view::npos) return CopyKind::DtoH;
  if (name.find("DtoD") != std::string_view::npos) return CopyKind::DtoD;
  if (name.find("PtoP") != std::string_view::npos) return CopyKind::PtoP;
  return CopyKind::Other;
}

// The host, where the file keeps tensorboard_trace_handler's default name
// "<hostname>_<pid>.<ms>.pt.trace.json" (PyTorch docs: worker_name defaults to
// "{socket.gethostname()}_{os.getpid()}"): a trace holds no host name of its own. Taken only when the
// pid in the name is the trace's own, so that other names ending in a number are not misread.
std::string host_from_name(const std::string& path, int64_t pid) {
  std::string n = std::filesystem::path(path).filename().string();
  for (const char* ext : {".gz", ".json", ".pt.trace"})
    if (n.size() > std::strlen(ext) && n.ends_with(ext)) n.resize(n.size() - std::strlen(ext));
  size_t dot = n.rfind('.');
  if (dot != std::string::npos && dot + 1 < n.size() &&
      n.find_first_not_of("0123456789", dot + 1) == std::string::npos)
    n.resize(dot);  // the timestamp
  const size_t us = n.rfind('_');
  if (us == std::string::npos || us == 0 || us + 1 == n.size() || n.size() - us > 12 ||
      n.find_first_not_of("0123456789", us + 1) != std::string::npos || pid < 0 || std::stoll(n.substr(us + 1)) != pid)
    return "";
  return common::ascii_only(n.substr(0, us), 128);
}

int32_t stream_id(int64_t raw) { return int32_t(std::clamp<int64_t>(raw, int64_t(kNoStream) + 1, INT32_MAX)); }

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  std::vector<RankTimeline> run() {
    InputStream in(path_);
    detail::JsonStreamCallbacks cb;
    cb.array_key = "traceEvents";
    cb.want = [](std::string_view k) {
      return k == "distributedInfo" || k == "baseTimeNanoseconds" || k == "deviceProperties" || k == "schemaVersion";
    };
    cb.member = [&](std::string_view k, std::string_view raw) { member(k, raw); };
    cb.element = [&](std::string_view e) { event(e); };
    const auto counts = detail::stream_json_object(in, cb);
    if (!counts.saw_array) fail("no \"traceEvents\" array: not a PyTorch profiler trace");
    skipped_ += counts.skipped_elements;
    for (const auto& k : counts.skipped_members)  // K4: never lost without a word
      warnings_.push_back("the top-level member \"" + common::ascii_only(k, 64) +
                          "\" is over 64 MB: skipped (the rank, time base or GPU names it holds are unknown)");
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw ProfileError(common::printable(path_) + ": " + what); }

  void member(std::string_view key, std::string_view raw) {
    detail::KinetoHeader h;
    if (!detail::parse_header_member(parser_, key, raw, h)) {
      warnings_.push_back("the top-level member \"" + std::string(key) + "\" is not what the PyTorch profiler writes; ignored");
      return;
    }
    if (h.rank) claimed_rank_ = *h.rank;
    if (h.world) claimed_world_ = *h.world;
    if (h.base_ns) base_ns_ = *h.base_ns;
    if (h.schema) schema_ = *h.schema;
    for (auto& [id, name] : h.gpus) gpus_[id] = name;
  }

  // Times relative to the first event's (ts values can be 16-digit epoch microseconds).
  bool relative(int64_t t, int64_t& out) {
    if (!in_time_range(t)) return false;
    if (!have_origin_) origin_ = t, have_origin_ = true;
    out = t - origin_;
    return in_time_range(out);
  }

  void event(std::string_view text) {
    KinetoEvent e;
    if (!detail::parse_event(parser_, text, e)) {
      ++malformed_;
      return;
    }
    if (e.ph != "X") return;
    const Row row = row_of(e.cat, e.name);
    if (row == Row::None) return;
    int64_t start = 0, end = 0;
    if (!e.has_ts || !relative(e.ts, start)) {
      ++dropped_;
      return;
    }
    end = start + std::max<int64_t>(e.dur, 0);
    // A kernel's duration missing, negative, not a number or beyond the time range: its end is
    // unknown, for sort_timeline to repair and say (a kernel ran; dropping it would hide work).
    if (row == Row::Kernel && (!e.has_dur || e.dur < 0 || !in_time_range(end))) end = kNoTime;
    else if (!in_time_range(end)) {
      ++dropped_;
      return;
    }
    switch (row) {
      case Row::Kernel: return kernel(e, start, end);
      case Row::Memcpy:
      case Row::Memset: return copy(e, row, start, end);
      case Row::Api: return api(e, start, end);
      case Row::Range: return range(e, start, end);
      case Row::Capture: capture_end_ = std::max(capture_end_, end); return;
      case Row::None: return;
    }
  }

  void kernel(const KinetoEvent& e, int64_t start, int64_t end) {
    auto& k = tl_.kernels;
    k.start.push_back(start), k.end.push_back(end);
    k.stream.push_back(stream_id(e.args.stream.value_or(e.tid_int ? e.tid : 0)));
    k.name.push_back(tl_.names.intern(e.name));
    corr_.push_back(e.args.correlation.value_or(0));
    ++devices_[e.args.device.value_or(e.pid_int ? e.pid : -1)];
    const detail::CollectiveMeta m = detail::collective_meta(e.args);
    any_meta_ = any_meta_ || m.present;
    k.meta_call.push_back(m.call.empty() ? kNoName : tl_.names.intern(m.call));
    k.meta_bytes.push_back(m.bytes);
    k.meta_comm.push_back(m.comm);
  }

  void copy(const KinetoEvent& e, Row row, int64_t start, int64_t end) {
    auto& c = tl_.copies;
    c.start.push_back(start), c.end.push_back(end);
    c.bytes.push_back(std::max<int64_t>(0, e.args.bytes.value_or(0)));
    c.stream.push_back(stream_id(e.args.stream.value_or(e.tid_int ? e.tid : 0)));
    c.kind.push_back(row == Row::Memset ? CopyKind::Memset : copy_kind(e.name));
  }

  void api(const KinetoEvent& e, int64_t start, int64_t end) {
    if (e.pid_int) ++pids_[e.pid];
    const ApiKind kind = classify_cuda_api(e.name);
    if (kind == ApiKind::Other) return;
    const uint32_t name = tl_.names.intern(e.name);
    if (kind == ApiKind::Launch) {
      ++tl_.launches_total;
      launches_.push_back({start, e.args.correlation.value_or(0),
                           uint32_t(std::min<int64_t>(end - start, UINT32_MAX)), tid_of(e), name});
      return;
    }
    auto& a = tl_.api;
    a.start.push_back(start), a.end.push_back(end), a.name.push_back(name), a.kind.push_back(kind);
  }

  void range(const KinetoEvent& e, int64_t start, int64_t end) {
    auto& n = tl_.nvtx;
    n.start.push_back(start), n.end.push_back(end);
    n.name.push_back(tl_.names.intern(e.name));
    n.domain.push_back(kNoName);
    n.tid.push_back(tid_of(e));
    const int64_t bytes = detail::range_bytes(e.args);
    any_payload_ = any_payload_ || bytes >= 0;
    n.payload_bytes.push_back(bytes), n.payload_comm.push_back(0), n.payload_peer.push_back(-1);
  }

  static uint32_t tid_of(const KinetoEvent& e) { return e.tid_int ? uint32_t(uint64_t(e.tid)) : 0; }

  // Each launch call to the kernels with its correlation id (a graph launch has several).
  void link_launches() {
    auto& k = tl_.kernels;
    const size_t n = k.size();
    k.launch.assign(n, kNoTime), k.launch_tid.assign(n, 0), k.launch_dur.assign(n, 0);
    std::vector<std::pair<int64_t, uint32_t>> by_corr;
    by_corr.reserve(n);
    for (size_t i = 0; i < n; ++i)
      if (corr_[i] > 0) by_corr.push_back({corr_[i], uint32_t(i)});
    std::sort(by_corr.begin(), by_corr.end());
    std::sort(launches_.begin(), launches_.end(), [](const Launch& a, const Launch& b) {
      return std::tie(a.start, a.tid, a.corr) < std::tie(b.start, b.tid, b.corr);
    });
    // A call recorded twice (a trace merged twice) is one call: adjacent once sorted.
    const size_t before = launches_.size();
    launches_.erase(std::unique(launches_.begin(), launches_.end(),
                                [](const Launch& a, const Launch& b) {
                                  return a.start == b.start && a.tid == b.tid && a.corr == b.corr && a.dur == b.dur &&
                                         a.call == b.call;
                                }),
                    launches_.end());
    const size_t dup = before - launches_.size();
    tl_.launches_total -= int64_t(dup), tl_.duplicate_launches += int64_t(dup);
    for (const Launch& l : launches_) {
      auto it = std::lower_bound(by_corr.begin(), by_corr.end(), std::make_pair(l.corr, uint32_t(0)));
      if (l.corr <= 0 || it == by_corr.end() || it->first != l.corr) {
        if (l.corr > 0) tl_.unmatched_launches.push_back({l.start, l.start + l.dur, l.tid, l.call});
        continue;
      }
      for (; it != by_corr.end() && it->first == l.corr; ++it) {
        const size_t i = it->second;
        k.launch[i] = l.start, k.launch_tid[i] = l.tid, k.launch_dur[i] = l.dur;
        const std::pair<uint32_t, uint32_t> pair{k.name[i], l.call};
        auto& calls = tl_.launch_calls;
        if (std::find(calls.begin(), calls.end(), pair) == calls.end()) calls.push_back(pair);
      }
    }
    launches_ = {}, corr_ = {};
  }

  template <class Map>
  static int64_t most_common(const Map& m, int64_t none) {
    int64_t best = none, count = 0;
    for (const auto& [v, c] : m)
      if (c > count || (c == count && v < best)) best = v, count = c;
    return best;
  }

  std::vector<RankTimeline> finish() {
    if (tl_.kernels.size() == 0)
      fail(malformed_ || dropped_ ? "no usable GPU kernel event (" + std::to_string(malformed_) + " malformed, " +
                                        std::to_string(dropped_) + " with unusable times)"
                                  : std::string("no GPU kernel in the trace (a CPU-only profile, or the profiler ran "
                                                "without ProfilerActivity.CUDA)"));
    link_launches();
    if (!any_meta_) tl_.kernels.meta_call = {}, tl_.kernels.meta_bytes = {}, tl_.kernels.meta_comm = {};
    if (!any_payload_) tl_.nvtx.payload_bytes = {}, tl_.nvtx.payload_comm = {}, tl_.nvtx.payload_peer = {};
    tl_.file = path_;
    tl_.source = {kFormat, "", schema_};
    tl_.claimed_rank = claimed_rank_, tl_.claimed_world = claimed_world_;
    tl_.pid = most_common(pids_, -1);
    tl_.host = host_from_name(path_, tl_.pid);
    const int64_t dev = most_common(devices_, -1);
    tl_.device = dev >= 0 && dev <= INT32_MAX ? int(dev) : -1;
    if (auto g = gpus_.find(dev); g != gpus_.end()) tl_.gpu_name = g->second;
    if (devices_.size() > 1)
      tl_.warnings.push_back("kernels on " + std::to_string(devices_.size()) + " devices; using device " +
                             std::to_string(tl_.device));
    epoch();
    // The profiler's own span, when the trace has it (else kNoTime).
    if (const std::string why = sort_timeline(tl_, capture_end_); !why.empty()) fail(why);
    if (capture_end_ > tl_.capture_end) tl_.capture_end = capture_end_;  // the profiler's own span
    if (dropped_)
      tl_.warnings.push_back(std::to_string(dropped_) + " events without a usable time (ts missing, not a number, or beyond +-2^61 ns) dropped");
    if (malformed_) tl_.warnings.push_back(std::to_string(malformed_) + " malformed trace events skipped");
    if (skipped_) tl_.warnings.push_back(std::to_string(skipped_) + " trace events over 64 MB skipped");
    for (auto& w : warnings_) tl_.warnings.push_back(std::move(w));
    std::vector<RankTimeline> out;
    out.push_back(std::move(tl_));
    return out;
  }

  // Wall clock at t = 0: baseTimeNanoseconds + the first event's ts, or that ts alone (Unix-epoch
  // microseconds) without a base.
  void epoch() {
    const int64_t base = base_ns_.value_or(0);
    if (in_time_range(base) && in_time_range(base + origin_)) {
      tl_.utc_epoch_ns = base + origin_;
    } else {
      tl_.utc_epoch_ns = 0;
      tl_.warnings.push_back("baseTimeNanoseconds " + std::to_string(base) + " is beyond +-2^61 ns: wall clock unknown");
    }
  }

  std::string path_;
  simdjson::ondemand::parser parser_;
  RankTimeline tl_;
  std::vector<int64_t> corr_;  // parallel to the kernels
  std::vector<Launch> launches_;
  std::unordered_map<int64_t, int64_t> pids_, devices_;
  std::unordered_map<int64_t, std::string> gpus_;
  std::optional<int64_t> base_ns_;
  std::string schema_;
  int claimed_rank_ = -1, claimed_world_ = -1;
  int64_t origin_ = 0, capture_end_ = INT64_MIN;
  bool have_origin_ = false, any_meta_ = false, any_payload_ = false;
  size_t malformed_ = 0, dropped_ = 0, skipped_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace

std::vector<RankTimeline> read_kineto(const std::string& path) { return Reader(path).run(); }

ProfileFormat kineto_json_format() {
  ProfileFormat f;
  f.name = kFormat;
  f.extensions = {".json", ".json.gz"};
  f.reads_compressed = true;
  f.shared_extension = true;
  // tensorboard_trace_handler names every trace <worker>.<ms>.pt.trace.json[.gz] (PyTorch docs).
  f.own_suffixes = {".pt.trace.json", ".pt.trace.json.gz"};
  // A JSON object whose first member is one the PyTorch profiler writes first (schemaVersion in
  // every trace since 2021; older ones and trimmed ones start with another of its members).
  f.sniff = [](std::string_view head) {
    size_t i = head.find_first_not_of(" \t\r\n");
    if (head.substr(0, 3) == "\xEF\xBB\xBF") i = head.find_first_not_of(" \t\r\n", 3);
    if (i == std::string_view::npos || head[i] != '{') return false;
    i = head.find_first_not_of(" \t\r\n", i + 1);
    if (i == std::string_view::npos || head[i] != '"') return false;
    const std::string_view rest = head.substr(i + 1);
    for (const char* k : {"schemaVersion\"", "traceEvents\"", "deviceProperties\"", "distributedInfo\"",
                          "record_shapes\"", "traceName\"", "displayTimeUnit\"", "baseTimeNanoseconds\""})
      if (rest.substr(0, std::strlen(k)) == k) return true;
    return false;
  };
  f.read = read_kineto;
  return f;
}

}  // namespace ranks
