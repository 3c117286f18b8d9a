// Root-cause findings (ranks/findings.hpp): synthetic timelines with known answers, and the real
// captures of ../shared/data/real (skipped where that folder is absent) with their numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "ranks/findings.hpp"
#include "ranks/metrics.hpp"
#include "read_annotated.hpp"
#include "timeline_builder.hpp"

using namespace ranks;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMs = 1'000'000, kUs = 1'000;

// A marked training loop: `iterations` steps of 100 ms of back-to-back 1 ms kernels, launched
// 5 ms ahead, except where the GPU is told to idle (holes, ms from the start): the kernel after a
// hole is launched just before it starts (the host was late). A first step longer than 100 ms
// idles from 10 ms to its last 100 ms (a one-time stall).
struct Loop {
  int iterations = 12;
  double first_ms = 100;
  std::vector<std::pair<double, double>> holes;  // [from, to) ms
  int syncs_per_step = 1;                         // at the step's end (loss.item())
  double after_sync_ms = 0;                       // GPU idle after each sync (the drained queue refills)

  RankTimeline build() const {
    TimelineBuilder b;
    const int64_t step = 100 * kMs, first = int64_t(first_ms * kMs), end = first + (iterations - 1) * step;
    std::vector<std::pair<int64_t, int64_t>> syncs;
    for (int i = 0; i < iterations; ++i) {
      const int64_t s0 = i == 0 ? 0 : first + (i - 1) * step, len = i == 0 ? first : step;
      b.marker(s0, s0 + len - kMs, ("ProfilerStep#" + std::to_string(i)).c_str());
      for (int s = 0; s < syncs_per_step; ++s) {
        const int64_t at = s0 + (s + 1) * len / syncs_per_step - 30 * kMs / syncs_per_step;
        syncs.push_back({at, (at + 20 * kMs / syncs_per_step) / kMs * kMs});  // returns as a kernel ends
        b.sync(syncs.back().first, syncs.back().second);
      }
    }
    auto idle = [&](int64_t t) {
      if (t >= 10 * kMs && t < first - step) return true;
      if (std::any_of(syncs.begin(), syncs.end(), [&](auto& y) { return t >= y.second && t < y.second + after_sync_ms * kMs; }))
        return true;
      return std::any_of(holes.begin(), holes.end(), [&](auto& h) { return t >= h.first * kMs && t < h.second * kMs; });
    };
    bool after_hole = false;
    for (int64_t t = 0; t < end; t += kMs) {
      if (idle(t)) {
        after_hole = true;
        continue;
      }
      static const char* const names[] = {"gemm", "flash_fwd", "layer_norm", "gelu"};
      b.kernel(t + 2 * kUs, t + kMs, names[(t / kMs) % 4], false, 7, after_hole ? t - 10 * kUs : t - 5 * kMs, 5 * kUs);
      after_hole = false;
    }
    return b.tl;
  }
};

std::set<Finding> found(const RankTimeline& tl) {
  std::set<Finding> s;
  for (const auto& f : find_rank_findings(tl, compute_metrics(tl))) s.insert(f.finding);
  return s;
}

const RankFinding* get(const std::vector<RankFinding>& v, Finding f) {
  for (const auto& x : v)
    if (x.finding == f) return &x;
  return nullptr;
}

}  // namespace

TEST(Findings, NamesRoundTrip) {
  for (int i = 0; i < kFindingCount; ++i) EXPECT_EQ(finding_from_name(finding_name(Finding(i))), Finding(i));
  EXPECT_FALSE(finding_from_name("gc"));
}

TEST(Findings, HealthyLoopHasNone) { EXPECT_TRUE(found(Loop{}.build()).empty()); }

// 20 ms pauses every 3 steps, mid-step: periodic and away from step starts -> GC, not bubbles.
TEST(Findings, PeriodicPausesAwayFromStepStartsAreGc) {
  Loop l;
  for (double t = 150; t < 1200; t += 300) l.holes.push_back({t, t + 20});
  const RankTimeline tl = l.build();
  const auto v = find_rank_findings(tl, compute_metrics(tl));
  EXPECT_EQ(found(tl), std::set<Finding>{Finding::GcPause});
  const RankFinding* gc = get(v, Finding::GcPause);
  ASSERT_TRUE(gc);
  EXPECT_NEAR(gc->cost_ms_per_step, 3 * 20.0 / 10, 1.5);  // pauses in the 10 steady steps (of 20 ms)
  EXPECT_NE(gc->evidence.find("every 300.0 ms"), std::string::npos) << gc->evidence;
}

// The same pauses at every step start (a dataloader): not GC; GPU bubbles.
TEST(Findings, PausesAtStepStartsAreBubbles) {
  Loop l;
  for (int i = 1; i < 12; ++i) l.holes.push_back({i * 100.0, i * 100.0 + 8});
  EXPECT_EQ(found(l.build()), std::set<Finding>{Finding::GpuBubbles});
}

// Irregular pauses mid-step: no period, so not GC; bubbles.
TEST(Findings, IrregularPausesAreBubbles) {
  Loop l;
  for (double t : {130.0, 170.0, 420.0, 480.0, 910.0, 1060.0}) l.holes.push_back({t, t + 12});
  EXPECT_EQ(found(l.build()), std::set<Finding>{Finding::GpuBubbles});
}

// Eight syncs per marked step, the host blocked 20% of the time and the GPU idle 2 ms after each:
// excessive, costing that idle. One per step with idle after it is not (that idle is bubbles).
TEST(Findings, SyncsPerStep) {
  Loop l;
  l.syncs_per_step = 8, l.after_sync_ms = 2;
  const RankTimeline tl = l.build();
  EXPECT_EQ(found(tl), std::set<Finding>{Finding::ExcessiveSync});
  const auto v = find_rank_findings(tl, compute_metrics(tl));
  ASSERT_TRUE(get(v, Finding::ExcessiveSync));
  EXPECT_NEAR(get(v, Finding::ExcessiveSync)->cost_ms_per_step, 8 * 2, 1);
  Loop one;
  one.after_sync_ms = 3;
  EXPECT_EQ(found(one.build()), std::set<Finding>{Finding::GpuBubbles});
}

// A first step 12x the steady one, in GPU idle never repeated: module loading (and nothing else).
TEST(Findings, SlowFirstIterationIsModuleLoading) {
  Loop l;
  l.first_ms = 1200;
  const RankTimeline tl = l.build();
  EXPECT_EQ(found(tl), std::set<Finding>{Finding::ModuleLoading});
  const auto v = find_rank_findings(tl, compute_metrics(tl));
  ASSERT_TRUE(get(v, Finding::ModuleLoading));
  EXPECT_NE(get(v, Finding::ModuleLoading)->evidence.find("12.0x the steady"), std::string::npos);
  Loop twice = l;  // the same stall again later: repeated, so not a one-time load
  twice.holes.push_back({1550, 2250});
  for (const auto& f : find_rank_findings(twice.build(), compute_metrics(twice.build())))
    EXPECT_NE(f.finding, Finding::ModuleLoading) << f.evidence;
}

// NCCL on the compute stream serializes; on its own stream it does not.
TEST(Findings, NcclOnTheComputeStream) {
  for (int nccl_stream : {7, 13}) {
    Loop l;
    RankTimeline tl = l.build();
    TimelineBuilder b;
    b.tl = tl;
    // Replace every 3rd kernel by an NCCL kernel on `nccl_stream`: NCCL is over the catalogue's
    // 20% of the time, so overlap has something to win.
    for (size_t i = 0; i < b.tl.kernels.size(); i += 3)
      b.tl.kernels.is_nccl[i] = 1, b.tl.kernels.stream[i] = nccl_stream;
    const auto f = found(b.tl);
    EXPECT_EQ(f.count(Finding::NcclSerialization), nccl_stream == 7 ? 1u : 0u) << nccl_stream;
  }
}

// Under the catalogue's 20% NCCL share, NCCL on the compute stream is no finding: there is little
// to win, and NCCL between its own pack and unpack kernels (FSDP) could not overlap anyway.
TEST(Findings, LittleNcclOnTheComputeStreamIsNoFinding) {
  Loop l;
  TimelineBuilder b;
  b.tl = l.build();
  for (size_t i = 0; i < b.tl.kernels.size(); i += 10) b.tl.kernels.is_nccl[i] = 1;  // ~10%, same stream
  EXPECT_EQ(found(b.tl).count(Finding::NcclSerialization), 0u);
}

// --- real captures ---

namespace {
std::string real(const std::string& name) { return std::string(SS_SHARED_DIR) + "/data/real/" + name; }
#define REQUIRE_REAL(name) \
  if (!fs::exists(real(name))) GTEST_SKIP() << real(name) << " absent (real captures live in ../shared/data/real)"
}  // namespace

// The 2-rank FSDP torchrun captures (against sqlite3): 672-720 kernels under 10 us in the steady
// window (mean 3 us) launched by calls of 8-11 us, the GPU idle right after them while the host
// launches the next, and a repeating unit of 17-19 ms (two all_to_alls, a few layers, not a step).
// small_kernels is judged per unit of time (the time at stake), not per step. NCCL shares the
// compute stream but is 2.8-7.9% of the time, under the catalogue's 20%: no nccl_serialization.
// The host is blocked in synchronize calls about half of the time, once per unit (a sync for every
// ~2 collectives); what the syncs cost the GPU is small (idle after them 0.5-1%).
TEST(FindingsReal, FsdpCapturesSmallKernelsAndSyncsNotSerialization) {
  for (const char* name : {"nsysai_mfu_2gpu_before.sqlite", "nsysai_mfu_2gpu_after.sqlite"}) {
    REQUIRE_REAL(name);
    for (const auto& tl : read_annotated(real(name))) {
      const RankMetrics m = compute_metrics(tl);
      const auto v = find_rank_findings(tl, m);
      const RankFinding* small = get(v, Finding::SmallKernels);
      const RankFinding* sync = get(v, Finding::ExcessiveSync);
      ASSERT_TRUE(small && sync) << name << " pid " << tl.pid;
      EXPECT_FALSE(get(v, Finding::NcclSerialization)) << get(v, Finding::NcclSerialization)->evidence;
      EXPECT_LT(double(m.scope.nccl_ns) / double(m.scope.span_ns), 0.2) << name;
      // Its cost is time at stake (tiny-kernel time plus the idle after them), per repeating unit.
      EXPECT_EQ(small->unit, "repeating unit");
      EXPECT_NE(small->evidence.find("time at stake"), std::string::npos) << small->evidence;
      const double stake = small->cost_ms_per_step * double(m.iterations.size() - 1) / (double(m.scope.span_ns) / 1e6);
      EXPECT_GT(stake, 0.03) << small->evidence;  // 3.5-12.8% idle after them, plus their own time
      EXPECT_LT(stake, 0.2) << small->evidence;
      const double blocked = double(m.sync_ns) / double(m.scope.span_ns);
      EXPECT_GT(blocked, 0.45) << name;
      EXPECT_LT(blocked, 0.65) << name;
      EXPECT_NEAR(sync->severity, blocked / FindingOptions{}.sync_blocked_share, 1e-9);
      // About one per unit (the units end where their last collective ends: 0.9 in one capture).
      EXPECT_TRUE(sync->evidence.find("1.0 synchronize calls per repeating unit") != std::string::npos ||
                  sync->evidence.find("0.9 synchronize calls per repeating unit") != std::string::npos)
          << sync->evidence;
      const double idle_after = sync->cost_ms_per_step * double(m.iterations.size() - 1) / (double(m.scope.span_ns) / 1e6);
      EXPECT_LT(idle_after, 0.02) << sync->evidence;  // 0.5-1% of the time
      EXPECT_EQ(m.iteration_source, IterationSource::CollectivePeriod) << name;
      EXPECT_FALSE(get(v, Finding::ModuleLoading)) << get(v, Finding::ModuleLoading)->evidence;
      for (const auto& f : v) EXPECT_NE(f.unit, "step") << finding_name(f.finding) << ": no marked steps here";
    }
  }
}

// A window without steps: the findings of one rank cost at most the window (nothing costed twice).
void expect_costs_within_window(const std::vector<RankFinding>& v, const RankMetrics& m) {
  double sum = 0;
  for (const auto& f : v) sum += f.cost_ms_per_step;
  EXPECT_LE(sum, double(m.scope.span_ns) / 1e6 + 0.01);
}

// The single-GPU nvFuser capture (against sqlite3): one NVRTC compilation of 352 ms inside
// KernelExecutor::compileFusion (393 ms) and 15 cuLibraryLoadData calls (18 ms), no iterations.
// module_loading is raised from that evidence alone; no idle is costed twice (the findings of the
// rank sum to at most the window), and 19 kernels are too few for cpu_bottleneck.
TEST(FindingsReal, NvrtcCompilationIsModuleLoadingWithoutIterations) {
  const char* name = "nvfuser_report1_1gpu.sqlite";
  REQUIRE_REAL(name);
  for (const auto& tl : read_annotated(real(name))) {
    const RankMetrics m = compute_metrics(tl);
    const auto v = find_rank_findings(tl, m);
    const RankFinding* load = get(v, Finding::ModuleLoading);
    ASSERT_TRUE(load) << tl.pid;
    EXPECT_GT(load->cost_ms_per_step, 350.0) << load->evidence;  // the compilation, at least
    EXPECT_EQ(load->unit, "window");
    EXPECT_FALSE(get(v, Finding::CpuBottleneck)) << get(v, Finding::CpuBottleneck)->evidence;
    expect_costs_within_window(v, m);
  }
}

TEST(FindingsReal, H100CaptureIsDominatedByHostToDeviceCopies) {
  const char* name = "nsysai_h100_2gpu_1s.sqlite";
  REQUIRE_REAL(name);
  for (const auto& tl : read_annotated(real(name))) {
    const RankMetrics m = compute_metrics(tl);
    const auto v = find_rank_findings(tl, m);
    const RankFinding* h2d = get(v, Finding::ExcessiveH2D);
    ASSERT_TRUE(h2d) << tl.pid;
    const double span = double(m.scope.span_ns);
    EXPECT_NEAR(double(m.h2d_ns) / span, 0.95, 0.01);
    EXPECT_NEAR(double(m.scope.compute_ns) / span, 0.023, 0.002);
    EXPECT_NEAR(h2d->severity, double(m.h2d_ns) / span / 0.05, 1e-9);
    EXPECT_NE(h2d->evidence.find("95.0% of the time"), std::string::npos) << h2d->evidence;
    EXPECT_NE(h2d->evidence.find("kernels 2.3%"), std::string::npos) << h2d->evidence;
    // Copies keep the copy engines busy while the SMs wait: SM idle is shown beside copy time.
    EXPECT_NE(h2d->evidence.find("SM idle (no kernel running) 97.7% of the time"), std::string::npos) << h2d->evidence;
    expect_costs_within_window(v, m);  // no idle or copy time costed twice
  }
}
