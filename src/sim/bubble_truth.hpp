// The true pipeline bubble of a simulated run (bubble_truth.cpp: the definition).
#pragma once
#include <vector>

#include "schedule.hpp"

namespace sim {

struct BubbleTruth {
  double measured = 0, theoretical = 0;  // bubble time / work, all stages and pipelines
  std::vector<double> per_stage;         // each stage's bubble time / its work
  int iterations = 0;                    // complete steady iterations measured
};

BubbleTruth bubble_truth(const Simulation& sim);

}  // namespace sim
