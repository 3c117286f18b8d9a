// straggler-sim's root-cause patterns (gc_pause, sync, nccl_compute, h2d, small_kernels, compile,
// hotspot, slow_host): each run shows in the SQLite export what its pattern promises, on the planted
// rank only; truth.json lists it under "findings"; healthy output is what it always was.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sim.hpp"
#include "sim_fixture.hpp"

namespace {

using namespace simtest;

constexpr int kIters = 8, kMicro = 4, kLayers = 4;  // tiny(): 2x2x2, 2 hosts; these defaults

sim::Options run8(const fs::path& dir, const std::vector<std::string>& faults) {
  sim::Options o = tiny(dir);
  o.iterations = kIters;
  for (const auto& f : faults) o.faults.push_back(sim::parse_fault(f));
  return o;
}

struct Span {
  int64_t start, end;
};
std::vector<Span> spans(const std::string& f, const std::string& sql) {
  std::vector<Span> v;
  for (auto& r : query(f, sql)) v.push_back({std::stoll(r[0]), std::stoll(r[1])});
  return v;
}
std::vector<Span> iterations(const std::string& f) {
  return spans(f, "SELECT start, end FROM NVTX_EVENTS WHERE domainId = 0 AND text LIKE 'ProfilerStep#%' ORDER BY start");
}
// Stretches of at least min_ns where the GPU runs nothing (no kernel, no copy on any stream).
std::vector<Span> gpu_idle(const std::string& f, int64_t min_ns) {
  auto busy = spans(f, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                       "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY 1");
  std::vector<Span> idle;
  int64_t end = busy.at(0).end;
  for (const Span& b : busy) {
    if (b.start - end >= min_ns) idle.push_back({end, b.start});
    end = std::max(end, b.end);
  }
  return idle;
}
int iteration_of(const std::vector<Span>& its, int64_t t) {
  for (size_t i = 0; i < its.size(); ++i)
    if (its[i].start <= t && t <= its[i].end) return int(i);
  return -1;
}
std::string kernels_named(const std::string& name) {
  return "SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE "
         "s.value = '" + name + "' ORDER BY k.start";
}
// Compute kernels of the microbatches (not NCCL, not the optimizer): total duration and flash_bwd's part.
std::pair<int64_t, int64_t> microbatch_compute(const std::string& f) {
  const auto r = query(f, "SELECT sum(k.end - k.start), sum(CASE WHEN s.value LIKE 'flash_bwd%' THEN k.end - k.start "
                          "ELSE 0 END) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                          "WHERE s.value NOT LIKE 'nccl%' AND s.value <> 'multi_tensor_apply_kernel'");
  return {std::stoll(r.at(0).at(0)), std::stoll(r.at(0).at(1))};
}
std::vector<std::string> compute_durations(const std::string& f) {
  std::vector<std::string> v;
  for (auto& r : query(f, "SELECT k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                          "k.shortName WHERE s.value NOT LIKE 'nccl%' ORDER BY k.start"))
    v.push_back(r[0]);
  return v;
}
const std::string kLaunches = "SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = "
                              "r.nameId WHERE s.value = 'cudaLaunchKernel_v7000' ORDER BY r.start";


// The generator before the patterns (commit 019183a) wrote exactly these rows for this run: a run
// without them must not change. (A deliberate change of the healthy model updates the constant.)
TEST(SimPlants, HealthyOutputIsUnchanged) {
  const fs::path dir = tmp_dir("plants_golden");
  sim::Options o = tiny(dir);
  o.iterations = 4;
  sim::generate(o);
  EXPECT_EQ(content_hash(dir, 8), 0x5b5090d248a50e07ull);
  const std::string truth = slurp((dir / "truth.json").string());
  // The expected block ends with the desync rows, then the pipeline's truth (added with issue 20).
  EXPECT_NE(truth.find("\"desync\": [],\n  \"pipeline\": {\"pp\": 2, \"microbatches\": 4, \"virtual_stages\": 1, "
                       "\"schedule\": \"1f1b\""), std::string::npos) << truth;
  EXPECT_NE(truth.find("\"causes\": []}},\n \"findings\": []}\n"), std::string::npos) << truth;
  fs::remove_all(dir);
}

TEST(SimPlants, GcPauseIdlesTheGpuInsideIterations) {
  const fs::path dir = tmp_dir("plants_gc");
  sim::generate(run8(dir, {"gc_pause:1:3:40"}));
  // Pauses from iteration 1 on, in iteration 1 + floor((k + 0.4) * 3): 2 and 5 of 0..7.
  const auto its = iterations(rank_file(dir, 1));
  ASSERT_EQ(its.size(), size_t(kIters));
  std::vector<int> where;
  for (const Span& g : gpu_idle(rank_file(dir, 1), 5'000'000)) {
    EXPECT_NEAR(double(g.end - g.start), 40e6, 3e6);
    const int it = iteration_of(its, g.start);
    ASSERT_GE(it, 0);
    EXPECT_GT(g.start - its[it].start, 5'000'000) << "a GC pause inside the iteration, not at its start";
    where.push_back(it);
  }
  EXPECT_EQ(where, (std::vector<int>{2, 5}));
  for (int r : {0, 2, 4, 5, 7}) EXPECT_TRUE(gpu_idle(rank_file(dir, r), 5'000'000).empty()) << r;
  // The host issues nothing during a pause: a CPU gap of at least the GPU's.
  const auto launch = spans(rank_file(dir, 1), "SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start");
  int64_t longest = 0;
  for (size_t i = 1; i < launch.size(); ++i) longest = std::max(longest, launch[i].start - launch[i - 1].end);
  EXPECT_GT(longest, 38'000'000);
  fs::remove_all(dir);
}

TEST(SimPlants, SyncAfterEveryLayer) {
  const fs::path dir = tmp_dir("plants_sync");
  sim::generate(run8(dir, {"sync:1:2"}));
  const std::string f = rank_file(dir, 1);
  const int64_t per_iter = kMicro * 2 * kLayers + 1;  // every forward and backward layer, and loss.item()
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 3"), kIters * per_iter);
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE "
                      "s.value = 'cudaStreamSynchronize_v3020' AND EXISTS (SELECT 1 FROM "
                      "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y WHERE y.correlationId = r.correlationId)"),
            kIters * per_iter);
  EXPECT_EQ(iterations(f).size(), size_t(kIters));  // the syncs do not end iterations
  EXPECT_EQ(scalar(rank_file(dir, 0), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"), kIters);
  // Each sync drains the GPU, then 2 ms of host work: the GPU idles ~2 ms after each.
  const auto idle = gpu_idle(f, 1'500'000);
  EXPECT_GE(int64_t(idle.size()), kIters * (per_iter - 1) * 9 / 10);
  for (const Span& g : idle) EXPECT_LT(g.end - g.start, 2'400'000);
  fs::remove_all(dir);
}

TEST(SimPlants, NcclComputeSerializesOnTheComputeStream) {
  const fs::path dir = tmp_dir("plants_nccl");
  sim::generate(run8(dir, {"nccl_compute:1"}));
  const std::string f = rank_file(dir, 1);
  const auto truth = per_rank(slurp((dir / "truth.json").string()));
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM (" + kNcclKernels + ") WHERE streamId = 7"), truth.at(1).nccl);
  EXPECT_EQ(scalar(f, "SELECT count(DISTINCT streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 1);
  // One stream: no two kernels overlap, NCCL and compute alternate in order.
  const auto all = spans(f, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start");
  for (size_t i = 1; i < all.size(); ++i) ASSERT_GE(all[i].start, all[i - 1].end) << i;
  // The peers keep their NCCL streams, and the matched TP all-reduces still end together (ranks 0
  // and 1 share host 0's clock): the data flow decides, whatever stream rank 1 runs them on.
  EXPECT_EQ(scalar(rank_file(dir, 0), "SELECT count(*) FROM (" + kNcclKernels + ") WHERE streamId = 7"), 0);
  const auto peer = spans(rank_file(dir, 0), kNcclKernels + " AND k.streamId = 13 ORDER BY k.start");
  std::vector<int64_t> ends;
  for (const Span& k : spans(f, kNcclKernels + " AND s.value LIKE '%AllReduce%'")) ends.push_back(k.end);
  std::sort(ends.begin(), ends.end());
  ASSERT_EQ(ends.size(), peer.size() + size_t(4 * kIters));  // its TP all-reduces and 4 DP buckets per iteration
  for (const Span& k : peer) {
    const auto it = std::lower_bound(ends.begin(), ends.end(), k.end - 3000);
    EXPECT_TRUE(it != ends.end() && *it <= k.end + 3000) << k.end;
  }
  fs::remove_all(dir);
}

TEST(SimPlants, H2dCopiesBeforeEveryMicrobatch) {
  const fs::path dir = tmp_dir("plants_h2d");
  sim::generate(run8(dir, {"h2d:1:64"}));
  const std::string f = rank_file(dir, 1);
  const int64_t big = 64 << 20, batch = 16 << 20;
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND bytes = " +
                      std::to_string(big)), kIters * kMicro);
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND bytes = " +
                      std::to_string(batch)), kIters);
  EXPECT_EQ(scalar(rank_file(dir, 0), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE bytes = " +
                                          std::to_string(big)), 0);
  // ~24 GB/s, a cudaMemcpyAsync each, on the compute stream: the next kernel there waits for it.
  const auto copies = spans(f, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE bytes = " + std::to_string(big));
  for (const Span& c : copies) {
    EXPECT_NEAR(double(c.end - c.start), double(big) / 24e9 * 1e9, 0.2 * double(big) / 24e9 * 1e9);
    EXPECT_GE(scalar(f, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE streamId = 7 AND start >= " +
                        std::to_string(c.start)), c.end);
  }
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING "
                      "(correlationId) JOIN StringIds s ON s.id = r.nameId WHERE s.value = 'cudaMemcpyAsync_v3020' "
                      "AND m.streamId = 7 AND m.bytes = " + std::to_string(big)), kIters * kMicro);
  const std::string truth = slurp((dir / "truth.json").string());
  EXPECT_NE(truth.find("\"memcpy_h2d_bytes\": " + std::to_string(kIters * (batch + kMicro * big))), std::string::npos);
  fs::remove_all(dir);
}

TEST(SimPlants, SmallKernelsAfterEachForward) {
  const fs::path dir = tmp_dir("plants_small");
  const fs::path ref = tmp_dir("plants_small_ref");
  sim::generate(run8(dir, {"small_kernels:1:50"}));
  sim::generate(run8(ref, {}));
  const std::string f = rank_file(dir, 1);
  const auto small = spans(f, kernels_named("elementwise_kernel"));
  ASSERT_EQ(small.size(), size_t(kIters * kMicro * 50));
  for (const Span& k : small) EXPECT_LT(k.end - k.start, 10'000);  // (2-4 us, 1.5x in the warm-up)
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM (" + kernels_named("elementwise_kernel") + ") WHERE end - start BETWEEN "
                      "2000 AND 4000 AND start > (SELECT min(start) FROM NVTX_EVENTS WHERE text = 'ProfilerStep#1')"),
            (kIters - 1) * kMicro * 50);
  // Each its own launch, longer than the kernel.
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                      "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId) JOIN StringIds n ON n.id = r.nameId "
                      "WHERE s.value = 'elementwise_kernel' AND n.value = 'cudaLaunchKernel_v7000' AND "
                      "r.end - r.start BETWEEN 6000 AND 9000 AND r.end - r.start > k.end - k.start"),
            kIters * kMicro * 50);
  EXPECT_EQ(scalar(rank_file(dir, 0), "SELECT count(*) FROM (" + kernels_named("elementwise_kernel") + ")"), 0);
  EXPECT_EQ(per_rank(slurp((dir / "truth.json").string())).at(1).kernels,
            per_rank(slurp((ref / "truth.json").string())).at(1).kernels + kIters * kMicro * 50);
  // A name no other kernel has.
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM StringIds WHERE value = 'elementwise_kernel'"), 1);
  EXPECT_EQ(scalar(f, "SELECT count(DISTINCT k.demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON "
                      "s.id = k.shortName WHERE s.value = 'elementwise_kernel'"), 1);
  EXPECT_EQ(scalar(rank_file(ref, 1), "SELECT count(*) FROM StringIds WHERE value = 'elementwise_kernel'"), 0);
  fs::remove_all(dir);
  fs::remove_all(ref);
}

TEST(SimPlants, CompileSlowsOnlyTheFirstIteration) {
  const fs::path dir = tmp_dir("plants_compile"), ref = tmp_dir("plants_compile_ref");
  sim::generate(run8(dir, {"compile:1:50"}));
  sim::generate(run8(ref, {}));
  const auto its = iterations(rank_file(dir, 1)), base = iterations(rank_file(ref, 1));
  ASSERT_EQ(its.size(), size_t(kIters));
  const double steady = double(its[3].end - its[3].start);
  EXPECT_GT(double(its[0].end - its[0].start), 3.0 * steady);
  for (int i = 1; i < kIters; ++i)
    EXPECT_NEAR(double(its[i].end - its[i].start), double(base[i].end - base[i].start), 0.05 * steady) << i;
  // One stall before each layer's first forward kernel (first call), all in iteration 0.
  const auto idle = gpu_idle(rank_file(dir, 1), 30'000'000);
  EXPECT_EQ(idle.size(), size_t(kLayers));
  for (const Span& g : idle) EXPECT_EQ(iteration_of(its, g.start), 0);
  fs::remove_all(dir);
  fs::remove_all(ref);
}

TEST(SimPlants, HotspotKeepsTheComputeTime) {
  const fs::path dir = tmp_dir("plants_hot"), ref = tmp_dir("plants_hot_ref");
  sim::generate(run8(dir, {"hotspot:1:0.6"}));
  sim::generate(run8(ref, {}));
  const auto [total, flash] = microbatch_compute(rank_file(dir, 1));
  const auto [ref_total, ref_flash] = microbatch_compute(rank_file(ref, 1));
  EXPECT_GT(double(flash) / double(total), 0.55);
  EXPECT_LT(double(flash) / double(total), 0.65);
  EXPECT_LT(double(ref_flash) / double(ref_total), 0.2);
  EXPECT_NEAR(double(total), double(ref_total), 0.01 * double(ref_total));
  const std::string count = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL";
  EXPECT_EQ(scalar(rank_file(dir, 1), count), scalar(rank_file(ref, 1), count));
  fs::remove_all(dir);
  fs::remove_all(ref);
}

TEST(SimPlants, SlowHostStarvesTheGpu) {
  const fs::path dir = tmp_dir("plants_host"), ref = tmp_dir("plants_host_ref");
  sim::generate(run8(dir, {"slow_host:1:400"}));
  sim::generate(run8(ref, {}));
  const std::string f = rank_file(dir, 1);
  for (const Span& l : spans(f, kLaunches)) EXPECT_NEAR(double(l.end - l.start), 400e3, 0.03 * 400e3);
  for (const Span& l : spans(rank_file(dir, 0), kLaunches)) EXPECT_LE(l.end - l.start, 8000);
  // Most kernels start as soon as their launch returns (the GPU waits for the host).
  EXPECT_GT(double(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                             "USING (correlationId) WHERE k.streamId = 7 AND k.start - r.end <= 10000")),
            0.8 * double(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE streamId = 7")));
  EXPECT_EQ(scalar(rank_file(ref, 1), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                                      "CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId) WHERE k.streamId = 7 AND "
                                      "k.start - r.end <= 10000"), 0);
  const auto its = iterations(f), base = iterations(rank_file(ref, 1));
  EXPECT_GT(double(its[4].end - its[4].start), 1.4 * double(base[4].end - base[4].start));
  fs::remove_all(dir);
  fs::remove_all(ref);
}

// A pattern draws from its own random stream: the rank's kernel durations stay those of the healthy
// run of the same seed (hotspot and small_kernels change durations or kernels by design).
TEST(SimPlants, PatternsLeaveTheOtherDrawsAlone) {
  const fs::path ref = tmp_dir("plants_draws_ref"), dir = tmp_dir("plants_draws");
  sim::generate(run8(ref, {}));
  const auto base = compute_durations(rank_file(ref, 1));
  for (const char* f : {"gc_pause:1:2:10", "sync:1:1", "nccl_compute:1", "h2d:1:32", "compile:1:20", "slow_host:1:50"}) {
    sim::generate(run8(dir, {f}));
    auto d = compute_durations(rank_file(dir, 1));
    std::sort(d.begin(), d.end());
    auto b = base;
    std::sort(b.begin(), b.end());
    EXPECT_EQ(d, b) << f;
    fs::remove_all(dir);
  }
  fs::remove_all(ref);
}

TEST(SimPlants, TruthListsFindingsNotStragglers) {
  const fs::path dir = tmp_dir("plants_truth");
  sim::generate(run8(dir, {"gc_pause:all:2.5:5", "sync:3:1", "nccl_compute:2", "h2d:4:8", "small_kernels:5:3",
                           "compile:6:5", "hotspot:7:0.5", "slow_host:0:20", "host_delay:1:2:3", "extra_work:2:1:1.5"}));
  const std::string truth = slurp((dir / "truth.json").string());
  EXPECT_NE(truth.find(R"("faults": [{"kind": "gc_pause", "rank": -1, "every": 2.5, "ms": 5}, )"
                       R"({"kind": "sync", "rank": 3, "ms": 1}, {"kind": "nccl_compute", "rank": 2}, )"
                       R"({"kind": "h2d", "rank": 4, "mib": 8}, {"kind": "small_kernels", "rank": 5, "count": 3}, )"
                       R"({"kind": "compile", "rank": 6, "ms": 5}, {"kind": "hotspot", "rank": 7, "share": 0.5}, )"
                       R"({"kind": "slow_host", "rank": 0, "us": 20}, )"),
            std::string::npos) << truth;
  EXPECT_NE(truth.find(R"("findings": [{"finding": "gc_pause", "ranks": [0,1,2,3,4,5,6,7], "fault": "gc_pause"}, )"
                       R"({"finding": "excessive_sync", "ranks": [3], "fault": "sync"}, )"
                       R"({"finding": "nccl_serialization", "ranks": [2], "fault": "nccl_compute"}, )"
                       R"({"finding": "excessive_h2d", "ranks": [4], "fault": "h2d"}, )"
                       R"({"finding": "small_kernels", "ranks": [5], "fault": "small_kernels"}, )"
                       R"({"finding": "module_loading", "ranks": [6], "fault": "compile"}, )"
                       R"({"finding": "kernel_hotspot", "ranks": [7], "fault": "hotspot"}, )"
                       R"({"finding": "cpu_bottleneck", "ranks": [0], "fault": "slow_host"}, )"
                       R"({"finding": "gpu_bubbles", "ranks": [1], "fault": "host_delay"}, )"
                       R"({"finding": "comm_imbalance", "ranks": [2], "fault": "extra_work"}]})"),
            std::string::npos) << truth;
  EXPECT_NE(truth.find(R"("stragglers": [{"rank": 1, "cause": "host_delay", "onset_iteration": 2}, )"
                       R"({"rank": 2, "cause": "extra_work", "onset_iteration": 1}])"),
            std::string::npos) << truth;
  // Every process wrote what truth counts.
  for (auto& [r, t] : per_rank(truth)) {
    EXPECT_EQ(scalar(rank_file(dir, r), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), t.kernels) << r;
    EXPECT_EQ(t.iterations, kIters) << r;
  }
  fs::remove_all(dir);
}

TEST(SimPlants, SpecsParseAndAllIsOnlyForPatterns) {
  const sim::Fault g = sim::parse_fault("gc_pause:all:2.5:40");
  EXPECT_EQ(g.kind, sim::FaultKind::GcPause);
  EXPECT_EQ(g.rank, -1);
  EXPECT_DOUBLE_EQ(g.every, 2.5);
  EXPECT_DOUBLE_EQ(g.ms, 40);
  EXPECT_TRUE(g.on(0) && g.on(7));
  EXPECT_EQ(sim::parse_fault("nccl_compute:3").rank, 3);
  EXPECT_EQ(sim::parse_fault("small_kernels:2:100").count, 100);
  EXPECT_DOUBLE_EQ(sim::parse_fault("h2d:1:0.5").mib, 0.5);
  EXPECT_DOUBLE_EQ(sim::parse_fault("hotspot:1:0.6").share, 0.6);
  EXPECT_DOUBLE_EQ(sim::parse_fault("slow_host:all:150").us, 150);
  for (const char* bad : {"slow_gpu:all:1:1.5", "host_delay:all:1:5", "crash:all:2", "gc_pause:1:3", "gc_pause:-1:3:40",
                          "sync:1", "nccl_compute:1:2", "h2d:1:0", "small_kernels:1:x", "compile:one:5", "slow_host:1:-5"})
    EXPECT_THROW(sim::parse_fault(bad), std::invalid_argument) << bad;
  for (const char* bad : {"hotspot:1:1.5", "small_kernels:1:0", "h2d:1:4096", "sync:8:1"}) {
    sim::Options o = tiny(tmp_dir("plants_bad"));
    o.faults.push_back(sim::parse_fault(bad));
    EXPECT_THROW(sim::validate(o), std::invalid_argument) << bad;
  }
  for (sim::FaultKind k = sim::FaultKind::GcPause; k <= sim::FaultKind::SlowHost; k = sim::FaultKind(int(k) + 1)) {
    EXPECT_TRUE(sim::is_pattern(k));
    EXPECT_EQ(sim::parse_fault(std::string(sim::fault_kind_name(k)) + (k == sim::FaultKind::NcclCompute ? ":all"
                               : k == sim::FaultKind::GcPause ? ":all:1:1" : ":all:1")).kind, k);
  }
  EXPECT_FALSE(sim::is_pattern(sim::FaultKind::Crash));
}

// What a rank's conventions say (truth.json, random conventions): its pid, file and compute stream.
struct Proc {
  std::string file;
  int64_t pid = 0, compute = 0;
  std::string streams;
};
std::map<int, Proc> procs(const std::string& truth) {
  std::map<int, Proc> m;
  std::regex re(R"re(\{"rank": (\d+), "pid": (\d+), "device": \d+, "streams": \{"compute": (\d+)([^}]*)\})re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), re), end; it != end; ++it)
    m[std::stoi((*it)[1])] = {"", std::stoll((*it)[2]), std::stoll((*it)[3]), (*it)[4]};
  std::regex fre(R"re(\{"file": "([^"]+)", "host": "[^"]+", "ranks": \[([0-9,]*)\]\})re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), fre), end; it != end; ++it) {
    std::stringstream ss((*it)[2].str());
    for (std::string r; std::getline(ss, r, ',');) m[std::stoi(r)].file = (*it)[1];
  }
  return m;
}

// Every pattern under --conventions random (per-process stream ids, per-host files, graphs, shuffled
// rows): the counts still match truth, and nccl_compute's NCCL kernels are on its compute stream.
TEST(SimPlants, RandomConventionsWithEveryPattern) {
  int seed = 30;
  for (const char* f : {"gc_pause:all:2:5", "sync:3:1", "nccl_compute:all", "nccl_compute:5", "h2d:2:16",
                        "small_kernels:all:5", "compile:4:5", "hotspot:6:0.6", "slow_host:all:200"}) {
    const fs::path dir = tmp_dir("plants_conv");
    sim::Options o = tiny(dir);
    o.iterations = 4;
    o.seed = uint64_t(++seed);
    o.random_conventions = true;
    o.faults.push_back(sim::parse_fault(f));
    ASSERT_NO_THROW(sim::generate(o)) << f;
    const std::string truth = slurp((dir / "truth.json").string());
    const auto pr = per_rank(truth);
    const auto pp = procs(truth);
    ASSERT_EQ(pp.size(), 8u) << f;
    const sim::Fault fault = sim::parse_fault(f);
    for (auto& [r, p] : pp) {
      const std::string file = (dir / p.file).string(), in = " WHERE globalPid / 16777216 % 16777216 = " + std::to_string(p.pid);
      EXPECT_EQ(scalar(file, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in), pr.at(r).kernels) << f << " " << r;
      EXPECT_EQ(pr.at(r).iterations, 4) << f << " " << r;
      if (fault.kind != sim::FaultKind::NcclCompute) continue;
      const std::string nccl = "SELECT count(*) FROM (" + kNcclKernels + ") k" + in;
      EXPECT_EQ(scalar(file, nccl + " AND streamId = " + std::to_string(p.compute)), fault.on(r) ? pr.at(r).nccl : 0)
          << f << " " << r;
      EXPECT_EQ(p.streams.empty(), fault.on(r)) << f << " " << r << ": only the compute stream is created";
    }
    fs::remove_all(dir);
  }
}

// A crash with NCCL on the compute stream: the blocked ranks still abort each communicator.
TEST(SimPlants, CrashWithNcclOnTheComputeStream) {
  for (bool random : {false, true}) {
    const fs::path dir = tmp_dir("plants_crash");
    sim::Options o = tiny(dir);
    o.iterations = 4;
    o.random_conventions = random;
    o.pinned.files = true;  // per-rank files
    o.faults = {sim::parse_fault("nccl_compute:all"), sim::parse_fault("crash:5:2")};
    sim::generate(o);
    const std::string truth = slurp((dir / "truth.json").string());
    EXPECT_NE(truth.find(R"("root_cause": [{"kind": "crash", "rank": 5)"), std::string::npos);
    const auto pp = random ? procs(truth) : std::map<int, Proc>{};
    for (int r : {0, 4}) {
      const int64_t pid = random ? pp.at(r).pid : 1000 + r % 4;
      EXPECT_EQ(scalar(rank_file(dir, r), "SELECT count(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
                                          "WHERE s.value = 'ncclCommAbort' AND e.globalTid / 16777216 % 16777216 = " +
                                          std::to_string(pid)), 3) << r << (random ? " random" : " fixed");
    }
    fs::remove_all(dir);
  }
}

}  // namespace
