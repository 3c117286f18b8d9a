// Dense tensor-core peaks of the GPUs training jobs run on (issue 22, MFU; docs/mfu.md has the
// table and its sources: NVIDIA's datasheets, dense figures, i.e. half the "with sparsity" ones).
// A device is recognised by its name as the driver reports it (TARGET_INFO_GPU.name, e.g.
// "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 PCIe").
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topology {

struct GpuSpec {
  std::string model;       // "H100 SXM", "H100 PCIe", ...
  double bf16_tflops = 0;  // dense; fp16 the same on every listed part
  double fp8_tflops = 0;   // dense; 0 where the part has no FP8 tensor cores
};

enum class Precision { BF16, FP16, FP8 };
// "bf16", "fp16", "fp8"; nullopt for anything else.
std::optional<Precision> parse_precision(std::string_view s);

// The spec whose pattern the name contains (case-insensitive; the most specific pattern first),
// or nullopt: never a guess for an unknown part.
std::optional<GpuSpec> find_gpu(std::string_view device_name);
double peak_tflops(const GpuSpec& g, Precision p);  // 0 when the part lacks that precision
const std::vector<std::pair<std::string, GpuSpec>>& gpu_table();  // pattern -> spec, in match order

}  // namespace topology
