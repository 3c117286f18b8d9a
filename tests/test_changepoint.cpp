// Change points: a planted level shift is found at its index; noise and one-off spikes are not.
#include <gtest/gtest.h>

#include <random>

#include "ranks/changepoint.hpp"

using namespace ranks;

TEST(ChangePoints, FindsAPlantedShiftInNoise) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0, 0.02 * 100);  // 2% jitter
    std::vector<double> x;
    for (int i = 0; i < 40; ++i) x.push_back((i < 17 ? 100 : 130) + noise(rng));
    auto cps = change_points(x);
    ASSERT_EQ(cps.size(), 1u) << "seed " << seed;
    EXPECT_EQ(cps[0].index, 17u) << "seed " << seed;
    EXPECT_NEAR(cps[0].before, 100, 3);
    EXPECT_NEAR(cps[0].after, 130, 3);
  }
}

TEST(ChangePoints, HealthyNoiseAndSpikesGiveNone) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0, 5);  // 5% jitter
    std::vector<double> x;
    for (int i = 0; i < 40; ++i) x.push_back(100 + noise(rng));
    x[20] = 180;  // one slow step (GC pause): not a change of level
    EXPECT_TRUE(change_points(x).empty()) << "seed " << seed;
  }
}

TEST(ChangePoints, TwoShifts) {
  std::vector<double> x;
  for (int i = 0; i < 30; ++i) x.push_back(i < 10 ? 50 : i < 20 ? 80 : 50);
  auto cps = change_points(x);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 10u);
  EXPECT_EQ(cps[1].index, 20u);
}

// A hostile profile may hold millions of tiny iterations in a staircase: the segmentation stops at
// max_changes (it recursed once per step before: quadratic time, a stack as deep as the steps).
TEST(ChangePoints, StaircaseIsBoundedInChangesAndWork) {
  std::vector<double> x;
  for (int i = 0; i < 300'000; ++i) x.push_back(100.0 + double(i / 3) * 10.0);  // a step every 3 points
  const auto cps = ranks::change_points(x);
  EXPECT_GT(cps.size(), 0u);
  EXPECT_LE(cps.size(), ranks::ChangePointOptions{}.max_changes);
  for (size_t i = 1; i < cps.size(); ++i) EXPECT_LT(cps[i - 1].index, cps[i].index);
}

// A fault that starts in the capture's last iteration (one slow GPU from iteration 8 of 9 found):
// no change point (a one-off slow step is none), but a rise of the tail. A tail within the noise,
// a one-off slow step before the end, or too few points before, is none.
TEST(ChangePoints, ARiseInTheLastPointsIsATail) {
  const std::vector<double> base = {248.4, 247.0, 249.6, 248.7, 250.1, 246.7, 251.2};
  std::vector<double> x = base;
  x.push_back(303.8);
  EXPECT_TRUE(change_points(x).empty());
  auto t = ranks::tail_rise(x);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->index, 7u);
  EXPECT_NEAR(t->after, 303.8, 1e-9);
  x.push_back(301.0);  // two slow points: the tail is both
  t = ranks::tail_rise(x);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->index, 7u);
  std::vector<double> quiet = base;
  quiet.push_back(253.0);  // +2%: within 5% of the level
  EXPECT_FALSE(ranks::tail_rise(quiet));
  std::vector<double> spike = base;
  spike.push_back(303.8), spike.push_back(249.0);  // slow, then back: no tail
  EXPECT_FALSE(ranks::tail_rise(spike));
  const std::vector<double> short_run = {248.4, 247.0, 249.6, 303.8};
  EXPECT_FALSE(ranks::tail_rise(short_run));
  // straggler-sim's realistic noise (seed 11, 5% of steps 10% slower): two spikes before, and the
  // last two steps 7-10% up, below them: noise, no tail (it named a late host delay).
  const std::vector<double> noisy = {76.3, 73.9, 74.4, 74.2, 73.7, 74.4, 74.1, 91.9, 74.1, 74.3, 88.3, 74.1, 74.1, 79.2, 81.9};
  EXPECT_FALSE(ranks::tail_rise(noisy));
  std::vector<double> risen = noisy;
  risen.back() = 95.0, risen[risen.size() - 2] = 93.0;  // above every step before: a tail
  EXPECT_TRUE(ranks::tail_rise(risen));
}
