// One CUDA-API vocabulary for every reader: which runtime / driver calls are kernel launches,
// synchronisations, synchronous copies or module loads (timeline.hpp ApiKind). Profilers built on
// CUPTI name the calls alike: cudaLaunchKernel, cuLaunchKernelEx, ...
#pragma once
#include <string_view>

#include "ranks/timeline.hpp"

namespace ranks {

ApiKind classify_cuda_api(std::string_view call_name);

}  // namespace ranks
