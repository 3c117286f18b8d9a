// The per-iteration evidence of the straggler verdict (collectives/consistency.hpp): how many
// iterations, how high, among how many ranks.
#include <gtest/gtest.h>

#include <vector>

#include "consistency.hpp"

namespace {

using collectives::Consistency;
using collectives::ConsistencyOptions;

// `ranks` ranks of one role over `iters` iterations (0 the warm-up), values in ms: a deterministic
// spread of +-0.3 ms (z within about +-1.5 against the 0.5% floor of a 100 ms step), plus `bump`.
struct Grid {
  std::vector<std::vector<double>> v;
  std::vector<int> role;
  std::vector<double> step;
  Grid(size_t ranks, size_t iters) : v(ranks, std::vector<double>(iters, 0.0)), role(ranks, 0), step(iters, 100.0) {
    for (size_t i = 0; i < ranks; ++i)
      for (size_t it = 0; it < iters; ++it) v[i][it] = 0.3 * double(int((i * 7 + it * 13) % 11) - 5) / 5.0;
  }
  Consistency make() const { return Consistency(v, role, step, step.size(), ConsistencyOptions{}); }
};

TEST(Consistency, AFarOutlierInBothOfTwoIterationsPassesAmong4096Ranks) {
  Grid g(4096, 3);
  g.v[1234][1] += 12, g.v[1234][2] += 12;  // ~24 robust sigmas (floor 0.5 ms)
  const auto c = g.make();
  EXPECT_TRUE(c.passes(1234, 1, 3));
  EXPECT_EQ(c.min_iterations(), 2u);
  // The same rank only 2 sigmas high: nothing.
  Grid h(4096, 3);
  h.v[1234][1] += 1.5, h.v[1234][2] += 1.5;
  EXPECT_FALSE(h.make().passes(1234, 1, 3));
}

TEST(Consistency, ALoneExtremeIterationIsNoStraggler) {
  Grid g(4096, 3);
  g.v[77][2] += 30;
  EXPECT_FALSE(g.make().passes(77, 1, 3));
  Grid s(32, 11);  // also among few ranks over many iterations
  s.v[5][6] += 30;
  EXPECT_FALSE(s.make().passes(5, 1, 11));
}

// Where hiccups of that size are common (5% of all cells here), two of them on one rank are chance.
TEST(Consistency, LevelsThatNoiseReachesOftenNeedMoreIterations) {
  Grid g(4096, 3);
  for (size_t i = 0; i < 4096; i += 20) g.v[i][1 + (i / 20) % 2] += 12;
  g.v[1234][1] += 12, g.v[1234][2] += 12;
  const auto c = g.make();
  EXPECT_GT(c.chance(20), 0.02);  // 205 of 8192 cells
  EXPECT_FALSE(c.passes(1234, 1, 3));
  // Over ten iterations the same rank high in all of them stands out again.
  Grid l(4096, 11);
  for (size_t i = 0; i < 4096; i += 20) l.v[i][1 + (i / 20) % 10] += 12;
  for (size_t it = 1; it < 11; ++it) l.v[1234][it] += 12;
  EXPECT_TRUE(l.make().passes(1234, 1, 11));
}

TEST(Consistency, ModestButEveryIterationPassesOverALongRun) {
  Grid g(32, 13);
  for (size_t it = 1; it < 13; ++it) g.v[9][it] += 1.6;  // ~3 sigmas, every iteration
  EXPECT_TRUE(g.make().passes(9, 1, 13));
  EXPECT_FALSE(g.make().passes(9, 1, 3));  // two of them are not enough
}

}  // namespace

namespace {
// One steady iteration is no repetition, however far out (a capture of 3 repeating units without
// step markers leaves one steady unit: too short, not healthy).
TEST(Consistency, OneSteadyIterationIsTooShortWhateverItsHeight) {
  Grid g(256, 2);
  g.v[9][1] += 100;
  const auto c = g.make();
  EXPECT_FALSE(c.passes(9, 1, 2));
  EXPECT_EQ(c.min_iterations(), 2u);
}
}  // namespace

// Two stragglers among 8 ranks fill a large share of the high cells: judged by that share, a third
// rank high in 6 late iterations of 15 looks like chance. Once the two are named their cells leave
// the chance rate (the rate of a rank that is no straggler), and the third passes; nobody else does.
TEST(Consistency, NamedStragglersLeaveTheChanceRate) {
  Grid g(8, 16);
  for (size_t it = 1; it < 16; ++it) g.v[1][it] += 20, g.v[5][it] += 20;  // two far stragglers throughout
  for (size_t it = 10; it < 16; ++it) g.v[3][it] += 4;                     // a third, from iteration 10
  const auto all = g.make();
  EXPECT_TRUE(all.passes(1, 1, 16));
  EXPECT_FALSE(all.passes(3, 10, 16, 28));  // a picked stretch: 28 stretches could have been picked
  std::vector<uint8_t> named(8, 0);
  named[1] = named[5] = 1;
  const Consistency without(g.v, g.role, g.step, g.step.size(), ConsistencyOptions{}, named);
  EXPECT_LT(without.chance(8), all.chance(8));
  EXPECT_TRUE(without.passes(3, 10, 16, 28));
  for (size_t i : {0, 2, 4, 6, 7}) EXPECT_FALSE(without.passes(i, 1, 16)) << i;
}
