// Per-rank metrics on hand-built timelines whose answers are computed by hand.
#include <memory>
#include <gtest/gtest.h>

#include "ranks/histogram.hpp"
#include "ranks/metrics.hpp"
#include "timeline_builder.hpp"

using namespace ranks;
using common::Distribution;

namespace {

using Builder = TimelineBuilder;

}  // namespace

TEST(Metrics, BusyComputeNcclExposedAndGaps) {
  Builder b;
  b.kernel(0, 100, "gemm", false);
  b.kernel(50, 300, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);  // overlaps compute on [50,100)
  b.kernel(400, 500, "gemm", false);
  b.kernel(2'000'600, 2'000'700, "gemm", false);  // after a 2 ms gap
  b.copy(500, 600, 4096, CopyKind::HtoD);
  auto m = compute_metrics(b.tl);
  EXPECT_FALSE(m.steady);
  EXPECT_EQ(m.whole.span_ns, 2'000'700);
  EXPECT_EQ(m.whole.busy_ns, 300 + 200 + 100);      // [0,300) [400,600) [2000600,2000700)
  EXPECT_EQ(m.whole.compute_ns, 100 + 100 + 100);
  EXPECT_EQ(m.whole.nccl_ns, 250);
  EXPECT_EQ(m.whole.exposed_nccl_ns, 200);          // [100,300)
  EXPECT_EQ(m.whole.idle_ns, 2'000'700 - 600);
  EXPECT_EQ(m.gap_count, 2);                        // [300,400) and [600,2000600)
  EXPECT_EQ(m.long_gap_count, 1);
  EXPECT_EQ(m.long_gap_ns, 2'000'000);
  EXPECT_EQ(m.h2d_bytes, 4096);
  EXPECT_EQ(m.h2d_ns, 100);
  EXPECT_EQ(m.kernel_count, 4);
  EXPECT_EQ(m.nccl_kernel_count, 1);
  ASSERT_FALSE(m.top_kernels.empty());
  EXPECT_EQ(b.tl.names.str(m.top_kernels[0].name), "gemm");
  EXPECT_EQ(m.top_kernels[0].count, 3);
  EXPECT_EQ(m.top_kernels[0].total_ns, 300);
  EXPECT_EQ(m.kernel_hist.total(), 3u);
  EXPECT_EQ(m.nccl_hist.total(), 1u);
}

TEST(Metrics, IterationsFromMarkersExcludeWarmup) {
  Builder b;
  // Warm-up iteration 0 is slow (10 ms), then 3 iterations of 4 ms; one sync per iteration.
  const int64_t starts[] = {0, 10'000'000, 14'000'000, 18'000'000, 22'000'000};
  for (int i = 0; i < 4; ++i) {
    std::string name = "ProfilerStep#" + std::to_string(i + 5);
    b.marker(starts[i], starts[i + 1] - 500'000, name.c_str());
    b.kernel(starts[i] + 100'000, starts[i + 1] - 1'000'000, "gemm", false, 7, starts[i] + 10'000);
    b.sync(starts[i + 1] - 900'000, starts[i + 1] - 600'000);
  }
  b.marker(5, 6, "not_a_step");
  auto m = compute_metrics(b.tl);
  EXPECT_EQ(m.iteration_source, IterationSource::NvtxMarker);
  ASSERT_EQ(m.iterations.size(), 4u);
  EXPECT_EQ(m.iterations[0].number, 5);
  EXPECT_TRUE(m.iterations[0].warmup);
  EXPECT_EQ(m.iterations[0].step_ns, 10'000'000);
  EXPECT_EQ(m.iterations[1].step_ns, 4'000'000);
  // The last iteration ends with its last kernel (after its marker ended? no: marker ends later).
  EXPECT_EQ(m.iterations[3].end, 22'000'000 - 500'000);
  EXPECT_TRUE(m.steady);
  EXPECT_EQ(m.scope_start, 10'000'000);
  EXPECT_DOUBLE_EQ(m.step_ms.p50, 4.0);
  EXPECT_EQ(m.step_ms.count, 3u);
  EXPECT_EQ(m.sync_count, 3);  // the warm-up sync is out of scope
  EXPECT_EQ(m.sync_ns, 3 * 300'000);
}

TEST(Metrics, IterationsFromCollectivePeriodWithoutMarkers) {
  Builder b;
  // Each iteration: AllReduce, SendRecv, AllReduce on the NCCL stream, 5 ms apart.
  for (int it = 0; it < 6; ++it) {
    int64_t t = it * 5'000'000;
    b.kernel(t, t + 1000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);
    b.kernel(t + 2000, t + 3000, "ncclDevKernel_SendRecv", true, 13);
    b.kernel(t + 4000, t + 5000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 13);
  }
  auto m = compute_metrics(b.tl);
  EXPECT_EQ(m.iteration_source, IterationSource::CollectivePeriod);
  ASSERT_EQ(m.iterations.size(), 6u);  // each ends where its last collective ends: the 6th too
  EXPECT_EQ(m.iterations[2].step_ns, 5'000'000);
}

TEST(Metrics, NoIterationsFoundInAperiodicTrace) {
  Builder b;
  b.kernel(0, 10, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true);
  b.kernel(20, 30, "ncclDevKernel_SendRecv", true);
  auto m = compute_metrics(b.tl);
  EXPECT_EQ(m.iteration_source, IterationSource::None);
  EXPECT_TRUE(m.iterations.empty());
}

TEST(Histogram, FixedEdgesMergeExactly) {
  const auto& e = LogHistogram::edges();
  EXPECT_EQ(e[0], 0);
  EXPECT_EQ(e[1], 100);
  EXPECT_EQ(e[11], 1000);
  EXPECT_EQ(e[LogHistogram::kBins - 1], 100'000'000'000LL);
  LogHistogram a, b, all;
  for (int64_t v : {5LL, 100LL, 999LL, 1000LL, 123456789LL, 500'000'000'000LL}) a.add(v), all.add(v);
  for (int64_t v : {7LL, 2000LL}) b.add(v), all.add(v);
  a.merge(b);
  EXPECT_EQ(a.counts, all.counts);
  EXPECT_EQ(a.counts[0], 2u);                          // 5, 7
  EXPECT_EQ(a.counts[LogHistogram::kBins - 1], 1u);    // 500 s
  EXPECT_EQ(a.total(), 8u);
}

TEST(Histogram, ApproximateQuantilesWithinABin) {
  LogHistogram h;
  for (int i = 1; i <= 1000; ++i) h.add(int64_t(i) * 1000);  // 1 us .. 1 ms
  EXPECT_NEAR(h.quantile(0.5), 500'000, 0.13 * 500'000);
  EXPECT_NEAR(h.quantile(0.9), 900'000, 0.13 * 900'000);
  EXPECT_EQ(LogHistogram().quantile(0.5), 0);
}

TEST(Histogram, DistributionQuantiles) {
  auto d = Distribution::of({4, 1, 3, 2, 5});
  EXPECT_EQ(d.count, 5u);
  EXPECT_DOUBLE_EQ(d.p50, 3);
  EXPECT_DOUBLE_EQ(d.p90, 4.6);
  EXPECT_DOUBLE_EQ(d.mean, 3);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 5);
  EXPECT_NEAR(d.stddev, 1.5811388, 1e-6);
}

// Repro D3: a copied StringTable must index its own strings (it kept views into the original's,
// freed when the process list grew); caught by AddressSanitizer, and here by overwriting the original.
TEST(StringTable, CopyIndexesItsOwnStrings) {
  auto original = std::make_unique<ranks::StringTable>();
  const uint32_t a = original->intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL_with_a_long_name");
  original->intern("flash_fwd_kernel_with_a_name_longer_than_small_string_buffers");
  ranks::StringTable copy = *original;
  *original = ranks::StringTable();
  for (int i = 0; i < 64; ++i) original->intern(std::string(80, char('a' + i % 26)) + std::to_string(i));
  original.reset();
  EXPECT_EQ(copy.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL_with_a_long_name"), a);
  EXPECT_EQ(copy.size(), 2u);
  ranks::StringTable moved = std::move(copy);
  EXPECT_EQ(moved.intern("flash_fwd_kernel_with_a_name_longer_than_small_string_buffers"), 1u);
}

// A timeline straight from a reader has no NCCL meaning yet (collectives::annotate_nccl fills
// is_nccl and nccl_api): metrics refuse it with a clear error instead of reading columns that are
// not there.
TEST(Metrics, RefuseATimelineThatWasNotAnnotated) {
  RankTimeline raw;  // as a reader leaves it: raw facts only
  raw.file = "rank_3.sqlite";
  auto& k = raw.kernels;
  for (int64_t i = 0; i < 4; ++i) {
    k.start.push_back(i * 100), k.end.push_back(i * 100 + 50), k.stream.push_back(7);
    k.name.push_back(raw.names.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
    k.launch.push_back(kNoTime), k.launch_tid.push_back(0), k.launch_dur.push_back(0);
  }
  try {
    compute_metrics(raw);
    FAIL() << "metrics of an unannotated timeline";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rank_3.sqlite: per-rank metrics of a timeline that was not annotated"),
              std::string::npos) << e.what();
  }
  raw.nccl_annotated = true;  // a flag alone is not enough: the columns must be there
  EXPECT_THROW(compute_metrics(raw), std::invalid_argument);
  Builder b;  // annotated by hand: each kernel says whether it is NCCL's
  b.kernel(0, 100, "gemm", false);
  EXPECT_NO_THROW(compute_metrics(b.tl));
}
