// Consistency evidence for the straggler verdict (verdict.hpp): is a rank's excess there in
// iteration after iteration, more often than chance allows among all the ranks compared?
//
// Why: a summed excess can come from one iteration (a host hiccup, a page-fault storm), and the
// more ranks are compared the more such extremes there are (4096 ranks over 2 steady iterations
// always hold a few). A straggler repeats. Per steady iteration and role, each rank's value gets a
// robust z against its role peers of that iteration (median, 1.4826 MAD; a role of two uses the
// MAD of every rank's residual in that iteration), the MAD floored at a share of that iteration's
// job step. An iteration counts as "high" when z >= the threshold. The rate p0 of high cells among
// all ranks and steady iterations estimates how often chance alone gives one (floored: a quiet run
// must not make one unlucky iteration damning). A rank high in c of the n iterations of a window
// passes when N * P(Binomial(n, p0) >= c) <= alpha (Bonferroni over the N ranks compared), so the
// evidence needed grows with the number of ranks and shrinks with the iterations seen. When even
// c = n cannot pass, the window is too short to name anyone.
#pragma once
#include <cstddef>
#include <vector>

namespace collectives {

struct ConsistencyOptions {
  double high_z = 2.5;         // an iteration counts as high from this robust z
  double floor_share = 0.005;  // per-iteration MAD floor: share of that iteration's job step
  double null_floor = 0.02;    // least chance rate of a high iteration assumed
  double alpha = 0.05;         // chance of naming one rank by chance, over all ranks compared
};

class Consistency {
 public:
  // values[rank][iteration] (ms, iteration 0 the warm-up, ignored), over iterations [1, common);
  // role[rank] groups the peers; job_step_ms[iteration] scales the floor.
  Consistency(const std::vector<std::vector<double>>& values, const std::vector<int>& role,
              const std::vector<double>& job_step_ms, size_t common, const ConsistencyOptions& opt);
  // High iterations of rank i in [from, to).
  size_t high(size_t i, size_t from, size_t to) const;
  // Whether c high iterations out of n pass the family-wise test; `tests`: how many windows were
  // tried per rank (a stretch chosen because the rank changed there is chosen after the fact).
  bool passes(size_t c, size_t n, double tests = 1) const;
  // Least number of steady iterations in which a rank high in all of them passes (SIZE_MAX: none
  // up to 1000).
  size_t min_iterations() const;
  double null_rate() const { return p0_; }
  double z(size_t i, size_t it) const { return z_[i][it]; }

 private:
  std::vector<std::vector<double>> z_;
  double p0_ = 0;
  size_t ranks_ = 0;
  ConsistencyOptions opt_;
};

// P(Binomial(n, p) >= c).
double binomial_tail(size_t n, size_t c, double p);

}  // namespace collectives
