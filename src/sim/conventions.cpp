#include "conventions.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nsys_writer.hpp"
#include "rng.hpp"

namespace sim {
namespace {

const char* const kSlotNames[kStreamSlots] = {"compute", "tp", "pp_prev", "dp", "pp_next", "pp_prev_send", "pp_next_recv"};

}  // namespace

uint64_t conventions_seed(const Options& o) { return o.conventions_seed ? *o.conventions_seed : o.seed; }

void resolve_conventions(Options& o) {
  if (!o.random_conventions) return;
  Rng R(hash4(conventions_seed(o), 0xC0417, 1, 0));
  // Draw every choice even when pinned, so pinning one leaves the others as they were.
  const int gph = R.coin() ? 4 : 8;
  const bool v30 = R.coin(0.3), per_host = R.coin(), domain = R.coin();
  const int world = o.layout.world();
  if (!o.pinned.hosts) {
    int max_host = 0;  // slow_link faults name hosts: keep them on the job
    for (const Fault& f : o.faults)
      if (f.kind == FaultKind::SlowLink) max_host = std::max({max_host, f.host_a, f.host_b});
    for (int g : {gph, 12 - gph})  // the drawn size, else the other one
      if (world % g == 0 && world / g > max_host) {
        o.hosts = world / g;
        break;
      }
  }
  if (!o.pinned.schema) o.schema30 = v30;
  if (!o.pinned.files) o.per_host_files = per_host;
  if (!o.pinned.domain_create) o.nccl_domain_create = domain;
  const bool one_stream = R.coin();  // drawn last: earlier choices stay as they were
  if (!o.pinned.p2p_streams) o.p2p_one_stream = one_stream;
  const bool overlap = R.coin();  // drawn after every earlier choice, which stay as they were
  if (!o.pinned.dp_overlap) o.dp_overlap = overlap;
}

std::vector<int32_t> graph_heads(const RankTrace& tr, int from_iter) {
  std::vector<int32_t> head(tr.ops.size(), -1);
  if (from_iter < 0) return head;
  for (size_t i = 0; i < tr.ops.size();) {
    size_t j = i;
    while (j < tr.ops.size() && tr.ops[j].type == OpType::Compute && tr.ops[j].iter >= from_iter) ++j;
    if (j - i >= 2)
      for (size_t x = i; x < j; ++x) head[x] = int32_t(i);
    i = std::max(j, i + 1);
  }
  return head;
}

// The original layout: streams 7/13/17/21/19, pid 1000 + local rank.
void fixed_conventions(const Simulation& sim, Conventions& cv) {
  const auto& L = sim.opt.layout;
  const bool dirs = L.pp > 1 && sim.opt.schedule != "1f1b";  // per-direction p2p streams
  const bool used[kStreamSlots] = {true, L.tp > 1, L.pp > 1, L.dp > 1, L.pp > 2 || (dirs && sim.opt.schedule == "interleaved"),
                                   dirs, dirs};
  for (int r = 0; r < sim.world; ++r) {
    cv.pid[r] = pid_of_rank(sim, r);
    cv.device[r] = local_rank_of(sim, r);
    for (int s = 0; s < kStreamSlots; ++s) {  // as before: the stream list follows the layout only
      cv.stream[r][s] = kStreamIds[s];
      if (used[s]) cv.created[r].push_back(uint8_t(s));
    }
  }
}

// pids distinct within a file (the launcher too); other files may reuse them.
void random_pids(const Simulation& sim, Rng& R, Conventions& cv) {
  const Options& o = sim.opt;
  const int64_t shared_pid = R.range(20, 300);
  std::set<int64_t> taken;
  for (int r = 0; r < sim.world; ++r) {
    const int local = local_rank_of(sim, r);
    if (!o.per_host_files || local == 0) taken.clear();
    int64_t p = shared_pid;
    if (!cv.same_pid)
      do p = R.range(1500, 4'000'000); while (taken.count(p));
    taken.insert(p);
    cv.pid[r] = p;
    cv.device[r] = cv.device_zero ? 0 : local;
    if (o.per_host_files && local == sim.gpus_per_host - 1) {
      int64_t q;
      do q = R.range(1200, 4'000'000); while (taken.count(q));
      cv.launcher_pid[r / sim.gpus_per_host] = q;
    }
  }
}

// Streams: the compute stream is the default stream (7) or one the framework created; NCCL
// creates a stream per communicator when the process first uses it, so the numbering follows
// each process's first-use order (a stage-1 rank receives on pp before its first tp all-reduce).
void random_streams(const Simulation& sim, Rng& R, Conventions& cv) {
  for (int r = 0; r < sim.world; ++r) {
    auto& id = cv.stream[r];
    int next = int(R.range(13, 60));
    const bool own_compute = R.coin(0.4);
    id[kCompute] = own_compute ? next : 7;
    if (own_compute) next += int(R.range(1, 4));
    cv.created[r].push_back(kCompute);
    for (const Op& op : sim.ranks[r].ops) {
      if (op.type != OpType::Coll || id[op.stream] >= 0) continue;
      id[op.stream] = next;
      next += int(R.range(1, 4));  // other streams (side streams, NCCL internals) come in between
      cv.created[r].push_back(op.stream);
    }
    cv.corr_base[r] = R.range(1, 5000);
  }
}

// CUDA graphs on some ranks from some iteration on (captured after warm-up); at least one rank.
void random_graphs(const Simulation& sim, Rng& R, Conventions& cv) {
  const int W = sim.world, last = std::max(0, sim.iterations - 1);
  for (int r = 0; r < W; ++r)
    if (R.coin(0.4)) cv.graph_from[r] = int(R.range(std::min(1, last), last));
  if (std::all_of(cv.graph_from.begin(), cv.graph_from.end(), [](int g) { return g < 0; }))
    cv.graph_from[R.range(0, W - 1)] = std::min(1, last);
  // A graph replays its kernels without per-kernel launch calls: the launch-bound patterns
  // (slow_host, small_kernels) cannot exist on a rank that captures graphs, so such ranks do not.
  for (const Fault& f : sim.opt.faults)
    if (f.kind == FaultKind::SlowHost || f.kind == FaultKind::SmallKernels)
      for (int r = 0; r < W; ++r)
        if (f.rank < 0 || f.rank == r) cv.graph_from[r] = -1;
  for (int r = 0; r < W; ++r) {
    const auto head = graph_heads(sim.ranks[r], cv.graph_from[r]);
    for (size_t i = 0; i < head.size(); ++i) cv.graph_launches[r] += head[i] == int32_t(i);
  }
}

// Captures start at different moments (nsys launched per rank, or per host); the system clock
// (uptime) at the capture start is per host.
void random_capture_starts(const Simulation& sim, Rng& R, Conventions& cv) {
  const Options& o = sim.opt;
  std::vector<int64_t> uptime(o.hosts);
  for (auto& u : uptime) u = R.range(100'000'000'000, 2'000'000'000'000'000);
  int64_t lead = 0;
  for (int r = 0; r < sim.world; ++r) {
    if (!o.per_host_files || local_rank_of(sim, r) == 0) lead = R.range(300'000'000, 3'000'000'000);
    cv.capture_lead[r] = lead;
    cv.system_clock_ns[r] = uptime[r / sim.gpus_per_host] - lead;
  }
}

Conventions make_conventions(const Simulation& sim) {
  const Options& o = sim.opt;
  const int W = sim.world;
  Conventions cv;
  cv.random = o.random_conventions;
  cv.pid.resize(W);
  cv.device.resize(W);
  std::array<int, kStreamSlots> none;
  none.fill(-1);
  cv.stream.assign(W, none);
  cv.created.resize(W);
  cv.graph_from.assign(W, -1);
  cv.graph_launches.assign(W, 0);
  cv.corr_base.assign(W, 1);
  cv.capture_lead.assign(W, kCaptureLead);
  cv.system_clock_ns.assign(W, 0);
  cv.launcher_pid.assign(o.hosts, 900);
  for (const Fault& f : o.faults) cv.extra_strings |= f.kind == FaultKind::Crash;
  if (!cv.random) {
    fixed_conventions(sim, cv);
    return cv;
  }
  cv.extra_strings = true;
  Rng R(hash4(conventions_seed(o), 0xC0417, 2, 0));
  cv.device_zero = !o.per_host_files && R.coin();
  cv.same_pid = !o.per_host_files && R.coin(0.3);
  cv.iteration_markers = R.coin();
  cv.system_clock_start = !o.schema30;
  random_pids(sim, R, cv);
  random_streams(sim, R, cv);
  random_graphs(sim, R, cv);
  random_capture_starts(sim, R, cv);
  // Drawn apart: the draws above stay what they were for every seed.
  cv.launch_after_range = Rng(hash4(conventions_seed(o), 0xC0417, 3, 0)).coin(0.4);
  return cv;
}

void shuffle_rows(sqlite3* db, uint64_t seed) {
  auto check = [db](int rc) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
      throw std::runtime_error(fmt::format("straggler-sim: sqlite shuffle: {}", sqlite3_errmsg(db)));
  };
  check(sqlite3_create_function_v2(
      db, "sim_shuffle", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, new uint64_t(seed),
      [](sqlite3_context* ctx, int, sqlite3_value** v) {
        const uint64_t s = *static_cast<uint64_t*>(sqlite3_user_data(ctx));
        sqlite3_result_int64(ctx, int64_t(hash4(s, uint64_t(sqlite3_value_int64(v[0])), 0x5A, 0) >> 1));
      },
      nullptr, nullptr, [](void* p) { delete static_cast<uint64_t*>(p); }));
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  check(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name", -1, &st, nullptr));
  while (sqlite3_step(st) == SQLITE_ROW) tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  for (const auto& t : tables) {
    const std::string sql = fmt::format(
        "CREATE TEMP TABLE sim_shuf AS SELECT * FROM {0}; DELETE FROM {0}; "
        "INSERT INTO {0} SELECT * FROM sim_shuf ORDER BY sim_shuffle(rowid); DROP TABLE sim_shuf;", t);
    check(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr));
  }
}

std::string fixed_conventions_json(const Simulation& sim) {
  return sim.opt.dp_overlap ? " \"conventions\": {\"mode\": \"fixed\", \"dp_overlap\": true},\n" : "";
}

std::string conventions_json(const Simulation& sim, const Conventions& cv, const std::vector<FileSpec>& files) {
  const Options& o = sim.opt;
  std::string j;
  auto out = [&j](std::string_view f, const auto&... a) { j += fmt::vformat(f, fmt::make_format_args(a...)); };
  out(R"( "conventions": {{"mode": "random", "seed": {}, "schema": "{}", "file_layout": "{}", "gpus_per_host": {}, "hosts_chosen": {},)" "\n",
      conventions_seed(o), o.schema30 ? "3.0.0" : "3.25.0", o.per_host_files ? "per_host" : "per_rank",
      sim.gpus_per_host, !o.pinned.hosts);
  out(R"(  "device_ids": "{}", "pids": "{}", "row_order": "shuffled", "iteration_markers": {}, "nccl_domain_create": {},)" "\n",
      cv.device_zero ? "zero" : "local_index", cv.same_pid ? "same_in_every_file" : "random_distinct_in_file",
      cv.iteration_markers, o.nccl_domain_create);
  out(R"(  "analysis_details_start": "{}", "correlation_ids": "gapped", "stream_ids": "per_process_first_use",)" "\n",
      cv.system_clock_start ? "system_clock" : "capture_relative");
  out(R"(  "nccl_launch": "{}",)" "\n", cv.launch_after_range ? "after_api_range" : "inside_api_range");
  out(R"(  "p2p_streams": "{}", "dp_overlap": {},)" "\n", o.schedule != "1f1b" && o.layout.pp > 1 ? "one_per_direction" : o.p2p_one_stream ? "one_per_rank" : "one_per_link", o.dp_overlap);
  out("  \"files\": [");
  for (size_t i = 0; i < files.size(); ++i) {
    const int r0 = files[i].ranks.front();
    out(R"({}{{"file": "{}", "capture_lead_ns": {}, "system_clock_ns": {}{}}})", i ? ", " : "",
        files[i].path.substr(files[i].path.find_last_of('/') + 1), cv.capture_lead[r0], cv.system_clock_ns[r0],
        files[i].per_host ? fmt::format(R"(, "launcher_pid": {})", cv.launcher_pid[files[i].host]) : "");
  }
  out("],\n  \"ranks\": [\n");
  for (int r = 0; r < sim.world; ++r) {
    std::vector<std::string> ids, order;
    for (uint8_t s : cv.created[r]) {
      ids.push_back(fmt::format(R"("{}": {})", kSlotNames[s], cv.stream[r][s]));
      order.push_back(fmt::format(R"("{}")", kSlotNames[s]));
    }
    out(R"(   {{"rank": {}, "pid": {}, "device": {}, "streams": {{{}}}, "stream_creation_order": [{}], "cuda_graphs_from_iteration": {}, "graph_launches": {}}}{})" "\n",
        r, cv.pid[r], cv.device[r], fmt::join(ids, ", "), fmt::join(order, ", "), cv.graph_from[r],
        cv.graph_launches[r], r + 1 < sim.world ? "," : "");
  }
  out("  ]}},\n");
  return j;
}

}  // namespace sim
