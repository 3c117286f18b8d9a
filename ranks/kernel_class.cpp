#include "ranks/kernel_class.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace ranks {
namespace {

// First match wins (lower-case substrings). Sources: cuBLAS/CUTLASS kernel naming (sm80_xmma_gemm,
// nvjet, cutlass), FlashAttention and PyTorch's ATen kernel names, Triton's inductor prefixes
// (triton_mm/tem: templates, triton_red/per: reductions, triton_poi: pointwise).
// Triton's prefixes come first: a fused pointwise kernel's name carries its ops' words
// ("triton_poi_fused_convert_element_type_0").
const std::array<std::pair<KernelClass, std::vector<std::string_view>>, 9> kRules = {{
    {KernelClass::Elementwise, {"triton_poi"}},
    {KernelClass::Reduction, {"triton_red", "triton_per"}},
    {KernelClass::Gemm, {"triton_mm", "triton_tem"}},
    {KernelClass::Attention, {"flash", "fmha", "attention", "attn", "sdpa", "xformers"}},
    {KernelClass::Gemm, {"gemm", "xmma", "cutlass", "cublas", "nvjet", "matmul", "wgmma", "hmma", "s16816", "s1688",
                         "s884", "conv2d", "conv3d", "convolution", "implicit_convolve"}},
    {KernelClass::Norm, {"layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "group_norm",
                         "groupnorm", "instance_norm"}},
    {KernelClass::Reduction, {"softmax", "reduce", "cross_entropy", "nll_loss", "argmax", "topk"}},
    {KernelClass::Copy, {"copy", "catarray", "concat", "memcpy", "memset", "transpose", "gather", "scatter", "index", "fill"}},
    {KernelClass::Elementwise, {"elementwise", "pointwise", "vectorized", "unrolled", "multi_tensor_apply",
                                "gelu", "silu", "relu", "dropout", "adam"}},
}};

}  // namespace

const char* kernel_class_name(KernelClass c) {
  static const char* const n[] = {"gemm", "attention", "elementwise", "norm", "reduction", "copy", "communication", "other"};
  return n[int(c)];
}
const char* wall_name(Wall w) {
  static const char* const n[] = {"compute", "memory", "other", "communication", "copy", "idle"};
  return n[int(w)];
}

KernelClass classify_kernel(std::string_view short_name) {
  std::string s(short_name.substr(0, 512));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const auto& [cls, words] : kRules)
    for (auto w : words)
      if (s.find(w) != std::string::npos) return cls;
  return KernelClass::Other;
}

Wall wall_of(KernelClass c) {
  switch (c) {
    case KernelClass::Gemm:
    case KernelClass::Attention: return Wall::Compute;
    case KernelClass::Elementwise:
    case KernelClass::Norm:
    case KernelClass::Reduction:
    case KernelClass::Copy: return Wall::Memory;
    case KernelClass::Communication: return Wall::Communication;
    default: return Wall::Other;
  }
}

namespace {

using Spans = std::vector<std::pair<int64_t, int64_t>>;  // disjoint, sorted

// Appends [s, e) to a union built from intervals in start order (linear: rows are sorted by start).
void extend(Spans& u, int64_t s, int64_t e) {
  if (e <= s) return;
  if (!u.empty() && s <= u.back().second) u.back().second = std::max(u.back().second, e);
  else u.push_back({s, e});
}

int64_t length(const Spans& u) {
  int64_t n = 0;
  for (const auto& [s, e] : u) n += e - s;
  return n;
}

// |a intersect b| and a union b, both linear in the two sorted lists.
int64_t overlap(const Spans& a, const Spans& b) {
  int64_t n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    n += std::max<int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    a[i].second < b[j].second ? ++i : ++j;
  }
  return n;
}
Spans merged(const Spans& a, const Spans& b) {
  Spans out;
  out.reserve(a.size() + b.size());
  for (size_t i = 0, j = 0; i < a.size() || j < b.size();) {
    const bool take_a = j == b.size() || (i < a.size() && a[i].first <= b[j].first);
    const auto& x = take_a ? a[i++] : b[j++];
    extend(out, x.first, x.second);
  }
  return out;
}

}  // namespace

WallTimes wall_times(const RankTimeline& tl, int64_t from, int64_t to) {
  WallTimes w;
  if (to <= from) return w;
  w.window_ns = to - from;
  // Each wall's busy time as a union of intervals (kernels and copies are sorted by start), then
  // each wall's share that no wall before it in priority order covers.
  Spans busy[kWalls];
  const auto& k = tl.kernels;
  std::vector<KernelClass> by_name;  // classes per name id, computed once
  for (size_t i = 0; i < k.size(); ++i) {
    KernelClass c = KernelClass::Communication;
    if (k.is_nccl.empty() || !k.is_nccl[i]) {
      const uint32_t n = k.name[i];
      if (n >= tl.names.size()) {
        c = KernelClass::Other;  // no name: no class
      } else {
        if (by_name.empty()) by_name.assign(tl.names.size(), KernelClass(255));
        if (by_name[n] == KernelClass(255)) by_name[n] = classify_kernel(tl.names.str(n));
        c = by_name[n];
      }
    }
    const int64_t s = std::max(k.start[i], from), e = std::min(k.end[i], to);
    if (e <= s) continue;
    w.class_ns[int(c)] += double(e - s);
    extend(busy[int(wall_of(c))], s, e);
  }
  for (size_t i = 0; i < tl.copies.size(); ++i) {
    const int64_t s = std::max(tl.copies.start[i], from), e = std::min(tl.copies.end[i], to);
    if (e <= s) continue;
    w.copy_ns += double(e - s);
    extend(busy[int(Wall::Copy)], s, e);
  }
  Spans cover;
  for (int x = 0; x < kWalls - 1; ++x) {
    w.wall_ns[x] = double(length(busy[x]) - overlap(busy[x], cover));
    cover = merged(cover, busy[x]);
  }
  w.wall_ns[int(Wall::Idle)] = double(w.window_ns - length(cover));
  return w;
}

}  // namespace ranks
