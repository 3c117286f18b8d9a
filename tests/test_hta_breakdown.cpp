// Holistic Trace Analysis' temporal breakdown and comm/comp overlap (ranks/hta_breakdown.hpp) on
// hand-built timelines whose truth is worked out in the comments, to the ns. The rounding cases'
// truths were also computed by HTA's own merge_kernel_intervals and _get_idle_time_for_kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "ranks/hta_breakdown.hpp"
#include "ranks/metrics.hpp"
#include "timeline_builder.hpp"

namespace ranks {
namespace {

HtaOptions exact() {  // HTA_DISABLE_NS_ROUNDING=1: whole-ns truths
  HtaOptions o;
  o.round_to_us = false;
  return o;
}

// Two streams, an NCCL kernel partly under compute, a memcpy, two gaps:
//   s7 gemm 1000-5000, s8 elementwise 3000-7000 (overlapping), gap 7000-10000,
//   s7 all-reduce 10000-16000, s8 compute 12000-14000 under it, s9 memcpy 16000-17000, gap,
//   s7 compute 20000-21000.
// span 20000; busy 6000 + 7000 + 1000 = 14000, idle 6000; compute 6000 + 2000 + 1000 = 9000;
// non-compute 20000 - 9000 - 6000 = 5000 (all-reduce alone 4000 + memcpy 1000);
// communication 6000, 2000 of it under compute.
TimelineBuilder two_streams(const char* nccl_name) {
  TimelineBuilder b;
  b.kernel(1000, 5000, "sm90_xmma_gemm_bf16bf16_bf16f32", false, 7);
  b.kernel(3000, 7000, "vectorized_elementwise_kernel", false, 8);
  b.kernel(10000, 16000, nccl_name, true, 7);
  b.kernel(12000, 14000, "vectorized_elementwise_kernel", false, 8);
  b.copy(16000, 17000, 4096, CopyKind::DtoD);
  b.tl.copies.stream.back() = 9;
  b.kernel(20000, 21000, "reduce_kernel", false, 7);
  return b;
}

TEST(HtaBreakdown, TwoStreamsCommPartlyUnderComputeMemcpyAndGaps) {
  const auto b = hta_breakdown(two_streams("ncclDevKernel_AllReduce_Sum_f32_RING_LL").tl, exact());
  EXPECT_EQ(b.kernel_span_ns, 20000);
  EXPECT_EQ(b.idle_ns, 6000);
  EXPECT_EQ(b.compute_ns, 9000);
  EXPECT_EQ(b.non_compute_ns, 5000);
  EXPECT_EQ(b.comm_ns, 6000);
  EXPECT_EQ(b.overlap_ns, 2000);
  EXPECT_EQ(b.events, 6);
  EXPECT_DOUBLE_EQ(b.idle_pct, 30.0);
  EXPECT_DOUBLE_EQ(b.compute_pct, 45.0);
  EXPECT_DOUBLE_EQ(b.non_compute_pct, 25.0);
  EXPECT_DOUBLE_EQ(b.comm_overlap_pct, 100.0 * (2000.0 / 6000.0));
  EXPECT_EQ(b.cut, kNoTime);
}

// nsys keeps a kernel's short name, the PyTorch profiler (Kineto) its full demangled one: HTA's
// pattern `.*ncclKernel.*` / `^nccl.*` calls both communication, so the figures are the same.
TEST(HtaBreakdown, ShortAndFullNcclNamesGiveTheSameFigures) {
  const auto nsys = hta_breakdown(two_streams("ncclKernel_AllReduce_RING_LL_Sum_float").tl, exact());
  const auto kineto = hta_breakdown(
      two_streams("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)").tl, exact());
  for (const auto* b : {&nsys, &kineto}) {
    EXPECT_EQ(b->idle_ns, 6000);
    EXPECT_EQ(b->compute_ns, 9000);
    EXPECT_EQ(b->non_compute_ns, 5000);
    EXPECT_EQ(b->overlap_ns, 2000);
    EXPECT_EQ(b->comm_ns, 6000);
  }
}

// HTA classifies by name (hta/utils/utils.py get_kernel_type, patterns of hta/common/types.py),
// first match wins: communication, memory, then computation = no match of the exclusion pattern.
TEST(HtaBreakdown, KernelTypesByHtaPatterns) {
  using T = HtaKernelType;
  EXPECT_EQ(hta_kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float"), T::Communication);
  EXPECT_EQ(hta_kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            T::Communication);
  EXPECT_EQ(hta_kernel_type("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), T::Communication);
  EXPECT_EQ(hta_kernel_type("void ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)"), T::Communication);
  EXPECT_EQ(hta_kernel_type("hipMemcpyAsync"), T::Communication);  // ^hip is tested before memory
  EXPECT_EQ(hta_kernel_type("Memcpy DtoD (Device -> Device)"), T::Memory);
  EXPECT_EQ(hta_kernel_type("Memset (Device)"), T::Memory);
  EXPECT_EQ(hta_kernel_type("dma_transfer"), T::Memory);
  EXPECT_EQ(hta_kernel_type("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)"),
            T::Computation);
  EXPECT_EQ(hta_kernel_type("sm90_xmma_gemm_bf16bf16_bf16f32"), T::Computation);
  // Names the exclusion pattern holds anywhere (.*Sync, .*dma, .*Memcpy) are neither: other.
  EXPECT_EQ(hta_kernel_type("void at::native::kernelSync<float>()"), T::Other);
  EXPECT_EQ(hta_kernel_type("void fused_dma_copy()"), T::Other);
  EXPECT_EQ(hta_kernel_type("Stream Wait Event"), T::Other);
  EXPECT_EQ(hta_kernel_type("NCCL_lookalike"), T::Computation);  // case-sensitive, as in HTA
  EXPECT_EQ(hta_kernel_type(""), T::Computation);
}

// A communication kernel our NCCL annotation knows but HTA's patterns do not (a custom
// all-reduce) is computation for HTA: is_nccl is not consulted.
TEST(HtaBreakdown, NameDecidesNotTheNcclAnnotation) {
  TimelineBuilder b;
  b.kernel(0, 1000, "cross_device_reduce_1stage", true);
  b.kernel(1000, 3000, "ncclDevKernel_AllGather_RING_LL", false);
  const auto h = hta_breakdown(b.tl, exact());
  EXPECT_EQ(h.compute_ns, 1000);
  EXPECT_EQ(h.comm_ns, 2000);
  EXPECT_EQ(h.non_compute_ns, 2000);
  EXPECT_DOUBLE_EQ(h.comm_overlap_pct, 0.0);
}

TEST(HtaBreakdown, OverlapAllNoneAndWithoutCommunication) {
  TimelineBuilder under;  // the collective entirely under a GEMM on another stream
  under.kernel(0, 10000, "gemm", false, 7);
  under.kernel(2000, 5000, "ncclKernel_AllReduce", true, 8);
  EXPECT_DOUBLE_EQ(hta_breakdown(under.tl, exact()).comm_overlap_pct, 100.0);
  EXPECT_EQ(hta_breakdown(under.tl, exact()).non_compute_ns, 0);
  TimelineBuilder apart;  // touching but not overlapping: no overlap
  apart.kernel(0, 2000, "gemm", false, 7);
  apart.kernel(2000, 5000, "ncclKernel_AllReduce", true, 8);
  EXPECT_DOUBLE_EQ(hta_breakdown(apart.tl, exact()).comm_overlap_pct, 0.0);
  TimelineBuilder none;
  none.kernel(0, 2000, "gemm", false);
  EXPECT_TRUE(std::isnan(hta_breakdown(none.tl, exact()).comm_overlap_pct));
}

TEST(HtaBreakdown, EmptyTimelineHasNoFigures) {
  const auto b = hta_breakdown(TimelineBuilder{}.tl);
  EXPECT_EQ(b.events, 0);
  EXPECT_EQ(b.kernel_span_ns, 0);
  EXPECT_EQ(b.idle_ns, 0);
  EXPECT_EQ(b.compute_ns, 0);
  EXPECT_EQ(b.non_compute_ns, 0);
  EXPECT_TRUE(std::isnan(b.idle_pct));
  EXPECT_TRUE(std::isnan(b.compute_pct));
  EXPECT_TRUE(std::isnan(b.non_compute_pct));
  EXPECT_TRUE(std::isnan(b.comm_overlap_pct));
}

TEST(HtaBreakdown, CopiesAloneAreNonCompute) {
  TimelineBuilder b;
  b.copy(1000, 3000, 64, CopyKind::HtoD);
  b.copy(5000, 6000, 64, CopyKind::Memset);
  const auto h = hta_breakdown(b.tl, exact());
  EXPECT_EQ(h.kernel_span_ns, 5000);
  EXPECT_EQ(h.idle_ns, 2000);
  EXPECT_EQ(h.compute_ns, 0);
  EXPECT_EQ(h.non_compute_ns, 3000);
  EXPECT_DOUBLE_EQ(h.non_compute_pct, 60.0);
}

// HTA drops what was launched at or after the start of the last ProfilerStep (when there are at
// least two): a kernel launched in step 2 but run after step 3 began stays; one launched in step 3
// goes. A copy has no launch time: one followed on its stream by a kept kernel stays, one after
// the first dropped kernel goes.
//   steps: #1 0-10000, #2 10000-20000, #3 20000-30000 (cut at 20000)
//   kept:  gemm 1000-9000 (launched 500), gemm 19000-23000 (launched 18000), copy 23000-24000,
//          gemm 24000-25000 (launched 19000)
//   gone:  gemm 26000-27000 (launched 20000), copy 27000-28000, gemm 29000-30000 (no launch, by start)
// kept span 1000-25000 = 24000; busy 8000 + 6000 = 14000, idle 10000; compute 13000.
TEST(HtaBreakdown, LastProfilerStepIsDropped) {
  TimelineBuilder b;
  b.marker(0, 10000, "ProfilerStep#1");
  b.marker(10000, 20000, "ProfilerStep#2");
  b.marker(20000, 30000, "ProfilerStep#3");
  b.kernel(1000, 9000, "gemm", false, 7, 500);
  b.kernel(19000, 23000, "gemm", false, 7, 18000);
  b.copy(23000, 24000, 64, CopyKind::DtoD);
  b.kernel(24000, 25000, "gemm", false, 7, 19000);
  b.kernel(26000, 27000, "gemm", false, 7, 20000);
  b.copy(27000, 28000, 64, CopyKind::DtoD);
  b.kernel(29000, 30000, "gemm", false, 7);
  const auto h = hta_breakdown(b.tl, exact());
  EXPECT_EQ(h.cut, 20000);
  EXPECT_EQ(h.events, 4);
  EXPECT_EQ(h.kernel_span_ns, 24000);
  EXPECT_EQ(h.idle_ns, 10000);
  EXPECT_EQ(h.compute_ns, 13000);
  EXPECT_EQ(h.non_compute_ns, 1000);

  HtaOptions all = exact();
  all.include_last_profiler_step = true;  // TraceAnalysis(include_last_profiler_step=True)
  const auto a = hta_breakdown(b.tl, all);
  EXPECT_EQ(a.cut, kNoTime);
  EXPECT_EQ(a.events, 7);
  EXPECT_EQ(a.kernel_span_ns, 29000);
  EXPECT_EQ(a.idle_ns, 29000 - 8000 - 9000);  // busy 1000-9000, 19000-25000, 26000-28000, 29000-30000
}

// With one ProfilerStep name (even repeated) HTA filters nothing; other step markers do not count.
TEST(HtaBreakdown, NoCutWithoutTwoProfilerSteps) {
  TimelineBuilder b;
  b.marker(0, 10000, "ProfilerStep#7");
  b.marker(10000, 20000, "ProfilerStep#7");
  b.marker(20000, 30000, "Iteration 3");
  b.marker(25000, 30000, "ProfilerStep#");  // no number: not HTA's ^ProfilerStep#(\d+)
  b.kernel(1000, 2000, "gemm", false, 7, 500);
  b.kernel(28000, 29000, "gemm", false, 7, 27000);
  const auto h = hta_breakdown(b.tl, exact());
  EXPECT_EQ(h.cut, kNoTime);
  EXPECT_EQ(h.events, 2);
  EXPECT_EQ(h.kernel_span_ns, 28000);
}

// HTA's default rounding (trace_parser.round_down_time_stamps): start up, end down to whole us.
// 1500-4200 -> [2, 4]; 4600-5400 -> [5, 5]; 6200-6800 -> [7, 6] (end before start: HTA keeps it,
// and it takes 1 us off the union). Groups [2,4] [5,5] [7,6]: span 6 - 2 = 4, union 2 + 0 - 1 = 1,
// idle 3, compute 1, non-compute 0.
TEST(HtaBreakdown, RoundsToWholeMicrosecondsLikeHta) {
  TimelineBuilder b;
  b.kernel(1500, 4200, "gemm", false);
  b.kernel(4600, 5400, "gemm", false);
  b.kernel(6200, 6800, "gemm", false);
  const auto h = hta_breakdown(b.tl);
  EXPECT_EQ(h.kernel_span_ns, 4000);
  EXPECT_EQ(h.idle_ns, 3000);
  EXPECT_EQ(h.compute_ns, 1000);
  EXPECT_EQ(h.non_compute_ns, 0);
  EXPECT_DOUBLE_EQ(h.idle_pct, 75.0);
  EXPECT_DOUBLE_EQ(h.compute_pct, 25.0);
  // Exact: span 5300, busy 2700 + 800 + 600 = 4100, idle 1200.
  const auto e = hta_breakdown(b.tl, exact());
  EXPECT_EQ(e.kernel_span_ns, 5300);
  EXPECT_EQ(e.idle_ns, 1200);
  EXPECT_EQ(e.compute_ns, 4100);
}

// The rounding is on the file's absolute microsecond grid: utc_epoch_ns + t. 500 ns later:
// 2000-4700 -> [2, 4]; 5100-5900 -> [6, 5]; 6700-7300 -> [7, 7]: span 5, union 2 - 1 + 0 = 1, idle 4.
TEST(HtaBreakdown, RoundsOnTheWallClockGrid) {
  TimelineBuilder b;
  b.tl.utc_epoch_ns = 1'700'000'000'000'000'500;
  b.kernel(1500, 4200, "gemm", false);
  b.kernel(4600, 5400, "gemm", false);
  b.kernel(6200, 6800, "gemm", false);
  const auto h = hta_breakdown(b.tl);
  EXPECT_EQ(h.kernel_span_ns, 5000);
  EXPECT_EQ(h.idle_ns, 4000);
  EXPECT_EQ(h.compute_ns, 1000);
  EXPECT_DOUBLE_EQ(h.idle_pct, 80.0);
}

// The per-rank metrics carry HTA's figures with HTA's defaults (what /ranks shows).
TEST(HtaBreakdown, RankMetricsCarryTheDefaultFigures) {
  const auto tl = two_streams("ncclKernel_AllReduce_RING_LL_Sum_float").tl;
  const auto m = compute_metrics(tl);
  const auto h = hta_breakdown(tl);
  EXPECT_EQ(m.hta.idle_ns, h.idle_ns);
  EXPECT_EQ(m.hta.compute_ns, h.compute_ns);
  EXPECT_EQ(m.hta.kernel_span_ns, 20000);  // every edge on a whole us: rounding changes nothing here
  EXPECT_DOUBLE_EQ(m.hta.comm_overlap_pct, 100.0 * (2000.0 / 6000.0));
}

}  // namespace
}  // namespace ranks
