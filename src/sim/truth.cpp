#include "truth.hpp"

#include "bubble_truth.hpp"
#include "conventions.hpp"
#include "fabric.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace sim {
namespace {

std::string ints(const std::vector<int>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }

std::string fault_json(const Fault& f) {
  const char* k = fault_kind_name(f.kind);
  switch (f.kind) {
    case FaultKind::SlowGpu:
    case FaultKind::ExtraWork:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "from_iteration": {}, "factor": {}}})", k, f.rank, f.from_iter, f.factor);
    case FaultKind::HostDelay:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "from_iteration": {}, "ms": {}}})", k, f.rank, f.from_iter, f.ms);
    case FaultKind::SlowLink:
      return fmt::format(R"({{"kind": "{}", "hosts": ["{}", "{}"], "host_indices": [{}, {}], "factor": {}}})", k,
                         topology::host_name(f.host_a), topology::host_name(f.host_b), f.host_a, f.host_b, f.factor);
    case FaultKind::StageImbalance:
      return fmt::format(R"({{"kind": "{}", "stage": {}, "factor": {}}})", k, f.stage, f.factor);
    case FaultKind::SlowP2P:
      return fmt::format(R"({{"kind": "{}", "factor": {}}})", k, f.factor);
    case FaultKind::SlowKernel:
      return fmt::format(R"({{"kind": "{}", "kernel": {}, "factor": {}}})", k, f.count, f.factor);
    case FaultKind::Hang:
    case FaultKind::Crash:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "iteration": {}}})", k, f.rank, f.from_iter);
    // Root-cause patterns: "rank" -1 = every rank (`all`).
    case FaultKind::GcPause:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "every": {}, "ms": {}}})", k, f.rank, f.every, f.ms);
    case FaultKind::Sync:
    case FaultKind::Compile:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "ms": {}}})", k, f.rank, f.ms);
    case FaultKind::NcclCompute:
      return fmt::format(R"({{"kind": "{}", "rank": {}}})", k, f.rank);
    case FaultKind::H2D:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "mib": {}}})", k, f.rank, f.mib);
    case FaultKind::SmallKernels:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "count": {}}})", k, f.rank, f.count);
    case FaultKind::Hotspot:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "share": {}}})", k, f.rank, f.share);
    case FaultKind::SlowHost:
      return fmt::format(R"({{"kind": "{}", "rank": {}, "us": {}}})", k, f.rank, f.us);
  }
  return "{}";
}

// The root-cause finding a fault plants (the analyser's name for it), or nullptr.
const char* finding_name(FaultKind k) {
  switch (k) {
    case FaultKind::GcPause: return "gc_pause";
    case FaultKind::Sync: return "excessive_sync";
    case FaultKind::NcclCompute: return "nccl_serialization";
    case FaultKind::H2D: return "excessive_h2d";
    case FaultKind::SmallKernels: return "small_kernels";
    case FaultKind::Compile: return "module_loading";
    case FaultKind::Hotspot: return "kernel_hotspot";
    case FaultKind::SlowHost: return "cpu_bottleneck";
    case FaultKind::HostDelay: return "gpu_bubbles";
    case FaultKind::ExtraWork: return "comm_imbalance";
    default: return nullptr;
  }
}

// "findings": one row per fault that plants a root-cause pattern, with the ranks it acts on.
std::string findings_json(const Simulation& sim) {
  std::vector<std::string> rows;
  for (const Fault& f : sim.opt.faults) {
    const char* name = finding_name(f.kind);
    if (!name) continue;
    std::vector<int> ranks;
    for (int r = 0; r < sim.world; ++r)
      if (f.on(r)) ranks.push_back(r);
    rows.push_back(fmt::format(R"({{"finding": "{}", "ranks": {}, "fault": "{}"}})", name, ints(ranks),
                               fault_kind_name(f.kind)));
  }
  return fmt::format(" \"findings\": [{}]", fmt::join(rows, ", "));
}

// What straggler-scan can see of the planted slow links: a communicator is compared only with its
// like (same kind, p2p pipeline links together, same number of hosts), so a slow link shows only
// where at most half of such a group crosses it, and is narrowed down only to the hosts common to
// the communicators it slows (a ring is as slow as its slowest hop). Rows sharing hosts merge.
std::vector<std::vector<int>> observable_slow_links(const Simulation& sim) {
  const int world = sim.world;
  topology::HostPlacement hp;
  hp.hosts = sim.opt.hosts;
  std::map<std::pair<std::string, size_t>, std::vector<std::set<int>>> groups;  // member hosts per comm
  auto add = [&](const std::string& kind, const std::vector<int>& ranks) {
    std::set<int> hosts;
    for (int r : ranks) hosts.insert(hp.host_of(r, world));
    groups[{kind, hosts.size()}].push_back(hosts);
  };
  for (const CommInfo& c : sim.comms) {
    if (c.ranks.size() < 2) continue;
    if (c.kind == "pp")
      for (size_t i = 0; i + 1 < c.ranks.size(); ++i) add("p2p", {c.ranks[i], c.ranks[i + 1]});
    else
      add(c.kind, c.ranks);
  }
  std::vector<std::set<int>> rows;
  for (const Fault& f : sim.opt.faults) {
    if (f.kind != FaultKind::SlowLink || f.factor < 1.5) continue;  // below the tool's 1.5x threshold (verdict.hpp)
    for (const auto& [key, comms] : groups) {
      std::vector<const std::set<int>*> slowed;
      for (const auto& h : comms) {
        const bool hit = f.host_a == f.host_b ? h.count(f.host_a) && h.size() > 1 : h.count(f.host_a) && h.count(f.host_b);
        if (hit) slowed.push_back(&h);
      }
      if (comms.size() < 2 || slowed.empty() || 2 * slowed.size() > comms.size()) continue;
      std::set<int> common = *slowed.front();
      for (const auto* h : slowed) {
        std::set<int> keep;
        for (int x : common)
          if (h->count(x)) keep.insert(x);
        common = keep;
      }
      if (!common.empty()) rows.push_back(common);
    }
  }
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < rows.size() && !merged; ++i)
      for (size_t j = i + 1; j < rows.size() && !merged; ++j) {
        std::set<int> both;
        for (int x : rows[i])
          if (rows[j].count(x)) both.insert(x);
        if (both.empty()) continue;
        rows[i] = both, rows.erase(rows.begin() + long(j)), merged = true;
      }
  }
  std::vector<std::vector<int>> out;
  for (const auto& r : rows) out.emplace_back(r.begin(), r.end());
  return out;
}

// The schedule, the true bubble (bubble_truth.cpp) and, for a run with faults, the bubble of the
// same run without them (the counterfactual: what fixing the fault buys); the mechanism planted.
std::string pipeline_json(const Simulation& sim) {
  const Options& o = sim.opt;
  const BubbleTruth t = bubble_truth(sim);
  std::string without = "null";
  bool stops = false;
  for (const Fault& f : o.faults) stops |= f.kind == FaultKind::Hang || f.kind == FaultKind::Crash;
  if (!o.faults.empty() && !stops && sim.world <= 1024) {
    Options healthy = o;
    healthy.faults.clear();
    without = fmt::format("{:.6f}", bubble_truth(simulate(healthy)).measured);
  }
  std::string bottleneck = "null";
  std::vector<std::string> causes;
  for (const Fault& f : o.faults) {
    const char* c = f.kind == FaultKind::StageImbalance ? "stage_imbalance"
                    : f.kind == FaultKind::SlowP2P     ? "p2p_transfer"
                    : f.kind == FaultKind::SlowGpu || f.kind == FaultKind::HostDelay || f.kind == FaultKind::ExtraWork
                        ? "straggler"
                        : nullptr;
    if (f.kind == FaultKind::StageImbalance) bottleneck = std::to_string(f.stage);
    if (c && std::find(causes.begin(), causes.end(), fmt::format(R"("{}")", c)) == causes.end())
      causes.push_back(fmt::format(R"("{}")", c));
  }
  const char* schedule = o.schedule == "interleaved" ? "interleaved_1f1b" : o.schedule.c_str();
  return fmt::format(
      R"({{"pp": {}, "microbatches": {}, "virtual_stages": {}, "schedule": "{}", "bubble_theoretical": {:.6f}, )"
      R"("bubble_measured": {:.6f}, "per_stage": [{:.6f}], "iterations": {}, "bubble_without_faults": {}, )"
      R"("bottleneck_stage": {}, "causes": [{}]}})",
      o.layout.pp, o.microbatches, o.virtual_stages, schedule, t.theoretical, t.measured, fmt::join(t.per_stage, ", "),
      t.iterations, without, bottleneck, fmt::join(causes, ", "));
}

// What was generated: layout, files, hosts, communicators, per-rank counts.
std::string run_json(const Simulation& sim, const Conventions& cv, const std::vector<FileSpec>& files,
                     const std::vector<RankCounts>& counts) {
  const Options& o = sim.opt;
  std::string j;
  auto out = [&j](std::string_view f, const auto&... a) { j += fmt::vformat(f, fmt::make_format_args(a...)); };
  out(R"({{"generator": "straggler-sim", "seed": {}, "schema": "{}",)" "\n", o.seed, o.schema30 ? "3.0.0" : "3.25.0");
  out(R"( "layout": {{"tp": {}, "pp": {}, "dp": {}, "hosts": {}, "gpus_per_host": {}, "microbatches": {}, "iterations": {}, "layers": {}}},)" "\n",
      o.layout.tp, o.layout.pp, o.layout.dp, o.hosts, sim.gpus_per_host, o.microbatches, sim.iterations, o.layers);
  out(R"( "ranks": {},)" "\n", sim.world);
  out(R"( "files": [)" "\n");
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string name = files[i].path.substr(files[i].path.find_last_of('/') + 1);
    out(R"(  {{"file": "{}", "host": "{}", "ranks": {}}}{})" "\n", name, topology::host_name(files[i].host),
        ints(files[i].ranks), i + 1 < files.size() ? "," : "");
  }
  out(" ],\n \"hosts\": [\n");
  for (int h = 0; h < o.hosts; ++h) {
    std::vector<int> rs;
    for (int r = h * sim.gpus_per_host; r < std::min(sim.world, (h + 1) * sim.gpus_per_host); ++r) rs.push_back(r);
    out(R"(  {{"name": "{}", "ranks": {}, "clock_offset_ns": {}, "clock_drift_ppm": {}}}{})" "\n",
        topology::host_name(h), ints(rs), sim.host_offset_ns[h], sim.host_drift_ppm[h], h + 1 < o.hosts ? "," : "");
  }
  out(" ],\n \"communicators\": [\n");
  for (size_t i = 0; i < sim.comms.size(); ++i) {
    const CommInfo& c = sim.comms[i];
    out(R"(  {{"name": "{}", "kind": "{}", "ranks": {}, "ops": {}}}{})" "\n", c.name, c.kind, ints(c.ranks), c.ops,
        i + 1 < sim.comms.size() ? "," : "");
  }
  out(" ],\n \"per_rank\": [\n");
  for (int r = 0; r < sim.world; ++r) {
    const RankCounts& c = counts[r];
    out(R"(  {{"rank": {}, "host": "{}", "device": {}, "pid": {}, "stage": {}, "kernels": {}, "nccl_kernels": {}, "memcpy_h2d_bytes": {}, "iterations_written": {}}}{})" "\n",
        r, topology::host_name(r / sim.gpus_per_host), cv.device[r], cv.pid[r],
        o.layout.pp_rank(r), c.kernels, c.nccl_kernels, c.h2d_bytes, sim.ranks[r].iterations_written,
        r + 1 < sim.world ? "," : "");
  }
  out(" ],\n");
  return j;
}

// Scaling runs (a fabric seed or pods given): the planted transfer time (the median over ops: the
// per-op jitter is symmetric around it) and bus bandwidth of each non-p2p collective family, with
// the nodes and pods it spans and the fabric's parameters.
std::string scaling_json(const Simulation& sim) {
  const Options& o = sim.opt;
  const SimFabric f = draw_fabric(true, o.fabric_seed.value_or(o.seed), o.nodes_per_pod);
  std::string j = fmt::format(
      R"({{"nodes_per_pod": {}, "intra_busbw_gbps": {:.3f}, "inter_busbw_gbps": {:.3f}, "pod_busbw_gbps": {:.3f}, "intra_latency_us": {:.3f}, )"
      R"("inter_latency_us": {:.3f}, "pod_latency_us": {:.3f}, "base_latency_us": {:.3f}, "collectives": [)",
      f.nodes_per_pod, f.intra_bw / 1e9, f.inter_bw / 1e9, f.pod_bw / 1e9, f.intra_lat_us, f.inter_lat_us, f.pod_lat_us,
      f.base_lat_us);
  bool first = true;
  for (const CollKey& k : sim.keys) {
    const CommInfo& c = sim.comms[size_t(k.comm)];
    if (c.kind == "pp") continue;
    std::set<int> hosts, pods;
    for (int m : k.members) hosts.insert(m / sim.gpus_per_host);
    for (int h : hosts) pods.insert(o.nodes_per_pod > 0 ? h / o.nodes_per_pod : 0);
    j += fmt::format(R"({}{{"communicator": "{}", "collective": "AllReduce", "bytes": {}, "group_size": {}, "nodes": {}, "pods": {}, )"
                     R"("transfer_ms": {:.6f}, "busbw_gbps": {:.4f}}})",
                     first ? "" : ", ", c.name, k.bytes, k.members.size(), hosts.size(), pods.size(), k.transfer_ns / 1e6,
                     double(k.bytes) * k.algo_factor / k.transfer_ns);
    first = false;
  }
  return j + "]}";
}

// MFU runs (--model-flops-per-step): the job's step per iteration as the generator ran it, the
// median over ranks of the time from an iteration's start on the host to the next one's (the last:
// to its end), with the GPU name and the FLOPs; the planted MFU follows with any peak.
std::string mfu_json(const Simulation& sim) {
  const Options& o = sim.opt;
  std::string j = fmt::format(R"({{"gpu": "{}", "model_flops_per_step": {:.6g}, "gpus": {}, "iterations": [)", o.gpu_name,
                              o.model_flops_per_step, sim.world);
  size_t n = SIZE_MAX;
  for (const auto& r : sim.ranks) n = std::min(n, r.iter_cpu.size());
  for (size_t i = 0; i < n && n != SIZE_MAX; ++i) {
    std::vector<double> steps;
    for (const auto& r : sim.ranks)
      steps.push_back(double((i + 1 < r.iter_cpu.size() ? r.iter_cpu[i + 1].first : r.iter_cpu[i].second) - r.iter_cpu[i].first) / 1e6);
    std::sort(steps.begin(), steps.end());
    const double med = steps.size() % 2 ? steps[steps.size() / 2] : (steps[steps.size() / 2 - 1] + steps[steps.size() / 2]) / 2;
    j += fmt::format(R"({}{{"iteration": {}, "step_ms": {:.6f}}})", i ? ", " : "", i, med);
  }
  return j + "]}";
}

// The planted faults and what an analyser must find.
std::string expected_json(const Simulation& sim) {
  const Options& o = sim.opt;
  std::string j;
  auto out = [&j](std::string_view f, const auto&... a) { j += fmt::vformat(f, fmt::make_format_args(a...)); };
  out(" \"faults\": [");
  for (size_t i = 0; i < o.faults.size(); ++i) out("{}{}", i ? ", " : "", fault_json(o.faults[i]));
  out("],\n \"expected\": {{\"stragglers\": [");
  bool first = true;
  auto straggler = [&](int rank, const char* cause, int onset) {
    out(R"({}{{"rank": {}, "cause": "{}", "onset_iteration": {}}})", first ? "" : ", ", rank, cause, onset);
    first = false;
  };
  for (const Fault& f : o.faults) {
    if (f.kind == FaultKind::SlowGpu || f.kind == FaultKind::HostDelay || f.kind == FaultKind::ExtraWork)
      straggler(f.rank, fault_kind_name(f.kind), f.from_iter);
    // A slow pipeline stage is not a straggler (its ranks do what their stage peers do): it is the
    // pipeline's bottleneck stage, in "pipeline" below.
  }
  out("],\n  \"slow_links\": [");
  first = true;
  for (const auto& hosts : observable_slow_links(sim)) {
    std::vector<std::string> names;
    for (int h : hosts) names.push_back(fmt::format(R"("{}")", topology::host_name(h)));
    out(R"({}{{"hosts": [{}]}})", first ? "" : ", ", fmt::join(names, ", "));
    first = false;
  }
  out("],\n  \"desync\": [");
  for (size_t i = 0; i < sim.desync.size(); ++i) {
    const Desync& d = sim.desync[i];
    out(R"({}{{"communicator": "{}", "seq": {}, "missing_ranks": {})", i ? ", " : "", d.comm, d.seq, ints(d.missing));
    if (d.crash) {  // crash runs: who waits in it, on which pipeline link, crashed rank or victim
      out(R"(, "blocked_ranks": {}, "root_cause": {})", ints(d.blocked), d.root_cause);
      if (!d.link.empty()) out(R"(, "link": {}, "link_seq": {})", ints(d.link), d.link_seq);
    }
    out("}}");
  }
  out("]");
  // Crash runs: the ranks that died (their capture ends at the start of that iteration; the others
  // wait in a launch until the watchdog aborts, ~60 s later).
  first = true;
  for (int r = 0; r < sim.world; ++r) {
    if (sim.ranks[r].crashed_at < 0) continue;
    out(R"({}{{"kind": "crash", "rank": {}, "host": "{}", "iteration": {}}})", first ? ",\n  \"root_cause\": [" : ", ", r,
        topology::host_name(r / sim.gpus_per_host), sim.ranks[r].iterations_written);
    first = false;
  }
  if (!first) out("]");
  if (o.layout.pp > 1) out(",\n  \"pipeline\": {}", pipeline_json(sim));
  if (o.fabric_seed || o.nodes_per_pod > 0) out(",\n  \"scaling\": {}", scaling_json(sim));
  if (o.model_flops_per_step > 0) out(",\n  \"mfu\": {}", mfu_json(sim));
  out("}},\n{}}}\n", findings_json(sim));
  return j;
}

}  // namespace

std::string truth_json(const Simulation& sim, const Conventions& cv, const std::vector<FileSpec>& files,
                       const std::vector<RankCounts>& counts, const std::string& conventions) {
  if (!conventions.empty()) return run_json(sim, cv, files, counts) + conventions + expected_json(sim);
  return run_json(sim, cv, files, counts) + (cv.random ? conventions_json(sim, cv, files) : fixed_conventions_json(sim)) + expected_json(sim);
}

}  // namespace sim
