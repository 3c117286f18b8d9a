#include "topology/gpu_specs.hpp"

#include <algorithm>
#include <cctype>

namespace topology {

const std::vector<std::pair<std::string, GpuSpec>>& gpu_table() {
  // Match order: a pattern that another contains comes after it ("H100 NVL" before "H100",
  // "L40S" before "L4"). Dense TFLOPS from NVIDIA's datasheets (docs/mfu.md).
  static const std::vector<std::pair<std::string, GpuSpec>> t = {
      {"GB200", {"GB200", 2500, 5000}},
      {"B200", {"B200", 2250, 4500}},
      {"H200 NVL", {"H200 NVL", 835.5, 1670.5}},
      {"H200", {"H200 SXM", 989.5, 1979}},
      {"H100 NVL", {"H100 NVL", 835.5, 1670.5}},
      {"H100 PCIE", {"H100 PCIe", 756.5, 1513}},
      {"H100", {"H100 SXM", 989.5, 1979}},  // "NVIDIA H100 80GB HBM3" is the SXM part
      {"H800", {"H800 SXM", 989.5, 1979}},
      {"A100", {"A100", 312, 0}},
      {"A800", {"A800", 312, 0}},
      {"L40S", {"L40S", 362.05, 733}},
      {"L40", {"L40", 181, 362}},
      {"L4", {"L4", 121, 242.5}},
  };
  return t;
}

std::optional<Precision> parse_precision(std::string_view s) {
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  if (s == "fp8") return Precision::FP8;
  return std::nullopt;
}

std::optional<GpuSpec> find_gpu(std::string_view device_name) {
  std::string up(device_name);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  for (const auto& [pattern, spec] : gpu_table())
    if (up.find(pattern) != std::string::npos) return spec;
  return std::nullopt;
}

double peak_tflops(const GpuSpec& g, Precision p) { return p == Precision::FP8 ? g.fp8_tflops : g.bf16_tflops; }

}  // namespace topology
