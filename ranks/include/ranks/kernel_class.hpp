// Which wall a rank's GPU time hits (issue 22; docs/walls.md): kernels by documented name classes,
// and the rank's steady window split exclusively into compute, memory, communication, other and
// idle time. A name no rule matches is `other`, never guessed.
#pragma once
#include <cstdint>
#include <string_view>

#include "ranks/timeline.hpp"

namespace ranks {

enum class KernelClass : uint8_t { Gemm, Attention, Elementwise, Norm, Reduction, Copy, Communication, Other };
constexpr int kKernelClasses = 8;
const char* kernel_class_name(KernelClass c);  // "gemm", "attention", ...

// The class of a (non-NCCL) kernel's short name, by the first rule that matches (docs/walls.md).
KernelClass classify_kernel(std::string_view short_name);

// The walls, in the order they claim time where they overlap (a GEMM overlapping a collective is
// compute time; communication counts only where no kernel runs: exposed). `copy` is memcpy and
// memset activity on the copy engines (host-device over PCIe, peer) where no kernel runs.
enum class Wall : uint8_t { Compute, Memory, Other, Communication, Copy, Idle };
constexpr int kWalls = 6;
const char* wall_name(Wall w);  // "compute", "memory", "other", "communication", "copy", "idle"
Wall wall_of(KernelClass c);

struct WallTimes {
  double wall_ns[kWalls] = {};         // exclusive: they add up to the window
  double class_ns[kKernelClasses] = {};  // kernel time per class (overlaps counted in each)
  double copy_ns = 0;                    // memcpy and memset activity
  int64_t window_ns = 0;
};

// Over [from, to) of the rank's own clock: kernels (NCCL by the annotation) and memcpy/memset
// activity.
WallTimes wall_times(const RankTimeline& tl, int64_t from, int64_t to);

}  // namespace ranks
