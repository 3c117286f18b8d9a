// Iterations without NVTX step markers: the repeating unit of the NCCL sequence (iterations.hpp).
// Synthetic timelines with known answers, the real 2-rank torchrun captures (skipped when
// ../shared/data/real is absent), and generated runs whose markers were deleted.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "read_annotated.hpp"
#include "ranks/iterations.hpp"
#include "ranks/metrics.hpp"
#include "ranks/nsys_reader.hpp"

using namespace ranks;
namespace fs = std::filesystem;

#include "timeline_builder.hpp"
#include "shell.hpp"

namespace {

constexpr const char* kSendRecv = "ncclDevKernel_SendRecv";
constexpr int64_t kMs = 1'000'000;

struct Builder : TimelineBuilder {
  // One collective per gap (ms), a short kernel each, all of one name on one stream.
  void collectives(const std::vector<double>& gaps_ms, int64_t t0 = 0) {
    int64_t t = t0;
    for (double g : gaps_ms) {
      kernel(t, t + 100'000, kSendRecv, true);
      t += int64_t(g * kMs);
    }
    kernel(t, t + 100'000, kSendRecv, true);
  }
};

std::vector<Iteration> iterations(const RankTimeline& tl, IterationSource* src) {
  return find_iterations(tl, IterationMarker{}, src);
}

double median_step_ms(const std::vector<Iteration>& its) {
  std::vector<double> v;
  for (const auto& it : its)
    if (!it.warmup) v.push_back(double(it.step_ns) / kMs);
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string real(const std::string& name) { return std::string(SS_SHARED_DIR) + "/data/real/" + name; }

#define REQUIRE_REAL(name) \
  if (!fs::exists(real(name))) GTEST_SKIP() << real(name) << " absent (real captures live in ../shared/data/real)"

// Binaries of this build: <build>/tests/test_iterations -> <build>/src/...
fs::path built(const std::string& rel) { return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / rel; }

using testsh::sh;

}  // namespace

// --- synthetic timelines ---

TEST(Iterations, MarkersPresentAreUsedUnchanged) {
  Builder b;
  // 4 marked steps of 20 ms, each with the alternating collectives of the FSDP capture inside.
  for (int i = 0; i < 4; ++i) {
    const int64_t t = i * 20 * kMs;
    b.marker(t, t + 19 * kMs, ("ProfilerStep#" + std::to_string(i)).c_str());
    b.kernel(t + kMs, t + 2 * kMs, kSendRecv, true, 7, t + kMs / 2);
    b.kernel(t + 8 * kMs, t + 9 * kMs, kSendRecv, true, 7, t + 7 * kMs);
  }
  IterationSource src;
  auto its = iterations(b.tl, &src);
  EXPECT_EQ(src, IterationSource::NvtxMarker);
  ASSERT_EQ(its.size(), 4u);
  EXPECT_EQ(its[0].number, 0);
  EXPECT_TRUE(its[0].warmup);
  EXPECT_EQ(its[1].step_ns, 20 * kMs);
  EXPECT_EQ(its[3].step_ns, 19 * kMs);  // the last marked step keeps its marker's length
}

TEST(Iterations, OneNameAndStreamWithAlternatingGapsIsPeriodTwo) {
  // The real FSDP capture in miniature: gaps alternate 6.3 and 10.4 ms, with 0.2 ms of noise.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.2);
  std::vector<double> gaps;
  for (int i = 0; i < 32; ++i) gaps.push_back((i % 2 ? 10.4 : 6.3) + noise(rng));
  Builder b;
  b.collectives(gaps);
  auto p = collective_period_of(b.tl);
  EXPECT_EQ(p.name_period, 1u);
  EXPECT_EQ(p.period, 2u);
  IterationSource src;
  auto its = iterations(b.tl, &src);
  EXPECT_EQ(src, IterationSource::CollectivePeriod);
  ASSERT_EQ(its.size(), 16u);  // 33 collectives: 16 units of 2, the 33rd starts the cut-off one
  EXPECT_NEAR(median_step_ms(its), 16.7, 0.5);
  for (const auto& it : its) {  // the warm-up unit runs from its first collective only
    if (it.warmup) continue;
    EXPECT_GT(it.step_ns, 15 * kMs);
  }
}

TEST(Iterations, LongerUnitWithEqualSubPatternsIsFound) {
  // 4 quick collectives then a long gap (an optimizer step): every 5 collectives, 1 ms jitter-free.
  std::vector<double> gaps;
  for (int i = 0; i < 60; ++i) gaps.push_back(i % 5 == 4 ? 30.0 : 2.0);
  Builder b;
  b.collectives(gaps);
  EXPECT_EQ(collective_period_of(b.tl).period, 5u);
}

TEST(Iterations, SlowWarmUpUnitDoesNotHideTheUnit) {
  // The unit of 5 as above, but the first one stalls 1.2 s (torch.compile, module loading): the
  // timing score leaves the warm-up unit out, so the unit is still found, and it is iteration 0.
  std::vector<double> gaps;
  for (int i = 0; i < 60; ++i) gaps.push_back(i % 5 == 4 ? 30.0 : 2.0);
  gaps[1] += 1200;
  Builder b;
  b.collectives(gaps);
  EXPECT_EQ(collective_period_of(b.tl).period, 5u);
  IterationSource src;
  const auto its = iterations(b.tl, &src);
  ASSERT_EQ(its.size(), 12u);
  EXPECT_TRUE(its[0].warmup);
  EXPECT_NEAR(double(its[0].step_ns) / kMs, 1208.1, 1e-6);  // its first collective's start to its last's end
  EXPECT_NEAR(median_step_ms(its), 38, 1e-6);
  // The same stall in a later unit (a checkpoint save, a GC pause) is a one-off: the timing score
  // leaves the largest 5% of differences out, so the unit is still 5 and that unit is a long one.
  std::vector<double> late = gaps;
  late[1] -= 1200, late[31] += 1200;
  Builder c;
  c.collectives(late);
  EXPECT_EQ(collective_period_of(c.tl).period, 5u);
  // Stalls in most units are no one-off: the run is irregular.
  std::vector<double> noisy = gaps;
  uint64_t x = 88172645463325252ull;  // xorshift: stalls of 0-40 ms in a third of the gaps, no period
  for (size_t i = 1; i < noisy.size(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    if (x % 3 == 0) noisy[i] += double(x % 4000) / 100.0;
  }
  Builder d;
  d.collectives(noisy);
  EXPECT_EQ(collective_period_of(d.tl).period, 0u);
}

TEST(Iterations, RegularSingleCollectiveStepsStayPeriodOne) {
  // One collective per 10 ms step with 2% noise and a 15% slowdown from step 20: still period 1.
  for (unsigned seed = 1; seed <= 10; ++seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0, 0.2);
    std::vector<double> gaps;
    for (int i = 0; i < 40; ++i) gaps.push_back((i < 20 ? 10.0 : 11.5) + noise(rng));
    Builder b;
    b.collectives(gaps);
    EXPECT_EQ(collective_period_of(b.tl).period, 1u) << "seed " << seed;
  }
}

TEST(Iterations, IrregularTimingGivesNoIterations) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> gap(1.0, 10.0);
  std::vector<double> gaps;
  for (int i = 0; i < 60; ++i) gaps.push_back(gap(rng));
  Builder b;
  b.collectives(gaps);
  auto p = collective_period_of(b.tl);
  EXPECT_EQ(p.period, 0u) << "score " << p.score;
  IterationSource src;
  EXPECT_TRUE(iterations(b.tl, &src).empty());
  EXPECT_EQ(src, IterationSource::None);
  auto m = compute_metrics(b.tl);  // metrics then cover the whole capture
  EXPECT_FALSE(m.steady);
  EXPECT_EQ(m.step_ms.count, 0u);
}

TEST(Iterations, UnitsEndWhereTheirLastCollectiveEnds) {
  // AllReduce, SendRecv, AllReduce every 5 ms: 6 whole units. Each ends where its last collective
  // ends (members finish together), so the capture's last unit is a step too: a fault in the
  // capture's last iteration is seen.
  Builder b;
  for (int it = 0; it < 6; ++it) {
    const int64_t t = it * 5 * kMs;
    b.kernel(t, t + 1000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);
    b.kernel(t + 2000, t + 3000, kSendRecv, true, 13);
    b.kernel(t + 4000, t + 5000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);
  }
  IterationSource src;
  auto its = iterations(b.tl, &src);
  EXPECT_EQ(src, IterationSource::CollectivePeriod);
  ASSERT_EQ(its.size(), 6u);
  for (const auto& it : its) {
    EXPECT_EQ(it.step_ns, it.warmup ? 5000 : 5 * kMs);  // the warm-up unit from its first collective
    EXPECT_EQ(it.end, it.start + it.step_ns);
    EXPECT_EQ(it.end, it.number * 5 * kMs + 5000);
  }
  EXPECT_TRUE(its.front().warmup);
  // One more collective starts a 7th unit the capture cut off: no step.
  b.kernel(30 * kMs, 30 * kMs + 1000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);
  EXPECT_EQ(iterations(b.tl, &src).size(), 6u);
  // Its other two complete it.
  b.kernel(32 * kMs, 33 * kMs, kSendRecv, true, 13);
  b.kernel(34 * kMs, 35 * kMs, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);
  EXPECT_EQ(iterations(b.tl, &src).size(), 7u);
}

// --- the real 2-rank torchrun captures: no step markers, one name and one stream per rank ---

TEST(Iterations, RealFsdpCapturesRepeatEveryTwoCollectives) {
  for (const char* name : {"nsysai_mfu_2gpu_before.sqlite", "nsysai_mfu_2gpu_after.sqlite"}) {
    REQUIRE_REAL(name);
    auto tls = read_annotated(real(name));
    ASSERT_EQ(tls.size(), 2u) << name;
    for (const auto& tl : tls) {
      std::vector<size_t> rows;
      auto p = collective_period_of(tl, &rows);
      EXPECT_EQ(p.name_period, 1u) << name;
      EXPECT_EQ(p.period, 2u) << name << " score " << p.score;
      IterationSource src;
      auto its = iterations(tl, &src);
      EXPECT_EQ(src, IterationSource::CollectivePeriod) << name;
      EXPECT_EQ(its.size(), rows.size() / 2) << name;  // whole units only
      // One FSDP block: ~16.8 ms before, ~19 ms after; no 0.1 ms "step" from a lone last kernel.
      const double med = median_step_ms(its);
      EXPECT_GT(med, 16.0) << name;
      EXPECT_LT(med, 19.5) << name;
      for (const auto& it : its) {
        if (it.warmup) continue;
        EXPECT_GT(it.step_ns, 15 * kMs) << name << " iteration " << it.number;
      }
    }
  }
}

TEST(Iterations, RealCaptureReportSaysRepeatingUnitNotStep) {
  REQUIRE_REAL("nsysai_mfu_2gpu_before.sqlite");
  const fs::path scan = built("src/straggler-scan");
  if (!fs::exists(scan)) GTEST_SKIP() << scan << " not built";
  const fs::path dir = fs::temp_directory_path() / ("ss-iter-real-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto r = sh(scan.string() + " " + real("nsysai_mfu_2gpu_before.sqlite") + " -o " + (dir / "o.h5").string() +
              " --summary " + (dir / "o.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("step time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("repeating unit (collective period"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 collectives"), std::string::npos) << r.out;
  std::ifstream in(dir / "o.json");
  std::string json{std::istreambuf_iterator<char>(in), {}};
  json.erase(std::remove(json.begin(), json.end(), ' '), json.end());  // the keys checked hold no spaces
  EXPECT_NE(json.find("\"iteration_source\":\"collective_period\""), std::string::npos) << json.substr(0, 400);
  EXPECT_NE(json.find("\"step_ms\":{"), std::string::npos);  // the contract key stays
  fs::remove_all(dir);
}

// The same capture with its NCCL kernels shifted by up to 20 ms each (a fixed hash of the row): no
// regular unit, so no iterations and no step times; the analysis still runs to the end.
TEST(Iterations, RealCaptureWithIrregularCollectivesHasNoIterations) {
  REQUIRE_REAL("nsysai_mfu_2gpu_before.sqlite");
  const fs::path scan = built("src/straggler-scan");
  if (!fs::exists(scan)) GTEST_SKIP() << scan << " not built";
  const fs::path dir = fs::temp_directory_path() / ("ss-iter-irregular-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "irregular.sqlite";
  fs::copy_file(real("nsysai_mfu_2gpu_before.sqlite"), file);
  fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + (rowid * 2654435761) % 20000000, "
                             "end = end + (rowid * 2654435761) % 20000000 WHERE shortName IN "
                             "(SELECT id FROM StringIds WHERE value LIKE 'nccl%')", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  for (const auto& tl : read_annotated(file.string())) {
    IterationSource src;
    EXPECT_TRUE(iterations(tl, &src).empty());
    EXPECT_EQ(src, IterationSource::None);
  }
  auto r = sh(scan.string() + " " + file.string() + " -o " + (dir / "o.h5").string() + " --summary " +
              (dir / "o.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("iterations: unknown"), std::string::npos) << r.out;
  std::ifstream in(dir / "o.json");
  std::string json{std::istreambuf_iterator<char>(in), {}};
  json.erase(std::remove(json.begin(), json.end(), ' '), json.end());  // the keys checked hold no spaces
  EXPECT_NE(json.find("\"iteration_source\":\"none\""), std::string::npos) << json.substr(0, 400);
  EXPECT_NE(json.find("\"step_ms\":null"), std::string::npos) << json.substr(0, 400);
  fs::remove_all(dir);
}

// --- generated runs with their step markers deleted ---

// TP2 x PP4 x DP2: the pipeline's middle stages run more collectives per step than its ends.
TEST(Iterations, GeneratedRunWithoutMarkersRepeatsEveryTrainingStep) {
  const fs::path sim = built("src/sim/straggler-sim");
  if (!fs::exists(sim)) GTEST_SKIP() << sim << " not built";
  for (const char* layout : {"2x2x4", "2x4x2"}) {
    const fs::path dir = fs::temp_directory_path() / ("ss-iter-sim-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    auto r = sh(sim.string() + " " + dir.string() + " --layout " + layout +
                " --hosts 2 --iterations 8 --seed 5 --fault slow_gpu:5:4:1.3 --threads 2");
    ASSERT_EQ(r.status, 0) << r.out;
    std::set<size_t> periods;
    int checked = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".sqlite") continue;
      auto marked = read_annotated(e.path().string());
      sqlite3* db = nullptr;  // delete the step markers, keep NCCL's own ranges (domain 1)
      ASSERT_EQ(sqlite3_open(e.path().c_str(), &db), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(db, "DELETE FROM NVTX_EVENTS WHERE domainId IS NOT 1", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
      auto bare = read_annotated(e.path().string());
      ASSERT_EQ(marked.size(), 1u);
      ASSERT_EQ(bare.size(), 1u);
      IterationSource src_m, src_b;
      auto with = iterations(marked[0], &src_m);
      auto without = iterations(bare[0], &src_b);
      ASSERT_EQ(src_m, IterationSource::NvtxMarker) << e.path();
      ASSERT_EQ(src_b, IterationSource::CollectivePeriod) << layout << " " << e.path();
      int64_t nccl = 0;
      for (auto v : bare[0].kernels.is_nccl) nccl += v;
      const size_t p = collective_period_of(bare[0]).period;
      EXPECT_EQ(p, size_t(nccl / int64_t(with.size()))) << layout << " " << e.path();  // collectives per step
      EXPECT_EQ(without.size(), with.size()) << layout << " " << e.path();  // the last step is whole
      EXPECT_NEAR(median_step_ms(without), median_step_ms(with), 0.02 * median_step_ms(with)) << e.path();
      periods.insert(p);
      ++checked;
    }
    EXPECT_EQ(checked, 16) << layout;
    if (std::string(layout) == "2x4x2") {
      EXPECT_GE(periods.size(), 3u);  // ends and middle stages differ
    }
    fs::remove_all(dir);
  }
}
