#include "ranks/cuda_api.hpp"

namespace ranks {

ApiKind classify_cuda_api(std::string_view n) {
  auto starts = [&](std::string_view p) { return n.substr(0, p.size()) == p; };
  if (starts("cudaLaunch") || starts("cuLaunch") || starts("cudaGraphLaunch") || starts("cuGraphLaunch"))
    return ApiKind::Launch;
  // Explicit synchronizations, plus synchronous copies (cudaMemcpy without Async) that block the host.
  if (starts("cudaDeviceSynchronize") || starts("cudaStreamSynchronize") || starts("cudaEventSynchronize") ||
      starts("cuCtxSynchronize") || starts("cuStreamSynchronize") || starts("cuEventSynchronize"))
    return ApiKind::Sync;
  if ((starts("cudaMemcpy") || starts("cuMemcpy")) && n.find("Async") == std::string_view::npos &&
      n.find("ToSymbol") == std::string_view::npos)
    return ApiKind::Memcpy;
  if (starts("cuLibraryLoad") || starts("cuModuleLoad") || starts("cuLinkComplete") || starts("cudaLibraryLoad"))
    return ApiKind::ModuleLoad;
  return ApiKind::Other;
}

}  // namespace ranks
