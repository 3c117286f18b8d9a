// The step-time waterfall (docs/waterfall.md): one phase's mean step split into parts that add up
// to it exactly, from the what-if replays (src/analyses/what_if.cpp) and the median healthy rank.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace straggler::analyses {

struct WaterfallRow {
  int32_t phase = 0;
  int64_t from_iteration = -1, to_iteration = -1;  // iteration numbers, inclusive
  double step_ms = 0;  // the phase's measured mean step (the parts add up to it)
  std::string part;   // straggler, slow_link, exposed_communication, compute, idle, pipeline_bubble, waiting
  std::string label;  // in words
  std::vector<int32_t> ranks;
  int32_t item = -1;  // straggler, slow_link: its index in the verdict's list (-1: the other parts)
  double ms = 0;      // per step
  double share = 0;   // ms / the phase's mean step
  double alone_ms = 0;  // straggler, slow_link: what fixing it alone saves per step (0 for the other parts)
};

struct WaterfallInput {
  int32_t phase = 0;
  int64_t from_iteration = -1, to_iteration = -1;
  double step_ms = 0;  // the phase's measured mean step
  struct Fix {
    std::string part, label;
    std::vector<int32_t> ranks;
    double step_ms = 0;  // the step with this one fixed alone
    int32_t item = -1;   // its index in the verdict's stragglers or slow links
  };
  std::vector<Fix> fixes;            // each straggler, each slow link
  double fixed_ms = 0;               // every fix together (= step_ms without fixes)
  double fixed_hidden_ms = 0;        // every fix together and communication hidden
  double compute_ms = 0, idle_ms = 0;  // the median healthy rank, per step
  double p2p_wait_ms = -1;           // its waits in pipeline p2p ops per step (PP > 1); < 0: no pipeline
};

// Parts in order: each fix (their sum is step - fixed, shared out by their savings alone), the
// exposed transfer (fixed - fixed_hidden), compute, idle, the pipeline bubble (the p2p waits, at
// most what is left) and waiting (what is left: synchronisation, and whatever the model misses;
// negative where the median rank's compute and idle exceed the replayed step).
std::vector<WaterfallRow> waterfall(const WaterfallInput& in);

}  // namespace straggler::analyses
