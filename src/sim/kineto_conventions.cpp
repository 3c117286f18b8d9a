// --format kineto: what a Kineto trace does not promise, drawn per run (--conventions random) or
// fixed, plus the process-group names of the 2024 metadata, the file names and the truth.json
// "conventions" member. The events themselves are kineto_writer.cpp's.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "crash_timing.hpp"
#include "kineto_writer.hpp"
#include "rng.hpp"

namespace sim {
namespace {

constexpr int64_t kSecNs = 1'000'000'000, kMsNs = 1'000'000;
const char* const kSlots[kStreamSlots] = {"compute", "tp", "pp_prev", "dp", "pp_next", "pp_prev_send", "pp_next_recv"};
const char* const kOrders[] = {"kineto", "sorted", "grouped", "shuffled"};
const char* const kNamings[] = {"worker_step", "rank_json", "host_pid"};

// Run-wide choices. Each is drawn every time (in this order), so adding one later at the end
// leaves the others as they were for a seed.
void draw_run(const Simulation& sim, Rng& R, KinetoConventions& kc) {
  kc.relative_time = R.coin();
  kc.base_per_host = R.coin();
  // The collective metadata came with the 2024 builds (relative time); 2023 traces have none.
  kc.nccl_metadata = R.coin(0.75) && kc.relative_time;
  kc.record_shapes = R.coin(kc.relative_time ? 0.3 : 0.75);  // both 2023 samples recorded shapes
  kc.markers = R.coin(0.85);  // absent when the loop never calls prof.step()
  kc.annotations = R.coin();
  kc.flows = R.coin(0.8);
  kc.meta = R.coin(0.8);
  kc.instants = R.coin(0.7);
  kc.trace_name = R.coin(0.6);
  kc.gzip = R.coin(0.35);
  kc.megatron_desc = R.coin();
  kc.order = KinetoOrder(R.range(0, 3));
  kc.naming = KinetoNaming(R.range(0, 2));
  kc.step_offset = R.coin(0.3) ? 0 : int(R.range(1, 60));
  kc.shuffle_window = int(R.range(64, 4096));
  kc.ext_base = R.range(1, 20000);
  kc.rf_offset = R.range(0, kc.ext_base - 1);
  for (size_t i = kc.pg_order.size() - 1; i > 0; --i) std::swap(kc.pg_order[i], kc.pg_order[size_t(R.range(0, int64_t(i)))]);
  kc.gloo_twins = R.coin();
  const int world = sim.world;
  kc.extra_groups = R.coin() ? int(R.range(1, std::max(1, world / std::max(1, sim.opt.layout.tp)))) : 0;
  kc.extra_at = int(R.range(0, 2));
  kc.default_pg_dp = R.coin();
  kc.main_thread = R.coin(0.8);
}

// PyTorch numbers process groups by creation ("0" the default group); every rank creates every
// group (new_group is collective), so a name is the same on all ranks. Megatron-style code also
// creates the groups of size 1 (TP = 1 still makes world groups), gloo twins and other groups:
// they take numbers without ever running a kernel.
void name_groups(const Simulation& sim, KinetoConventions& kc) {
  const auto& L = sim.opt.layout;
  kc.pg.assign(sim.comms.size(), {});
  if (L.tp == 1 && L.pp == 1 && sim.comms.size() == 1 && kc.default_pg_dp) {  // plain DDP on the default group
    kc.pg[0] = {"0", "default_pg"};
    return;
  }
  int next = 1;
  for (size_t k = 0; k < kc.pg_order.size(); ++k) {
    if (int(k) == kc.extra_at) next += kc.extra_groups;
    const std::string& kind = kc.pg_order[k];
    const int size = kind == "tp" ? L.tp : kind == "pp" ? L.pp : L.dp;
    const int step = kind == "dp" && kc.gloo_twins ? 2 : 1;
    if (size < 2) {  // created, never used by a collective
      next += step * (sim.world / std::max(1, size));
      continue;
    }
    const char* desc = !kc.megatron_desc ? "undefined"
                       : kind == "tp"    ? "TENSOR_MODEL_PARALLEL_GROUP"
                       : kind == "dp"    ? "DATA_PARALLEL_GROUP"
                                         : "PIPELINE_MODEL_PARALLEL_GROUP";
    for (size_t c = 0; c < sim.comms.size(); ++c)
      if (sim.comms[c].kind == kind) kc.pg[c] = {std::to_string(next), desc}, next += step;
  }
}

// The kernel / record_param_comms metadata of each collective key after "Collective name": the
// message as elements of its dtype (bf16 activations and gradients; an odd byte count as Byte).
void key_args(const Simulation& sim, KinetoConventions& kc) {
  for (const CollKey& k : sim.keys) {
    const bool bf16 = k.bytes % 2 == 0;
    const KinetoPg& pg = kc.pg[size_t(k.comm)];
    const auto& ranks = sim.comms[size_t(k.comm)].ranks;
    kc.key_args.push_back(fmt::format(
        R"("In msg nelems": {0}, "Out msg nelems": {0}, "Group size": {1}, "dtype": "{2}", "In split size": "[]", )"
        R"("Out split size": "[]", "Process Group Name": "{3}", "Process Group Description": "{4}", "Process Group Ranks": "[{5}]")",
        k.bytes / (bf16 ? 2 : 1), ranks.size(), bf16 ? "BFloat16" : "Byte", pg.name, pg.desc, fmt::join(ranks, ", ")));
  }
}

// A rank's last CPU or GPU activity (true ns).
int64_t last_activity(const RankTrace& tr) {
  int64_t t = 0;
  for (const Op& op : tr.ops) {
    t = std::max(t, op.cpu_end);
    if (!op.pending && op.type != OpType::Sync && op.type != OpType::Stall && op.type != OpType::IterBegin)
      t = std::max(t, op.end);
  }
  return t;
}

// Per rank: time base, capture end, file name (unique in the folder).
void per_rank(const Simulation& sim, const Conventions& cv, Rng& R, KinetoConventions& kc) {
  const int W = sim.world, H = sim.opt.hosts;
  // A process stops its profiler after its last step; in a hang or crash run the window ends as
  // the nsys capture's (no real stuck process exports a trace: the run keeps what nsys would show).
  bool stuck = false;
  for (const Fault& f : sim.opt.faults) stuck |= f.kind == FaultKind::Hang || f.kind == FaultKind::Crash;
  const std::vector<int64_t> stops = stuck ? capture_stops(sim, cv) : std::vector<int64_t>();
  std::vector<int64_t> uptime(H);
  for (int h = 0; h < H; ++h)  // the host was booted days before the job (Kineto's ts run from boot)
    uptime[h] = kc.random ? R.range(2 * 86400, 200 * 86400) * kSecNs : (30 * 86400 + 3600 * h) * kSecNs;
  std::set<std::string> taken;
  for (int r = 0; r < W; ++r) {
    const int h = r / sim.gpus_per_host;
    const int64_t start = kineto_unix_ns(sim, cv, r, -cv.capture_lead[r]);  // the capture's start
    const int64_t boot = (kT0 + sim.host_offset_ns[size_t(h)] - uptime[h]) / kSecNs * kSecNs;  // one per host
    kc.base_ns.push_back(kc.base_per_host ? boot : start - (kc.random ? R.range(0, 20 * kSecNs) : 0));
    kc.tid.push_back(kc.main_thread ? cv.pid[r] : cv.pid[r] + R.range(1, 400000));
    const int64_t end = last_activity(sim.ranks[r]) + (kc.random ? R.range(1, 5) : 2) * kMsNs;
    kc.end_ns.push_back(stuck ? std::max(end, stops[size_t(r)]) : end);
    int64_t ms = kineto_unix_ns(sim, cv, r, kc.end_ns.back()) / kMsNs + (kc.random ? R.range(20, 400) : 100);
    std::string name;
    do {  // same pid on one host (containers): the export ms tells the files apart
      switch (kc.naming) {
        case KinetoNaming::WorkerStep:
          name = fmt::format("worker{}_step_{}.{}.pt.trace.json", r, kc.step_offset + sim.iterations + 1, ms);
          break;
        case KinetoNaming::RankJson: name = fmt::format("rank-{}.json", r); break;
        case KinetoNaming::HostPid:
          name = fmt::format("{}_{}.{}.pt.trace.json", topology::host_name(h), cv.pid[r], ms);
          break;
      }
      ++ms;
    } while (taken.count(name));
    taken.insert(name);
    kc.file.push_back(name + (kc.gzip ? ".gz" : ""));
  }
}

}  // namespace

int64_t kineto_unix_ns(const Simulation& sim, const Conventions& cv, int rank, int64_t t) {
  const int h = rank / sim.gpus_per_host;
  const int64_t lead = cv.capture_lead[rank];
  const double drift = sim.host_drift_ppm[size_t(h)] * 1e-6;
  int64_t f = t + lead;  // the nsys writer's t_file, from its capture start
  if (drift != 0) f += int64_t(std::llround(double(f) * drift));
  return kT0 - lead + sim.host_offset_ns[size_t(h)] + f;
}

KinetoConventions make_kineto_conventions(const Simulation& sim, const Conventions& cv) {
  KinetoConventions kc;
  kc.random = cv.random;
  kc.pg_order = {"dp", "tp", "pp"};  // Megatron's initialize_model_parallel order
  Rng R(hash4(conventions_seed(sim.opt), 0x4B1E70, 1, 0));
  if (kc.random) draw_run(sim, R, kc);
  name_groups(sim, kc);
  key_args(sim, kc);
  per_rank(sim, cv, R, kc);
  return kc;
}

std::vector<FileSpec> kineto_files(const Simulation& sim, const KinetoConventions& kc) {
  std::vector<FileSpec> files;
  for (int r = 0; r < sim.world; ++r)
    files.push_back({sim.opt.out_dir + "/" + kc.file[size_t(r)], r / sim.gpus_per_host, {r}, false});
  return files;
}

std::string kineto_conventions_json(const Simulation& sim, const Conventions& cv, const KinetoConventions& kc,
                                    const std::vector<FileSpec>& files) {
  const Options& o = sim.opt;
  std::string j;
  auto out = [&j](std::string_view f, const auto&... a) { j += fmt::vformat(f, fmt::make_format_args(a...)); };
  out(R"( "conventions": {{"mode": "{}", "format": "kineto", "seed": {}, "gpus_per_host": {}, "hosts_chosen": {}, "file_layout": "per_rank",)" "\n",
      kc.random ? "random" : "fixed", conventions_seed(o), sim.gpus_per_host, kc.random && !o.pinned.hosts);
  out(R"(  "file_naming": "{}", "gzip": {}, "time_base": "{}", "base_time": "{}", "event_order": "{}", "shuffle_window": {},)" "\n",
      kNamings[int(kc.naming)], kc.gzip, kc.relative_time ? "relative_float_us" : "epoch_int_us",
      kc.relative_time ? (kc.base_per_host ? "host_boot" : "per_process") : "none", kOrders[int(kc.order)],
      kc.order == KinetoOrder::Shuffled ? kc.shuffle_window : 0);
  out(R"(  "nccl_metadata": {}, "record_shapes": {}, "nccl_naming": "{}", "nccl_launch": "{}", "iteration_markers": {}, "profiler_step_offset": {},)" "\n",
      kc.nccl_metadata, kc.record_shapes, o.schema30 ? "ncclKernel" : "ncclDevKernel", kineto_nccl_launch(o.schema30, kc.relative_time),
      kc.markers, kc.step_offset);
  out(R"(  "other_annotations": {}, "flows": {}, "metadata_events": {}, "instant_events": {}, "trace_name": {}, "external_id_base": {},)" "\n"
      R"(  "loop_thread": "{}",)" "\n",
      kc.annotations, kc.flows, kc.meta, kc.instants, kc.trace_name, kc.ext_base,
      kc.main_thread ? "main" : "other");
  out(R"(  "device_ids": "{}", "pids": "{}", "correlation_ids": "{}", "p2p_streams": "{}", "dp_overlap": {},)" "\n",
      cv.device_zero ? "zero" : "local_index", !cv.random ? "fixed" : cv.same_pid ? "same_in_every_file" : "random_distinct_in_file",
      cv.random ? "gapped" : "sequential",
      o.schedule != "1f1b" && o.layout.pp > 1 ? "one_per_direction" : o.p2p_one_stream ? "one_per_rank" : "one_per_link", o.dp_overlap);
  std::vector<std::string> names;
  for (size_t c = 0; c < sim.comms.size(); ++c)
    names.push_back(fmt::format(R"("{}": "{}")", sim.comms[c].name, kc.pg[c].name));
  out(R"(  "process_groups": {{"creation_order": ["{}"], "gloo_twins": {}, "extra_groups": {}, "descriptions": "{}", "names": {{{}}}}},)" "\n",
      fmt::join(kc.pg_order, "\", \""), kc.gloo_twins, kc.extra_groups, kc.megatron_desc ? "megatron" : "undefined",
      fmt::join(names, ", "));
  out("  \"files\": [");
  for (size_t i = 0; i < files.size(); ++i) {
    const int r = files[i].ranks.front();
    out(R"({}{{"file": "{}", "rank": {}, "base_time_ns": {}}})", i ? ", " : "", kc.file[size_t(r)], r,
        kc.relative_time ? std::to_string(kc.base_ns[size_t(r)]) : "null");
  }
  out("],\n  \"ranks\": [\n");
  for (int r = 0; r < sim.world; ++r) {
    std::vector<std::string> ids, order;
    for (uint8_t s : cv.created[r]) {
      ids.push_back(fmt::format(R"("{}": {})", kSlots[s], cv.stream[r][s]));
      order.push_back(fmt::format(R"("{}")", kSlots[s]));
    }
    out(R"(   {{"rank": {}, "pid": {}, "tid": {}, "device": {}, "streams": {{{}}}, "stream_creation_order": [{}], "cuda_graphs_from_iteration": {}, "graph_launches": {}}}{})" "\n",
        r, cv.pid[r], kc.tid[size_t(r)], cv.device[r], fmt::join(ids, ", "), fmt::join(order, ", "), cv.graph_from[r],
        cv.graph_launches[r], r + 1 < sim.world ? "," : "");
  }
  out("  ]}},\n");
  return j;
}

}  // namespace sim
