#include "sim.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "conventions.hpp"
#include "kineto_writer.hpp"
#include "nsys_writer.hpp"
#include "schedule.hpp"
#include "truth.hpp"

namespace sim {

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::SlowGpu: return "slow_gpu";
    case FaultKind::HostDelay: return "host_delay";
    case FaultKind::ExtraWork: return "extra_work";
    case FaultKind::SlowLink: return "slow_link";
    case FaultKind::StageImbalance: return "stage_imbalance";
    case FaultKind::SlowP2P: return "slow_p2p";
    case FaultKind::Hang: return "hang";
    case FaultKind::Crash: return "crash";
    case FaultKind::SlowKernel: return "slow_kernel";
    case FaultKind::GcPause: return "gc_pause";
    case FaultKind::Sync: return "sync";
    case FaultKind::NcclCompute: return "nccl_compute";
    case FaultKind::H2D: return "h2d";
    case FaultKind::SmallKernels: return "small_kernels";
    case FaultKind::Compile: return "compile";
    case FaultKind::Hotspot: return "hotspot";
    case FaultKind::SlowHost: return "slow_host";
  }
  return "?";
}

// slow_kernel:KIND:FACTOR: KIND one of the model's kernels (SPEC.md); -1 for another word.
int slow_kernel_index(const std::string& kind) {
  static const char* const kinds[] = {"ln_fwd", "gemm_fwd", "flash_fwd", "elementwise", "softmax", "optimizer",
                                      "ln_bwd", "gemm_dgrad", "gemm_wgrad", "flash_bwd"};
  for (int i = 0; i < int(std::size(kinds)); ++i)
    if (kind == kinds[i]) return i;
  return -1;
}

Fault parse_fault(const std::string& spec) {
  std::vector<std::string> p;
  std::stringstream ss(spec);
  for (std::string t; std::getline(ss, t, ':');) p.push_back(t);
  auto bad = [&]() { return std::invalid_argument("bad --fault '" + spec + "' (see straggler-sim --help)"); };
  auto num_i = [&](size_t i) {
    size_t used = 0;
    const int v = std::stoi(p.at(i), &used);
    if (used != p[i].size()) throw bad();
    return v;
  };
  auto num_d = [&](size_t i) {
    size_t used = 0;
    const double v = std::stod(p.at(i), &used);
    if (used != p[i].size() || !(v > 0)) throw bad();
    return v;
  };
  // Root-cause patterns: KIND:RANK[:ARGS], RANK a rank or `all` (every rank, stored as -1); KIND
  // is the pattern's fault_kind_name.
  auto pattern = [](const std::string& k) {
    for (int i = int(FaultKind::GcPause); i <= int(FaultKind::SlowHost); ++i)
      if (k == fault_kind_name(FaultKind(i))) return FaultKind(i);
    return FaultKind::SlowGpu;  // not a pattern
  };
  Fault f;
  try {
    const std::string& k = p.at(0);
    if (is_pattern(pattern(k))) {
      f.kind = pattern(k);
      const size_t args = f.kind == FaultKind::NcclCompute ? 2 : f.kind == FaultKind::GcPause ? 4 : 3;
      if (p.size() != args) throw bad();
      f.rank = p.at(1) == "all" ? -1 : num_i(1);
      if (p[1] != "all" && f.rank < 0) throw bad();
      switch (f.kind) {
        case FaultKind::GcPause: f.every = num_d(2), f.ms = num_d(3); break;
        case FaultKind::Sync: case FaultKind::Compile: f.ms = num_d(2); break;
        case FaultKind::H2D: f.mib = num_d(2); break;
        case FaultKind::SmallKernels: f.count = num_i(2); break;
        case FaultKind::Hotspot: f.share = num_d(2); break;
        case FaultKind::SlowHost: f.us = num_d(2); break;
        default: break;
      }
    } else if (k == "slow_gpu" || k == "extra_work" || k == "host_delay") {
      if (p.size() != 4) throw bad();
      f.kind = k == "slow_gpu" ? FaultKind::SlowGpu : k == "extra_work" ? FaultKind::ExtraWork : FaultKind::HostDelay;
      f.rank = num_i(1);
      f.from_iter = num_i(2);
      (f.kind == FaultKind::HostDelay ? f.ms : f.factor) = num_d(3);
    } else if (k == "slow_link") {
      if (p.size() != 4) throw bad();
      f.kind = FaultKind::SlowLink;
      f.host_a = num_i(1);
      f.host_b = num_i(2);
      f.factor = num_d(3);
    } else if (k == "stage_imbalance") {
      if (p.size() != 3) throw bad();
      f.kind = FaultKind::StageImbalance;
      f.stage = num_i(1);
      f.factor = num_d(2);
    } else if (k == "slow_kernel") {
      if (p.size() != 3 || slow_kernel_index(p[1]) < 0) throw bad();
      f.kind = FaultKind::SlowKernel, f.count = slow_kernel_index(p[1]), f.factor = num_d(2);
    } else if (k == "slow_p2p") {
      if (p.size() != 2) throw bad();
      f.kind = FaultKind::SlowP2P, f.factor = num_d(1);
    } else if (k == "hang" || k == "crash") {
      if (p.size() != 3) throw bad();
      f.kind = k == "hang" ? FaultKind::Hang : FaultKind::Crash;
      f.rank = num_i(1);
      f.from_iter = num_i(2);
    } else {
      throw bad();
    }
  } catch (const std::invalid_argument&) {
    throw bad();
  } catch (const std::out_of_range&) {
    throw bad();
  }
  return f;
}

void validate(const Options& o) {
  const int world = o.layout.world();
  auto fail = [](const std::string& m) { throw std::invalid_argument("straggler-sim: " + m); };
  if (o.hosts < 1 || world % o.hosts) fail(fmt::format("--hosts {} must divide the world size {}", o.hosts, world));
  if (o.iterations < 1 || o.microbatches < 1 || o.layers < 1) fail("iterations, microbatches and layers must be >= 1");
  if (o.jitter < 0 || o.jitter > 0.3) fail("--jitter must be in [0, 0.3]");
  if (o.schedule != "1f1b" && o.schedule != "gpipe" && o.schedule != "interleaved")
    fail("--schedule must be 1f1b, gpipe or interleaved");
  if (o.schedule == "interleaved") {
    if (o.layout.pp < 2 || o.virtual_stages < 2) fail("--schedule interleaved needs pp >= 2 and --virtual-stages >= 2");
    if (o.microbatches % o.layout.pp) fail("--schedule interleaved needs microbatches a multiple of pp (as Megatron)");
    if (o.layers % o.virtual_stages) fail("--schedule interleaved needs layers a multiple of --virtual-stages");
  } else if (o.virtual_stages != 1) {
    fail("--virtual-stages needs --schedule interleaved");
  }
  if (o.dp_bytes < 1 || o.dp_bytes > (int64_t(1) << 36)) fail("--dp-bytes must be in [1, 2^36]");
  if (o.nodes_per_pod < 0) fail("--nodes-per-pod must be >= 0");
  if (o.clock_offset_ms < 0) fail("--clock-offset-ms must be >= 0");
  if (o.clock_drift_ppm < 0 || o.clock_drift_ppm > 1000) fail("--clock-drift-ppm must be in [0, 1000]");
  for (const Fault& f : o.faults) {
    if (f.rank >= world) fail(fmt::format("fault rank {} outside the world of {}", f.rank, world));
    if (f.kind == FaultKind::SlowLink && (f.host_a < 0 || f.host_b < 0 || f.host_a >= o.hosts || f.host_b >= o.hosts))
      fail("slow_link host index out of range");
    if (f.kind == FaultKind::StageImbalance && (f.stage < 0 || f.stage >= o.layout.pp)) fail("stage out of range");
    if (f.kind == FaultKind::SlowP2P && !(f.factor >= 1.0 && f.factor <= 100)) fail("slow_p2p FACTOR must be in [1, 100]");
    if (f.kind == FaultKind::SlowKernel && !(f.factor > 0 && f.factor <= 100)) fail("slow_kernel FACTOR must be in (0, 100]");
    if (f.rank < 0 && f.kind != FaultKind::SlowLink && f.kind != FaultKind::StageImbalance && f.kind != FaultKind::SlowP2P &&
        f.kind != FaultKind::SlowKernel && !is_pattern(f.kind))
      fail("fault rank < 0");
    if (f.from_iter < 0) fail("fault iteration < 0");
    if (!is_pattern(f.kind)) continue;
    const std::string spec = fault_kind_name(f.kind);
    if (f.rank < -1) fail(spec + " rank < 0 (use `all` for every rank)");
    if (f.kind == FaultKind::GcPause && !(f.every > 0 && f.ms > 0)) fail("gc_pause needs EVERY > 0 and MS > 0");
    if ((f.kind == FaultKind::Sync || f.kind == FaultKind::Compile) && !(f.ms > 0)) fail(spec + " needs MS > 0");
    if (f.kind == FaultKind::H2D && !(f.mib > 0 && f.mib <= 1024)) fail("h2d needs 0 < MIB <= 1024");
    if (f.kind == FaultKind::SmallKernels && (f.count < 1 || f.count > 100000)) fail("small_kernels needs 1 <= COUNT <= 100000");
    if (f.kind == FaultKind::Hotspot && !(f.share > 0 && f.share < 1)) fail("hotspot needs 0 < SHARE < 1");
    if (f.kind == FaultKind::SlowHost && !(f.us > 0 && f.us <= 1e6)) fail("slow_host needs 0 < US <= 1000000");
  }
}

RunStats generate(const Options& in) {
  Options opt = in;
  resolve_conventions(opt);
  if (opt.kineto) {  // Kineto writes one trace per process; NVTX payloads do not exist there
    if (in.per_host_files) throw std::invalid_argument("--format kineto writes one file per rank (no --per-host-files)");
    if (in.payloads) throw std::invalid_argument("--payloads is for --format nsys");
    opt.per_host_files = false;
  }
  validate(opt);
  if (opt.target_kernels > 0) {
    const int64_t per = std::max<int64_t>(1, kernels_per_iteration(opt));
    opt.iterations = int(std::max<int64_t>(1, (opt.target_kernels + per - 1) / per));
  }
  std::filesystem::create_directories(opt.out_dir);
  RunStats stats;
  stats.iterations = opt.iterations;
  auto t0 = std::chrono::steady_clock::now();
  const Simulation sim = simulate(opt);
  const Conventions cv = make_conventions(sim);
  const KinetoConventions kc = opt.kineto ? make_kineto_conventions(sim, cv) : KinetoConventions{};
  auto t1 = std::chrono::steady_clock::now();

  std::vector<RankCounts> counts(sim.world);
  for (int r = 0; r < sim.world; ++r)
    for (const Op& op : sim.ranks[r].ops) {
      if (op.pending) continue;  // launched, never completed: no kernel row
      counts[r].kernels += op.type == OpType::Compute || op.type == OpType::Coll;
      counts[r].nccl_kernels += op.type == OpType::Coll;
      counts[r].h2d_bytes += op.type == OpType::H2D ? op.bytes : 0;
    }
  for (const RankCounts& c : counts) stats.kernels += c.kernels;

  std::vector<FileSpec> files;
  const std::string dir = opt.out_dir + "/";
  if (opt.kineto) {
    files = kineto_files(sim, kc);
  } else if (opt.per_host_files) {
    for (int h = 0; h < opt.hosts; ++h) {
      FileSpec f{dir + topology::host_name(h) + ".sqlite", h, {}, true};
      for (int r = h * sim.gpus_per_host; r < (h + 1) * sim.gpus_per_host; ++r) f.ranks.push_back(r);
      files.push_back(std::move(f));
    }
  } else {
    for (int r = 0; r < sim.world; ++r)
      files.push_back({dir + fmt::format("rank_{}.sqlite", r), r / sim.gpus_per_host, {r}, false});
  }

  // One writer per file; files are independent, so the output does not depend on the thread count.
  int threads = opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min<int>(threads, int(files.size()));
  std::atomic<size_t> next{0};
  std::atomic<int64_t> rows{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto worker = [&]() {
    for (size_t i; (i = next++) < files.size();) {
      try {
        rows += opt.kineto ? write_kineto_file(sim, cv, kc, files[i]) : write_nsys_file(sim, cv, files[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  std::ofstream(opt.out_dir + "/truth.json")
      << truth_json(sim, cv, files, counts, opt.kineto ? kineto_conventions_json(sim, cv, kc, files) : std::string());
  auto t2 = std::chrono::steady_clock::now();
  stats.files = int(files.size());
  stats.rows = rows;
  stats.simulate_s = std::chrono::duration<double>(t1 - t0).count();
  stats.write_s = std::chrono::duration<double>(t2 - t1).count();
  return stats;
}

}  // namespace sim
