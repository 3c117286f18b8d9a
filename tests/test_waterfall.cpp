// The step-time waterfall's arithmetic (src/analyses/waterfall.hpp, docs/waterfall.md).
#include <gtest/gtest.h>

#include "analyses/waterfall.hpp"

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
