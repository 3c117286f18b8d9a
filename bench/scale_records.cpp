// Memory and time of the whole analysis at job sizes whose profiles would not fit on this disk
// (512 ranks x 100k collective ops would be ~46 GB of SQLite): the real driver (run_analysis:
// discovery, metrics, encoding, shipping to owners, inference, clocks, replay, verdict, HDF5 and
// JSON) with only the SQLite reader replaced by timelines synthesized in memory, one file at a
// time as the reader would deliver them.
//
// The synthetic job: TPxPPxDP in Megatron order (tp fastest, then dp, then pp), 8 ranks per host,
// each iteration ~1.2 s with 960 TP all-reduces, 16 p2p ops per pipeline link and 16 DP
// all-reduces, a compute kernel before each TP all-reduce. Members of one collective end together (NCCL); each
// arrives after its own random wait; rank `slow` arrives last everywhere (its compute is longer).
//
//   [mpirun -n P] scale_records RANKS OPS_PER_RANK DIR [TPxPPxDP [TP_OPS_PER_ITERATION]]
// Prints one JSON line per process: {"process", "processes", "ranks", "ops_per_rank", "seconds",
// "max_rss_mb"}; the straggler verdict goes to DIR/summary.json.
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "collectives/nccl_annotate.hpp"
#include "driver.hpp"
#include "transport.hpp"

namespace fs = std::filesystem;

namespace {

uint64_t mix(uint64_t x) {  // splitmix64: a hash for per-op jitter, the same on every process
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
int64_t jitter(uint64_t a, uint64_t b, uint64_t c, int64_t range) {
  return int64_t(mix(mix(mix(a) ^ b) ^ c) % uint64_t(range));
}

struct Job {
  int tp = 4, pp = 4, dp = 32, slow = -1;
  int tp_ops = 960;  // TP all-reduces per iteration (fewer: a job of many ranks with few ops each)
  int64_t iterations = 1;
};

struct K {
  int64_t start, end;
  int32_t stream;
  uint32_t name;
  uint8_t nccl;
};

// Per iteration: job.tp_ops TP all-reduces (layers x microbatches x fwd/bwd; 960 by default),
// kP2pOps p2p ops per pipeline link and kP2pOps DP all-reduces: about 1,000 ops, as in a Megatron step.
constexpr int kP2pOps = 16;
int64_t period(const Job& job) { return job.tp_ops * 1'200'000 + 1'000'000 + kP2pOps * 700'000 + 2'000'000; }
constexpr int64_t kEpoch = 1'700'000'000'000'000'000;
enum : int32_t { kCompute = 7, kTp = 11, kDp = 12, kPrev = 13, kNext = 14 };

ranks::RankTimeline synthesize(const Job& job, int rank, const std::string& path) {
  ranks::RankTimeline tl;
  tl.file = path, tl.host = "node-" + std::to_string(rank / 8), tl.device = rank % 8, tl.pid = 1000 + rank % 8;
  tl.source = {"synthetic", "1", "1"}, tl.utc_epoch_ns = kEpoch;
  const int tp_rank = rank % job.tp, dp_rank = (rank / job.tp) % job.dp, stage = rank / (job.tp * job.dp);
  const uint64_t tp_group = uint64_t(stage * job.dp + dp_rank), dp_group = uint64_t(stage * job.tp + tp_rank);
  const uint64_t chain = uint64_t(dp_rank * job.tp + tp_rank);
  const uint32_t ar = tl.names.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm *, unsigned long, ncclWork *)");
  const uint32_t p2p = tl.names.intern("ncclDevKernel_SendRecv(ncclDevComm *, unsigned long, ncclWork *)");
  const uint32_t gemm = tl.names.intern("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64");
  const bool slow = rank == job.slow;
  std::vector<K> ks;
  // A collective op: the shared end, this member's arrival after its own wait.
  auto coll = [&](int32_t stream, uint32_t name, int64_t end, uint64_t who, uint64_t i, uint64_t k) {
    const int64_t wait = slow ? 0 : 20'000 + jitter(who * 131 + uint64_t(rank), i, k, 200'000);
    ks.push_back({end - 80'000 - wait, end, stream, name, 1});
  };
  // Each group wanders on its own at iteration boundaries (up to 0.6 ms) and per op (up to 0.1 ms),
  // as groups on different hosts do: what tells communicators apart.
  auto wander = [](uint64_t group, int64_t i) { return jitter(group, uint64_t(i), 99, 600'000); };
  for (int64_t i = 0; i < job.iterations; ++i) {
    const int64_t t = (i + 1) * period(job);
    tl.nvtx.start.push_back(t), tl.nvtx.end.push_back(t + period(job));
    tl.nvtx.name.push_back(tl.names.intern("ProfilerStep#" + std::to_string(i)));
    tl.nvtx.domain.push_back(ranks::kNoName), tl.nvtx.tid.push_back(1);
    const uint64_t tg = 1 + tp_group, dg = 1 << 20 | dp_group;
    for (int j = 0; j < job.tp_ops; ++j) {
      const int64_t end = t + wander(tg, i) + (j + 1) * 1'200'000 + jitter(tg, uint64_t(i), uint64_t(j), 100'000);
      const int64_t compute_end = end - 300'000 - 5'000;
      ks.push_back({compute_end - (slow ? 800'000 : 600'000), compute_end, kCompute, gemm, 0});
      coll(kTp, ar, end, tg, uint64_t(i), uint64_t(j));
    }
    const int64_t tail = t + job.tp_ops * 1'200'000;
    for (int k = 0; k < kP2pOps; ++k) {  // p2p: both ends of a link finish together
      auto link_end = [&](int s) {
        const uint64_t lg = 1 << 22 | (chain * uint64_t(job.pp) + uint64_t(s));
        return tail + 1'000'000 + wander(lg, i) / 2 + k * 300'000 + jitter(lg, uint64_t(i), uint64_t(k), 100'000);
      };
      if (stage + 1 < job.pp) coll(kNext, p2p, link_end(stage), 7, uint64_t(i), uint64_t(k));
      if (stage > 0) coll(kPrev, p2p, link_end(stage - 1), 7, uint64_t(i), uint64_t(k));
      const int64_t dp_end = tail + 1'000'000 + kP2pOps * 300'000 + 800'000 + wander(dg, i) / 2 + k * 400'000 +
                             jitter(dg, uint64_t(i), uint64_t(k), 100'000);
      coll(kDp, ar, dp_end, dg, uint64_t(i), uint64_t(k));
    }
  }
  std::sort(ks.begin(), ks.end(), [](const K& a, const K& b) { return a.start < b.start; });
  auto& kc = tl.kernels;
  for (const auto& k : ks) {
    kc.start.push_back(k.start), kc.end.push_back(k.end), kc.stream.push_back(k.stream), kc.name.push_back(k.name);
    kc.launch.push_back(k.start - 10'000), kc.launch_tid.push_back(1), kc.launch_dur.push_back(5'000);
  }
  tl.launches_total = int64_t(ks.size());
  tl.capture_start = 0, tl.capture_end = (job.iterations + 2) * period(job);
  return tl;
}

int run(straggler::Transport& t, const Job& job, int ranks, int64_t ops_per_rank, const fs::path& dir) {
  if (t.root()) {
    fs::remove_all(dir / "in");
    fs::create_directories(dir / "in");
    for (int r = 0; r < ranks; ++r) std::ofstream(dir / "in" / ("rank_" + std::to_string(r) + ".sqlite"));
  }
  t.barrier();
  straggler::Options opt;
  opt.inputs = {(dir / "in").string()};
  opt.output = (dir / "out.h5").string();
  opt.summary = (dir / "summary.json").string();
  opt.quiet = true;
  opt.timings = std::getenv("SCALE_TIMINGS") != nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const int status = straggler::run_analysis(t, opt, [&](const std::string& path) {
    const std::string name = fs::path(path).stem().string();
    std::vector<ranks::RankTimeline> tls{synthesize(job, std::stoi(name.substr(5)), path)};
    collectives::annotate_nccl(tls.front());  // what the driver's reader does after any format
    return tls;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("{\"process\": %d, \"processes\": %d, \"ranks\": %d, \"ops_per_rank\": %lld, \"seconds\": %.3f, "
              "\"max_rss_mb\": %.1f, \"status\": %d}\n",
              t.rank(), t.size(), ranks, static_cast<long long>(ops_per_rank), seconds, double(ru.ru_maxrss) / 1024,
              status);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: [mpirun -n P] scale_records RANKS OPS_PER_RANK DIR [TPxPPxDP [TP_OPS_PER_ITERATION]]\n";
    return 2;
  }
  const int ranks = std::stoi(argv[1]);
  const int64_t ops = std::stoll(argv[2]);
  Job job;
  if (argc > 4) std::sscanf(argv[4], "%dx%dx%d", &job.tp, &job.pp, &job.dp);
  if (argc > 5) job.tp_ops = std::max(1, std::atoi(argv[5]));
  if (job.tp * job.pp * job.dp != ranks) {
    std::cerr << "scale_records: the layout must cover exactly RANKS ranks\n";
    return 2;
  }
  job.slow = ranks / 2 + 5;
  // ops per iteration: TP + DP + per pipeline link (1 or 2 links)
  job.iterations = std::max<int64_t>(3, ops / (job.tp_ops + kP2pOps * (job.pp > 2 ? 3 : 2)));
  if (!straggler::started_by_mpi_launcher()) {
    auto local = straggler::local_transport();
    return run(*local, job, ranks, ops, argv[3]);
  }
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    auto mpi = straggler::mpi_transport(MPI_COMM_WORLD);
    status = run(*mpi, job, ranks, ops, argv[3]);
  }
  MPI_Finalize();
  return status;
}
