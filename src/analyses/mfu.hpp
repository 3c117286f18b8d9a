// Model FLOPs utilisation (issue 22; docs/mfu.md): the model's FLOPs per step over the step time,
// as a share of the job's peak (GPUs x the dense peak of their model, topology/gpu_specs.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace straggler::analyses {

struct MfuInput {
  double flops_per_step = 0;  // the whole job's model FLOPs per step (0: not given)
  double peak_tflops = 0;     // one GPU's dense peak (0: unknown)
  int gpus = 0;               // GPUs of the job
  std::vector<int64_t> iteration;  // iteration numbers, in order
  std::vector<double> step_ms;     // the job's step per iteration (median over ranks)
  std::vector<int64_t> change_points;  // iteration numbers where the step time shifted
};

struct MfuIteration {
  int64_t iteration = 0;
  double step_ms = 0, mfu = 0;  // mfu NaN when not computable
};
struct MfuPhase {
  int64_t from_iteration = 0, to_iteration = 0;  // inclusive
  int32_t iterations = 0;
  double step_ms = 0, mfu = 0;  // mean step; FLOPs x iterations / (sum of steps x peak x gpus)
};
struct MfuResult {
  std::vector<MfuIteration> iterations;
  std::vector<MfuPhase> phases;  // between change points (one phase without any)
  double mfu = 0;                // over every iteration listed
};

// MFU per iteration and per phase; NaN everywhere when the FLOPs or the peak are unknown.
MfuResult compute_mfu(const MfuInput& in);

}  // namespace straggler::analyses
