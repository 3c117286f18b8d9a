// The registry's built-in analyses, one line each, in writing order.
#include "analyses/builtin.hpp"

namespace straggler {

std::vector<AnalysisInfo> builtin_analyses() {
  using namespace analyses;
  return {
      {"rank_metrics", "per-rank GPU time, gaps, copies, syncs, histograms, top kernels, iterations", rank_metrics},
      {"run_inputs", "the files read and the ones that failed", run_inputs},
      {"collectives", "communicators, and per collective the arrivals, waits, blame and transfer", collectives},
      {"clock", "per-rank clock offsets and drift from matched collectives", clock},
      {"verdict", "stragglers and their cause, slow links, per-iteration blame, job change points", verdict},
      {"desync", "hangs: the first op some members never reached, and who stopped by itself", desync},
      {"findings", "root causes per rank (Book of Root Causes) tied to the stragglers", findings},
  };
}

}  // namespace straggler
