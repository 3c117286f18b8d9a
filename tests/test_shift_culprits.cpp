// Change-point culprits against their own baseline (collectives/shift_culprits.hpp): a host that is
// half the job (a whole pipeline stage of a 16-rank run) shifting together is named rank by rank;
// most of the ranks shifting is the job's own change and names nobody.
#include <gtest/gtest.h>

#include <cmath>

#include "../collectives/shift_culprits.hpp"

namespace {

using collectives::shift_culprits;

// 16 ranks, 10 iterations of ~160 ms own time with +-1.5 ms of deterministic jitter; the first
// `slow` ranks (from rank 16 - slow) take `extra` ms more from iteration 4 on. The job's step rises
// by `extra` there.
struct Shifted {
  std::vector<std::vector<double>> own;
  std::vector<double> job;
  Shifted(int slow, double extra) {
    own.assign(16, std::vector<double>(10, 0));
    job.assign(10, 0);
    for (int r = 0; r < 16; ++r)
      for (int i = 0; i < 10; ++i)
        own[r][i] = 160 + 1.5 * std::sin(7.0 * r + 3.0 * i) + (r >= 16 - slow && i >= 4 ? extra : 0);
    for (int i = 0; i < 10; ++i) job[i] = 200 + (i >= 4 ? extra : 0);
  }
};

TEST(ShiftCulprits, HalfTheJobShiftingTogetherIsNamedRankByRank) {
  const Shifted run(8, 40);
  const auto found = shift_culprits(run.own, run.job, 10, {4});
  ASSERT_EQ(found.size(), 8u);  // against all ranks' shifts (median between the groups) none was
  for (size_t k = 0; k < found.size(); ++k) {
    EXPECT_EQ(found[k].rank_index, 8 + k);
    EXPECT_EQ(found[k].at, 4u);
  }
}

TEST(ShiftCulprits, MostRanksShiftingIsTheJobsOwnChange) {
  const Shifted run(9, 40);
  EXPECT_TRUE(shift_culprits(run.own, run.job, 10, {4}).empty());
}

TEST(ShiftCulprits, NoShiftNoCulprit) {
  const Shifted run(8, 0.5);
  EXPECT_TRUE(shift_culprits(run.own, run.job, 10, {4}).empty());
}

}  // namespace
