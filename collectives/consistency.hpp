// Consistency evidence for the straggler verdict (verdict.hpp): is a rank's excess there in
// iteration after iteration, more often than chance allows among all the ranks compared?
//
// Why: a summed excess can come from one iteration (a host hiccup, a page-fault storm), and the
// more ranks are compared the more such extremes there are (4096 ranks over 2 steady iterations
// always hold a few). A straggler repeats. Per steady iteration and role, each rank's value gets a
// robust z against its role peers of that iteration (median, 1.4826 MAD; a role of two uses the
// MAD of every rank's residual in that iteration), the MAD floored at a share of that iteration's
// job step. An iteration counts as "high" when z >= the threshold.
//
// How high matters too: a GPU 1.3x slow stands 20 robust sigmas above its peers in every
// iteration, where host hiccups rarely reach that. So the test is tried at each level t a rank
// reached in the window (its own high values): the chance rate p(t) of a cell at least t high is the
// share of such cells among all ranks and steady iterations, floored at chance_floor x (high_z /
// t)^2 (a tail no thinner than Chebyshev's 1/t^2, anchored at chance_floor at the threshold; t
// capped at floor_cap_z): a quiet run must not make one unlucky iteration damning. A rank with c of
// its n iterations at least t high passes when N * T * P(Binomial(n, p(t)) >= c) <= alpha
// (Bonferroni over the N ranks compared and the T levels tried), so the evidence needed grows with
// the number of ranks and shrinks with the iterations seen and with how far above its peers the
// rank stands. A straggler repeats: one high iteration, however high, never passes (a capture
// with one steady iteration is too short). When even n iterations at the cap cannot pass, the
// window is too short to name anyone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace collectives {

inline constexpr size_t kLeastRepeats = 2;  // high iterations a straggler needs at least

struct ConsistencyOptions {
  double high_z = 2.5;         // an iteration counts as high from this robust z
  double floor_share = 0.005;  // per-iteration MAD floor: share of that iteration's job step
  double null_floor = 0.02;    // least chance rate of a high iteration assumed
  double alpha = 0.05;         // chance of naming one rank by chance, over all ranks compared
  double floor_cap_z = 40;     // the floor of the chance rate stops falling at this z
};

class Consistency {
 public:
  // values[rank][iteration] (ms, iteration 0 the warm-up, ignored), over iterations [1, common);
  // role[rank] groups the peers; job_step_ms[iteration] scales the floor.
  // `named` (optional, per rank): ranks already found to repeat, whose cells are left out of the
  // chance rate: the rate is that of a rank that is no straggler, and two stragglers among 8
  // ranks would otherwise make a third one's high iterations look common (verdict.cpp repeats the
  // test once ranks are named).
  Consistency(const std::vector<std::vector<double>>& values, const std::vector<int>& role,
              const std::vector<double>& job_step_ms, size_t common, const ConsistencyOptions& opt,
              const std::vector<uint8_t>& named = {});
  // Whether rank i's iterations in [from, to) pass the family-wise test at some level; `tests`: how
  // many windows were tried per rank (a stretch chosen because the rank changed there is chosen
  // after the fact).
  bool passes(size_t i, size_t from, size_t to, double tests = 1) const;
  // Whether c iterations out of n at least z high pass, `levels` levels tried.
  bool passes_at(size_t c, size_t n, double z, double tests = 1, double levels = 1) const;
  // Least number of steady iterations in which a rank at floor_cap_z in all of them passes
  // (SIZE_MAX: none up to 1000).
  size_t min_iterations() const;
  // Chance rate of a cell at least z high (see above).
  double chance(double z) const;
  double z(size_t i, size_t it) const { return z_[i][it]; }

 private:
  std::vector<std::vector<double>> z_;
  std::vector<double> sorted_;  // every cell's z, ascending
  size_t ranks_ = 0;
  ConsistencyOptions opt_;
};

// P(Binomial(n, p) >= c).
double binomial_tail(size_t n, size_t c, double p);

}  // namespace collectives
