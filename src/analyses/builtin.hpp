// The built-in analyses (each in its own file here); builtin.cpp registers them.
#pragma once
#include <memory>

#include "analysis.hpp"

namespace straggler::analyses {

std::unique_ptr<Analysis> rank_metrics();  // /ranks, /histograms, /kernels/top, /iterations
std::unique_ptr<Analysis> run_inputs();    // /inputs, /failures
std::unique_ptr<Analysis> collectives();   // /collectives: communicators, per-op waits and blame
std::unique_ptr<Analysis> clock();         // /clock
std::unique_ptr<Analysis> verdict();       // /stragglers, /slow_links, /iterations/{matrices, job, change points}
std::unique_ptr<Analysis> desync();        // /desync, /capture_ended
std::unique_ptr<Analysis> findings();      // /findings
std::unique_ptr<Analysis> pipeline(const Options& spec);  // /pipeline: bubble against the schedule's promise
std::unique_ptr<Analysis> walls();         // /walls: which wall the step hits
std::unique_ptr<Analysis> mfu(const Options& spec);       // /mfu: model FLOPs utilisation per iteration and phase
std::unique_ptr<Analysis> scaling(const Options& spec);
std::unique_ptr<Analysis> what_if();
std::unique_ptr<Analysis> problems();
std::unique_ptr<Analysis> kernel_names();  // /kernels/steady: each kernel name per rank (for compare)      // /what_if: what fixing each cause buys (replay)   // /scaling: collectives by size and span against the fabric model

}  // namespace straggler::analyses
