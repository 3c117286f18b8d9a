// nsys SQLite export -> RankTimeline (one per rank process in the file).
// Rules from docs/nsys-export-notes.md: select columns by name, any column may be NULL, any table
// may be missing (lazy export), rows come in no particular order, correlationId is unique only
// within a process, NVTX domains are per-process ids named by their create row.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <numeric>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "common/tasks.hpp"
#include "common/text.hpp"
#include "ranks/nsys_reader.hpp"
#include "ranks/cuda_api.hpp"
#include "gpu_identity.hpp"
#include "launch_env.hpp"
#include "nvtx_payload.hpp"
#include "sqlite_db.hpp"
#include "timeline_sort.hpp"

namespace ranks {
namespace {

using detail::col_or;
using detail::Database;
using detail::IdMap;
using detail::NcclPayload;
using detail::PayloadSchemas;
using detail::Statement;
using detail::StringIds;

constexpr const char* kFormat = "nsys-sqlite";

constexpr int64_t pid_of(int64_t global_id) { return (global_id >> 24) & 0xFFFFFF; }
constexpr int64_t tid_of(int64_t global_tid) { return global_tid & 0xFFFFFF; }
// A stream id as the timeline holds it (int32, never kNoStream): out-of-range ids of a damaged
// file saturate (they then share a stream; they can never pose as "no stream").
constexpr int32_t stream_id(int64_t raw) {
  return int32_t(std::clamp<int64_t>(raw, int64_t(kNoStream) + 1, INT32_MAX));
}

// Strings from someone else's machine: keep printable ASCII, bounded length.
std::string sanitize(std::string_view s, size_t max_len) { return common::ascii_only(s, max_len); }

// Rows dropped for breaking the time contract (timeline.hpp), per table: said once per file.
struct Dropped {
  int64_t kernels = 0, runtime = 0, nvtx = 0, copies = 0;
  int64_t total() const { return kernels + runtime + nvtx + copies; }
};

// Per-process reading state.
struct Proc {
  RankTimeline tl;
  IdMap name_of_sid;          // nsys string id -> interned id, for the ids this process uses
  std::vector<int64_t> corr;  // kernel correlation ids, parallel to kernels
  std::vector<std::pair<int64_t, int64_t>> device_counts;  // (device, kernels): a handful at most
  // The slot of the last row's device. No sentinel device value: every int64 is a possible
  // deviceId in a damaged file (INT64_MIN once read an empty vector: repro N1).
  size_t last_device_slot = 0;
  void count_device(int64_t d) {
    if (device_counts.empty() || device_counts[last_device_slot].first != d) {
      auto it = std::find_if(device_counts.begin(), device_counts.end(), [&](auto& x) { return x.first == d; });
      if (it == device_counts.end()) it = device_counts.insert(device_counts.end(), {d, 0});
      last_device_slot = size_t(it - device_counts.begin());
    }
    ++device_counts[last_device_slot].second;
  }
  int64_t corr_min = INT64_MAX, corr_max = INT64_MIN;  // over ids > 0 only: empty when min > max

  void reserve(size_t n) {
    auto& k = tl.kernels;
    reserve_big(k.start, n), reserve_big(k.end, n), reserve_big(k.stream, n), reserve_big(k.name, n);
    reserve_big(corr, n);
  }

  uint32_t name(const StringIds& sids, int64_t id) {
    if (id < 0) return tl.names.intern("<unknown>");
    uint32_t& n = name_of_sid.at(id);
    if (n == IdMap::kAbsent) {
      const std::string* t = sids.find(id);
      n = tl.names.intern(t ? std::string_view(*t) : std::string_view("<unknown>"));
    }
    return n;
  }
};

// An upper bound of a table's rows, to reserve once instead of regrowing: max(rowid), capped by
// what the file could hold (a hostile max(rowid) must not reserve gigabytes). 0 when unknown.
size_t row_bound(const Database& db, const std::string& table) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(db.path(), ec);
  try {
    Statement m(db.handle(), "SELECT max(rowid) FROM \"" + table + "\"", db.path());
    if (ec || !m.step() || m.null(0)) return 0;
    return size_t(std::clamp<int64_t>(m.i64(0), 0, int64_t(bytes / 16)));
  } catch (const ProfileError&) {  // WITHOUT ROWID table: no bound, reading it says more
    return 0;
  }
}

class Reader {
 public:
  explicit Reader(const std::string& path) : db_(path) {}

  std::vector<RankTimeline> run() {
    validate();
    read_metadata();
    StringIds sids(db_);
    RuntimeRows rt;
    std::exception_ptr rt_error;
    auto load = [&] {
      try {
        load_runtime(db_.path(), sids, rt);
      } catch (...) {
        rt_error = std::current_exception();
      }
    };
    // The runtime table on a second connection beside the kernels, where a second core is ours
    // (common::process_threads: the cores this process has to itself).
    std::optional<std::thread> loader;
    if (common::process_threads() >= 2) loader.emplace(load);
    else load();
    try {
      read_kernels(sids);
      read_nvtx(sids);
      read_copies();
    } catch (...) {
      if (loader) loader->join();
      throw;
    }
    if (loader) loader->join();
    if (rt_error) std::rethrow_exception(rt_error);
    dropped_.runtime = rt.dropped;
    apply_runtime(rt, sids);
    return finish();
  }

 private:
  Database db_;
  std::vector<Proc> procs_;
  std::string schema_, product_, host_;
  int64_t utc_epoch_ = 0;
  int64_t window_start_ = 0, window_stop_ = -1, window_length_ = -1;
  bool has_window_start_ = false, windowed_ = false;
  std::optional<int64_t> system_clock_;  // TARGET_INFO_SESSION_START_TIME.systemClockNs (2026.1+)
  size_t last_proc_ = 0;
  IdMap proc_index_;  // pid -> index in procs_
  Dropped dropped_;
  std::string utc_warning_;

  Proc* proc(int64_t pid) {
    if (last_proc_ < procs_.size() && procs_[last_proc_].tl.pid == pid) return &procs_[last_proc_];
    const uint32_t i = proc_index_.find(pid);  // kernels spread over thousands of pids stay linear
    return i == IdMap::kAbsent ? nullptr : &procs_[last_proc_ = i];
  }

  void validate() {
    if (!db_.has_table("StringIds") || (!db_.has_table("META_DATA_EXPORT") && !db_.has_table("EXPORT_META_DATA")))
      db_.fail("not an Nsight Systems SQLite export (no StringIds / META_DATA_EXPORT table)");
    if (!db_.has_table("CUPTI_ACTIVITY_KIND_KERNEL"))
      db_.fail("no CUPTI_ACTIVITY_KIND_KERNEL table: exported without CUDA trace (nsys profile -t cuda)");
    auto cols = db_.columns("CUPTI_ACTIVITY_KIND_KERNEL");
    for (const char* c : {"start", "end", "shortName"})
      if (!cols.count(c)) db_.fail(std::string("kernel table lacks column '") + c + "'");
  }

  void read_metadata() {
    const char* table = db_.has_table("META_DATA_EXPORT") ? "META_DATA_EXPORT" : "EXPORT_META_DATA";
    bool normalized = false;
    {
      Statement s(db_.handle(), std::string("SELECT name, value FROM ") + table, db_.path());
      while (s.step()) {
        auto name = s.text(0);
        if (name == "EXPORT_SCHEMA_VERSION") schema_ = sanitize(s.text(1), 32);
        else if (name == "EXPORT_PRODUCT_VERSION") product_ = sanitize(s.text(1), 32);
        else if (name == "EXPORT_PARAM_TIME_NORMALIZE") normalized = s.text(1) == "true";
        // An export cut to a time range keeps the session's ANALYSIS_DETAILS: the events end at
        // the cut, not when the session ended.
        else if (name == "EXPORT_PARAM_TIMES_TO_EXPORT" && !s.text(1).empty()) windowed_ = true;
        else if (name == "DERIVED_WINDOW_NS") windowed_ = true;
      }
    }
    // With --ts-normalize the timestamps already are UTC ns: do not add utcEpochNs again.
    if (!normalized && db_.has_table("TARGET_INFO_SESSION_START_TIME") &&
        db_.columns("TARGET_INFO_SESSION_START_TIME").count("utcEpochNs")) {
      Statement s(db_.handle(), "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", db_.path());
      if (s.step() && !s.null(0)) utc_epoch_ = s.i64(0);
      if (!in_time_range(utc_epoch_)) {  // the time contract: unknown rather than an overflow later
        utc_warning_ = "utcEpochNs " + std::to_string(utc_epoch_) + " is outside +-2^61 ns: wall clock unknown";
        utc_epoch_ = 0;
      }
    }
    // Capture window (docs/nsys-export-notes.md 2.7 and 5). Its end tells a rank that was still
    // recorded while stuck from one whose capture (process) ended; see capture_window_end().
    if (db_.has_table("ANALYSIS_DETAILS")) {
      auto cols = db_.columns("ANALYSIS_DETAILS");
      std::string sql = "SELECT " + col_or(cols, "startTime", "NULL") + ", " + col_or(cols, "stopTime", "NULL") +
                        ", " + col_or(cols, "duration", "NULL") + " FROM ANALYSIS_DETAILS LIMIT 1";
      Statement s(db_.handle(), sql, db_.path());
      // Values outside the time contract are taken as absent: the window end becomes capture_end.
      auto usable = [&](int c) { return !s.null(c) && in_time_range(s.i64(c)); };
      if (s.step()) {
        if (usable(0)) window_start_ = s.i64(0);
        if (usable(1)) window_stop_ = s.i64(1);
        if (usable(2)) window_length_ = s.i64(2);
        else if (usable(0) && usable(1)) window_length_ = window_stop_ - window_start_;
        has_window_start_ = usable(0);
      }
    }
    if (db_.has_table("TARGET_INFO_SESSION_START_TIME") &&
        db_.columns("TARGET_INFO_SESSION_START_TIME").count("systemClockNs")) {
      Statement s(db_.handle(), "SELECT systemClockNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", db_.path());
      if (s.step() && !s.null(0)) system_clock_ = s.i64(0);
    }
    // Only the Hostname row: other rows (DeviceEnvironment) hold the user's environment and secrets.
    if (db_.has_table("TARGET_INFO_SYSTEM_ENV")) {
      Statement s(db_.handle(), "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1",
                  db_.path());
      if (s.step()) host_ = sanitize(s.text(0), 255);
    }
  }

  void read_kernels(const StringIds& sids) {
    auto cols = db_.columns("CUPTI_ACTIVITY_KIND_KERNEL");
    std::string sql = "SELECT start, end, " + col_or(cols, "streamId", "0") + ", shortName, " +
                      col_or(cols, "correlationId", "NULL") + ", " + col_or(cols, "globalPid", "0") + ", " +
                      col_or(cols, "deviceId", "0") + " FROM CUPTI_ACTIVITY_KIND_KERNEL";
    const size_t expect = row_bound(db_, "CUPTI_ACTIVITY_KIND_KERNEL");
    Statement s(db_.handle(), sql, db_.path());
    while (s.step()) {
      int64_t start = s.i64(0), end = s.i64(1);
      if (!in_time_range(start)) {  // before the process: all dropped, no rank
        ++dropped_.kernels;
        continue;
      }
      // An end out of range or before the start (a clock glitch): the kernel ran, its duration is
      // unknown; sort_timeline repairs it and says so.
      if (!in_time_range(end) || end < start) end = kNoTime;
      const int64_t pid = pid_of(s.i64(5));
      Proc* p = proc(pid);
      if (!p) {
        proc_index_.at(pid) = uint32_t(procs_.size());
        procs_.emplace_back();
        p = &procs_.back();
        last_proc_ = procs_.size() - 1;
        p->tl.pid = pid;
        if (procs_.size() == 1) p->reserve(expect);
      }
      auto& k = p->tl.kernels;
      k.start.push_back(start);
      k.end.push_back(end);
      k.stream.push_back(stream_id(s.i64(2)));
      k.name.push_back(p->name(sids, s.i64(3)));
      const int64_t c = s.i64(4);  // CUPTI ids start at 1: NULL reads as 0, "none"
      p->corr.push_back(c);
      if (c > 0) {
        p->corr_min = std::min(p->corr_min, c);
        p->corr_max = std::max(p->corr_max, c);
      }
      p->count_device(s.i64(6));
    }
    if (procs_.empty())
      db_.fail(dropped_.kernels ? "no usable kernel: all " + std::to_string(dropped_.kernels) +
                                      " kernel rows have times outside +-2^61 ns"
                                : std::string("kernel table is empty: no GPU kernel was captured"));
    for (auto& p : procs_) {
      auto& k = p.tl.kernels;
      // Sorted now, before the columns that apply_runtime fills by index exist: fewer to permute.
      if (auto idx = order_by_start(k.start, k.end); !idx.empty()) {
        std::vector<int64_t> scratch;
        permute(k.start, idx, scratch), permute(k.end, idx, scratch), permute(p.corr, idx, scratch);
        permute(k.stream, idx), permute(k.name, idx);
      }
      reserve_big(k.launch, k.size()), reserve_big(k.launch_tid, k.size()), reserve_big(k.launch_dur, k.size());
      k.launch.assign(k.size(), kNoTime);
      k.launch_tid.assign(k.size(), 0);
      k.launch_dur.assign(k.size(), 0);
    }
  }

  void read_nvtx(const StringIds& sids) {
    if (!db_.has_table("NVTX_EVENTS")) return;
    auto cols = db_.columns("NVTX_EVENTS");
    std::string sql = "SELECT start, " + col_or(cols, "end", "NULL") + ", eventType, " + col_or(cols, "text", "NULL") +
                      ", " + col_or(cols, "textId", "NULL") + ", " + col_or(cols, "domainId", "0") + ", " +
                      col_or(cols, "globalTid", "0") + ", " + col_or(cols, "binaryData", "NULL") + " FROM NVTX_EVENTS";
    Statement s(db_.handle(), sql, db_.path());
    const PayloadSchemas schemas(db_);  // NCCL's payloads, where the export included them
    struct Pending {
      int64_t start, end, gtid, domain;
      uint32_t name;
      std::optional<NcclPayload> payload;
    };
    std::vector<std::vector<Pending>> pending(procs_.size());
    std::unordered_map<int64_t, std::string> domain_names;  // (pid << 32 | domainId) -> name
    while (s.step()) {
      const int64_t type = s.i64(2), gtid = s.i64(6), domain = s.i64(5);
      if (type == 75) {  // NvtxDomainCreate: text is the domain name
        domain_names[(pid_of(gtid) << 32) | (domain & 0xffffffff)] = std::string(s.text(3));
        continue;
      }
      if ((type != 59 && type != 60) || s.null(1)) continue;  // complete push/pop and start/end ranges
      Proc* p = proc(pid_of(gtid));
      if (!p) continue;  // a process without kernels is not a rank
      int64_t start = s.i64(0), end = s.i64(1);
      if (end < start) continue;
      if (!in_time_range(start) || !in_time_range(end)) {
        ++dropped_.nvtx;
        continue;
      }
      uint32_t name = s.null(3) ? p->name(sids, s.null(4) ? -1 : s.i64(4)) : p->tl.names.intern(s.text(3));
      std::optional<NcclPayload> payload;
      if (!schemas.empty() && !s.null(7)) payload = schemas.decode(s.blob(7));
      pending[size_t(p - procs_.data())].push_back({start, end, gtid, domain, name, payload});
    }
    for (size_t i = 0; i < procs_.size(); ++i) {
      auto& p = procs_[i];
      for (const auto& r : pending[i]) {
        // Time-window cuts drop the create rows: a non-default domain may have no name.
        auto it = domain_names.find((p.tl.pid << 32) | (r.domain & 0xffffffff));
        const uint32_t domain = it != domain_names.end() ? p.tl.names.intern(it->second)
                                : r.domain != 0          ? kUnnamedDomain
                                                         : kNoName;
        auto& n = p.tl.nvtx;
        n.start.push_back(r.start);
        n.end.push_back(r.end);
        n.name.push_back(r.name);
        n.domain.push_back(domain);
        n.tid.push_back(uint32_t(tid_of(r.gtid)));
      }
      add_payloads(p.tl.nvtx, pending[i]);
    }
  }

  // The payload columns, only for a process with some payload (NvtxColumns).
  template <class Pending>
  static void add_payloads(NvtxColumns& n, const std::vector<Pending>& rows) {
    if (std::none_of(rows.begin(), rows.end(), [](const Pending& r) { return r.payload.has_value(); })) return;
    for (const auto& r : rows) {
      const NcclPayload p = r.payload.value_or(NcclPayload{});
      n.payload_bytes.push_back(p.bytes), n.payload_comm.push_back(p.comm), n.payload_peer.push_back(p.peer);
    }
  }

  // Runtime rows that matter, as read by the loader thread: launches compactly (they number as
  // many as kernels), the few syncs and synchronous copies with their names.
  struct RuntimeRows {
    std::vector<int64_t> start, corr, gtid;  // launches; corr 0 when NULL (CUPTI ids start at 1)
    std::vector<uint32_t> dur;               // launch call durations (a launch takes microseconds)
    std::vector<int64_t> sid;                // launch call names (StringIds)
    std::vector<int64_t> other_start, other_end, other_gtid;
    std::vector<int64_t> other_sid;
    std::vector<ApiKind> other_kind;
    int64_t dropped = 0;                     // rows with times outside the contract
  };

  // Runs on its own thread and connection, while the main thread reads kernels: the two big
  // tables are scanned in parallel. Touches nothing shared but the (read-only) StringIds.
  static void load_runtime(const std::string& path, const StringIds& sids, RuntimeRows& out) {
    Database db(path);
    if (!db.has_table("CUPTI_ACTIVITY_KIND_RUNTIME")) return;
    auto cols = db.columns("CUPTI_ACTIVITY_KIND_RUNTIME");
    if (!cols.count("nameId")) return;
    IdMap kind_of_sid;  // nameId -> ApiKind
    std::string sql = "SELECT start, end, " + col_or(cols, "globalTid", "0") + ", " +
                      col_or(cols, "correlationId", "NULL") + ", nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME";
    const size_t expect = row_bound(db, "CUPTI_ACTIVITY_KIND_RUNTIME");
    reserve_big(out.start, expect), reserve_big(out.dur, expect), reserve_big(out.gtid, expect);
    reserve_big(out.corr, expect), reserve_big(out.sid, expect);
    Statement s(db.handle(), sql, db.path());
    while (s.step()) {
      const int64_t sid = s.i64(4);
      if (sid < 0) continue;
      uint32_t& k = kind_of_sid.at(sid);
      if (k == IdMap::kAbsent) k = uint32_t(classify_cuda_api(sids.get(sid)));  // unknown id: Other
      if (ApiKind(k) == ApiKind::Other) continue;
      const int64_t start = s.i64(0), end = std::max(s.i64(1), start);
      if (!in_time_range(start) || !in_time_range(end)) {
        ++out.dropped;
        continue;
      }
      if (ApiKind(k) == ApiKind::Launch) {
        out.start.push_back(start);
        out.dur.push_back(uint32_t(std::min<int64_t>(end - start, UINT32_MAX)));
        out.gtid.push_back(s.i64(2));
        out.corr.push_back(s.i64(3));  // NULL reads as 0
        out.sid.push_back(sid);
      } else {
        out.other_start.push_back(start);
        out.other_end.push_back(end);
        out.other_gtid.push_back(s.i64(2));
        out.other_sid.push_back(sid);
        out.other_kind.push_back(ApiKind(k));
      }
    }
  }

  void apply_runtime(RuntimeRows& rt, const StringIds& sids) {
    // Kernel index per correlation id: dense over each process's kernel correlation range.
    std::vector<std::vector<int32_t>> kernel_at(procs_.size());
    std::vector<std::unordered_map<int64_t, int32_t>> sparse(procs_.size());
    for (size_t i = 0; i < procs_.size(); ++i) {
      auto& p = procs_[i];
      const bool dense = p.corr_max >= p.corr_min && p.corr_max - p.corr_min < int64_t(8 * p.corr.size() + 1024);
      if (dense) reserve_big(kernel_at[i], size_t(p.corr_max - p.corr_min + 1)), kernel_at[i].assign(size_t(p.corr_max - p.corr_min + 1), -1);
      for (size_t k = 0; k < p.corr.size(); ++k) {
        if (p.corr[k] <= 0) continue;
        if (dense) kernel_at[i][size_t(p.corr[k] - p.corr_min)] = int32_t(k);
        else sparse[i][p.corr[k]] = int32_t(k);
      }
      p.corr = {};
    }
    // The launch call of each kernel name, remembered by StringIds id so that the common case (the
    // same call as last time) costs no interning.
    std::vector<std::vector<int64_t>> last_call_sid(procs_.size());
    for (size_t i = 0; i < procs_.size(); ++i) last_call_sid[i].assign(procs_[i].tl.names.size(), INT64_MIN);
    for (size_t row = 0; row < rt.start.size(); ++row) {
      const int64_t gtid = rt.gtid[row];
      Proc* p = proc(pid_of(gtid));
      if (!p) continue;
      const size_t pi = size_t(p - procs_.data());
      const int64_t start = rt.start[row], c = rt.corr[row];
      ++p->tl.launches_total;
      if (c <= 0) continue;  // no correlation (NULL, or an id CUPTI never issues): nothing to link
      int32_t k = -1;
      if (!kernel_at[pi].empty()) {
        if (c >= p->corr_min && c <= p->corr_max) k = kernel_at[pi][size_t(c - p->corr_min)];
      } else if (auto it = sparse[pi].find(c); it != sparse[pi].end()) {
        k = it->second;
      }
      if (k < 0) {  // no kernel record: the kernel never completed in the capture
        p->tl.unmatched_launches.push_back(
            {start, start + rt.dur[row], uint32_t(tid_of(gtid)), p->name(sids, rt.sid[row])});
        continue;
      }
      auto& kc = p->tl.kernels;
      if (kc.launch[size_t(k)] == start && kc.launch_tid[size_t(k)] == uint32_t(tid_of(gtid))) {
        --p->tl.launches_total, ++p->tl.duplicate_launches;  // the same call twice: a row recorded twice
        continue;
      }
      kc.launch[size_t(k)] = start, kc.launch_tid[size_t(k)] = uint32_t(tid_of(gtid)), kc.launch_dur[size_t(k)] = rt.dur[row];
      int64_t& last = last_call_sid[pi][kc.name[size_t(k)]];
      if (last != rt.sid[row]) {
        last = rt.sid[row];
        const std::pair<uint32_t, uint32_t> pair{kc.name[size_t(k)], p->name(sids, rt.sid[row])};
        auto& calls = p->tl.launch_calls;
        if (std::find(calls.begin(), calls.end(), pair) == calls.end()) calls.push_back(pair);
      }
    }
    for (auto& p : procs_) {  // rows come in no order
      auto& u = p.tl.unmatched_launches;
      std::sort(u.begin(), u.end(), [](const auto& a, const auto& b) { return std::tie(a.start, a.tid) < std::tie(b.start, b.tid); });
    }
    for (size_t row = 0; row < rt.other_start.size(); ++row) {
      Proc* p = proc(pid_of(rt.other_gtid[row]));
      if (!p) continue;
      auto& a = p->tl.api;
      a.start.push_back(rt.other_start[row]);
      a.end.push_back(rt.other_end[row]);
      a.name.push_back(p->name(sids, rt.other_sid[row]));
      a.kind.push_back(rt.other_kind[row]);
    }
    rt = RuntimeRows();
  }

  void read_copy_table(const char* table, bool memset) {
    if (!db_.has_table(table)) return;
    auto cols = db_.columns(table);
    std::string sql = "SELECT start, end, " + col_or(cols, "bytes", "0") + ", " +
                      (memset ? std::string("100") : col_or(cols, "copyKind", "255")) + ", " +
                      col_or(cols, "streamId", "0") + ", " + col_or(cols, "globalPid", "0") + " FROM " + table;
    Statement s(db_.handle(), sql, db_.path());
    while (s.step()) {
      Proc* p = proc(pid_of(s.i64(5)));
      if (!p) continue;
      auto& c = p->tl.copies;
      const int64_t start = s.i64(0), end = std::max(s.i64(1), start);
      if (!in_time_range(start) || !in_time_range(end)) {
        ++dropped_.copies;
        continue;
      }
      c.start.push_back(start);
      c.end.push_back(end);
      c.bytes.push_back(std::max<int64_t>(0, s.i64(2)));
      int64_t kind = s.i64(3);
      c.kind.push_back(kind == 1 || kind == 2 || kind == 8 || kind == 10 || kind == 100 ? CopyKind(kind)
                                                                                       : CopyKind::Other);
      c.stream.push_back(stream_id(s.i64(4)));
    }
  }

  void read_copies() {
    read_copy_table("CUPTI_ACTIVITY_KIND_MEMCPY", false);
    read_copy_table("CUPTI_ACTIVITY_KIND_MEMSET", true);
  }

  // End of the capture on the events' timebase, or INT64_MIN when unknown. Before 2026.x startTime
  // and stopTime are on it (report-relative, startTime ~0.2 s). 2026.x writes startTime =
  // systemClockNs (the raw system clock, e.g. days of uptime) while the events stay
  // capture-relative (nsysai_mock_1gpu: startTime 5.2e14, events 1.3-1.5e9, duration 1.87e9):
  // there only `duration` holds; taking t = 0 as the capture start gives its earliest possible
  // end. A window that ends before the last event is on no timebase we know (e.g. --ts-normalize
  // exports): unused.
  // The latest start of any row: a bad duration moves ends, never starts.
  static int64_t latest_start(const RankTimeline& tl) {
    int64_t t = INT64_MIN;
    for (const auto* s : {&tl.kernels.start, &tl.copies.start, &tl.api.start, &tl.nvtx.start})
      for (int64_t v : *s) t = std::max(t, v);
    return t;
  }

  int64_t capture_window_end(int64_t last_event) const {
    int64_t end = INT64_MIN;
    const bool system_clock_start = has_window_start_ && system_clock_ && *system_clock_ == window_start_;
    if (has_window_start_ && window_stop_ >= window_start_ && !system_clock_start && window_start_ <= last_event)
      end = window_stop_;
    else if (window_length_ > 0)
      end = window_length_;
    return end >= last_event ? end : INT64_MIN;
  }

  std::vector<RankTimeline> finish() {
    std::vector<RankTimeline> out;
    const detail::GpuIdentities gpus(db_);
    // The launcher's rank of the process nsys started: names a one-process file's rank
    // (rank_assignment.hpp (d)); a file of several processes holds the launcher's environment.
    const detail::LaunchRank launched = detail::launch_rank(db_);
    for (auto& p : procs_) {
      auto& tl = p.tl;
      tl.file = db_.path();
      tl.host = host_;
      tl.source = {kFormat, product_, schema_};
      tl.utc_epoch_ns = utc_epoch_;
      auto dev = std::max_element(p.device_counts.begin(), p.device_counts.end(),
                                  [](auto& a, auto& b) { return a.second < b.second || (a.second == b.second && a.first > b.first); });
      // Device ids outside int are no CUDA ordinal: unknown (-1), said once.
      tl.device = dev->first >= 0 && dev->first <= INT32_MAX ? int(dev->first) : -1;
      tl.gpu_name = gpus.name_of(tl.device);
      tl.gpu_bus = gpus.bus_of(tl.pid, tl.device);
      if (procs_.size() == 1) {
        tl.claimed_rank = launched.rank, tl.claimed_world = launched.world;
        if (tl.device >= 0 && size_t(tl.device) < launched.visible.size()) tl.host_gpu = launched.visible[size_t(tl.device)];
      }
      if (tl.device < 0)
        tl.warnings.push_back("process " + std::to_string(tl.pid) + " ran its kernels on device id " +
                              std::to_string(dev->first) + ", which is no CUDA device ordinal: device unknown");
      if (p.device_counts.size() > 1)
        tl.warnings.push_back("process " + std::to_string(tl.pid) + " ran kernels on " +
                              std::to_string(p.device_counts.size()) + " devices; using device " +
                              std::to_string(tl.device));
      tl.unusable = sort_timeline(tl, capture_window_end(latest_start(tl)));
      if (!tl.unusable.empty() && procs_.size() == 1) throw ProfileError(common::printable(db_.path()) + ": " + tl.unusable);
      // A rank that stopped working (hang) was still being recorded until the session ended.
      if (!windowed_) tl.capture_end = std::max(tl.capture_end, capture_window_end(tl.capture_end));
      out.push_back(std::move(tl));
    }
    std::sort(out.begin(), out.end(),
              [](const RankTimeline& a, const RankTimeline& b) { return std::tie(a.device, a.pid) < std::tie(b.device, b.pid); });
    // Said once per file (the caller prints each timeline's warnings).
    auto& w = out.front().warnings;
    if (!utc_warning_.empty()) w.insert(w.begin(), utc_warning_);
    if (const auto& d = dropped_; d.total() > 0)
      w.insert(w.begin(), std::to_string(d.total()) + " rows with times outside +-2^61 ns dropped (kernels " +
                              std::to_string(d.kernels) + ", runtime " + std::to_string(d.runtime) + ", NVTX " +
                              std::to_string(d.nvtx) + ", copies " + std::to_string(d.copies) + ")");
    return out;
  }
};

}  // namespace

std::vector<RankTimeline> read_nsys(const std::string& path) { return Reader(path).run(); }

}  // namespace ranks

namespace ranks {
ProfileFormat nsys_sqlite_format() {
  ProfileFormat f;
  f.name = kFormat;
  f.extensions = {".sqlite"};
  const std::string hint = "a report, not its SQLite export: run `nsys export --type sqlite --output NAME.sqlite "
                           "NAME.nsys-rep` and give the .sqlite";
  f.convert_first = {{".nsys-rep", hint}, {".qdrep", hint}};
  // Every SQLite database starts with this header; which tables it holds the reader checks.
  f.sniff = [](std::string_view head) { return head.substr(0, 16) == std::string_view("SQLite format 3\0", 16); };
  f.read = read_nsys;
  return f;
}
}  // namespace ranks
