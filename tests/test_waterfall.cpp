// The step-time waterfall's arithmetic (src/analyses/waterfall.hpp, docs/waterfall.md).
#include <gtest/gtest.h>

#include "analyses/waterfall.hpp"
#include "analyses/what_if.hpp"
#include "collectives/verdict.hpp"

namespace {

using straggler::analyses::waterfall;
using straggler::analyses::WaterfallInput;

double sum(const std::vector<straggler::analyses::WaterfallRow>& rows) {
  double s = 0;
  for (const auto& r : rows) s += r.ms;
  return s;
}

// docs/waterfall.md's worked example.
TEST(Waterfall, WorkedExampleAddsUp) {
  WaterfallInput in;
  in.step_ms = 2180, in.fixed_ms = 1020, in.fixed_hidden_ms = 900;
  in.fixes = {{"straggler", "rank 17 (slow_gpu)", {17}, 1030}, {"straggler", "rank 40 (host_delay)", {40}, 2160}};
  in.compute_ms = 700, in.idle_ms = 40, in.p2p_wait_ms = 120;
  const auto rows = waterfall(in);
  ASSERT_EQ(rows.size(), 7u);
  // Together they save 1160 ms, shared 1150 : 20 by what each saves alone.
  EXPECT_NEAR(rows[0].ms, 1160.0 * 1150 / 1170, 1e-9);
  EXPECT_NEAR(rows[1].ms, 1160.0 * 20 / 1170, 1e-9);
  EXPECT_EQ(rows[2].part, "exposed_communication");
  EXPECT_DOUBLE_EQ(rows[2].ms, 120);
  EXPECT_DOUBLE_EQ(rows[3].ms, 700);
  EXPECT_DOUBLE_EQ(rows[4].ms, 40);
  EXPECT_EQ(rows[5].part, "pipeline_bubble");
  EXPECT_DOUBLE_EQ(rows[5].ms, 120);
  EXPECT_EQ(rows[6].part, "waiting");
  EXPECT_DOUBLE_EQ(rows[6].ms, 40);
  EXPECT_NEAR(sum(rows), in.step_ms, 1e-9);
  EXPECT_NEAR(rows[0].share, rows[0].ms / 2180, 1e-12);
  EXPECT_DOUBLE_EQ(rows[0].alone_ms, 1150);  // what fixing it alone saves: its cost
  EXPECT_DOUBLE_EQ(rows[1].alone_ms, 20);
  EXPECT_DOUBLE_EQ(rows[2].alone_ms, 0);
}

// A problem costs what fixing it alone buys (the run without it), not its share of fixing both:
// sim3 multi-2x4x8-1 (a slow GPU beside a slow link) was charged 18.2 ms against the 15.0 its run
// without it saves. Faults that hide each other (alone they buy little of what both buy) keep
// their shares, so that neither reads as free.
TEST(Waterfall, CostIsWhatFixingItAloneBuysUnlessFaultsHideEachOther) {
  namespace a = straggler::analyses;
  auto phase = [](double step, double gpu_fixed, double link_fixed, double both_fixed) {
    WaterfallInput in;
    in.step_ms = step, in.fixed_ms = both_fixed, in.fixed_hidden_ms = both_fixed, in.compute_ms = both_fixed;
    in.fixes = {{"straggler", "rank 20 (slow_gpu)", {20}, gpu_fixed, 0}, {"slow_link", "slow link", {}, link_fixed, 0}};
    a::PostMortem pm;
    pm.waterfall = waterfall(in);
    collectives::Verdict v;
    v.stragglers.resize(1), v.slow_links.resize(1);
    a::charge_costs(pm, v);
    return std::pair{v.stragglers[0].cost_ms_per_step, v.slow_links[0].cost_ms_per_step};
  };
  // The multi run's last phase: 141.71 measured, 126.78 with the GPU fixed, 138.46 with the link.
  const auto [gpu, link] = phase(141.71, 126.78, 138.46, 119.57);
  EXPECT_NEAR(gpu, 141.71 - 126.78, 1e-9);
  EXPECT_NEAR(link, 141.71 - 138.46, 1e-9);
  // Two faults on one critical path: either alone buys 1 ms, both 40.
  const auto [a1, a2] = phase(140, 139, 139, 100);
  EXPECT_NEAR(a1, 20, 1e-9);
  EXPECT_NEAR(a2, 20, 1e-9);
}

TEST(Waterfall, NoFixNoPipeline) {
  WaterfallInput in;
  in.step_ms = 100, in.fixed_ms = 100, in.fixed_hidden_ms = 80, in.compute_ms = 70, in.idle_ms = 5;
  const auto rows = waterfall(in);
  ASSERT_EQ(rows.size(), 4u);  // exposed communication, compute, idle, waiting
  EXPECT_DOUBLE_EQ(rows[0].ms, 20);
  EXPECT_DOUBLE_EQ(rows[3].ms, 5);
  EXPECT_NEAR(sum(rows), 100, 1e-9);
}

// The bubble never exceeds what is left; what the median rank's compute overshoots stays visible
// as negative waiting (the parts still add up).
TEST(Waterfall, BubbleAtMostWhatIsLeft) {
  WaterfallInput in;
  in.step_ms = 100, in.fixed_ms = 100, in.fixed_hidden_ms = 90, in.compute_ms = 95, in.idle_ms = 0, in.p2p_wait_ms = 30;
  const auto rows = waterfall(in);
  EXPECT_EQ(rows[3].part, "pipeline_bubble");
  EXPECT_DOUBLE_EQ(rows[3].ms, 0);
  EXPECT_DOUBLE_EQ(rows[4].ms, -5);
  EXPECT_NEAR(sum(rows), 100, 1e-9);
}

}  // namespace
