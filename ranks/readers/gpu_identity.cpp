#include "gpu_identity.hpp"

#include <set>

#include "common/text.hpp"

namespace ranks::detail {
namespace {

// Bus ids and UUIDs are short ASCII; anything else in a hostile file is cut, never trusted raw.
std::string clean(std::string_view s) { return common::ascii_only(s, 64); }

}  // namespace

GpuIdentities::GpuIdentities(const Database& db) {
  if (db.has_table("TARGET_INFO_GPU")) {
    const auto cols = db.columns("TARGET_INFO_GPU");
    Statement s(db.handle(),
                "SELECT " + col_or(cols, "id", "NULL") + ", " + col_or(cols, "cuDevice", "NULL") + ", " +
                    col_or(cols, "busLocation", "NULL") + ", " + col_or(cols, "uuid", "NULL") + ", " +
                    col_or(cols, "name", "NULL") +
                    " FROM TARGET_INFO_GPU LIMIT 1024",
                db.path());
    while (s.step()) {
      Gpu g;
      if (!s.null(0)) g.id = s.i64(0);
      if (!s.null(1)) g.cu_device = s.i64(1);
      if (!s.null(2)) g.bus = clean(s.text(2));
      if (g.bus.empty() && !s.null(3) && !clean(s.text(3)).empty()) g.bus = "uuid:" + clean(s.text(3));
      if (!s.null(4)) names_[s.null(0) ? -1 : s.i64(0)] = common::ascii_only(s.text(4), 128);
      gpus_.push_back(std::move(g));
    }
  }
  // 2026.1+: which GPU each process's ordinal is (seen in data/real/nsysai_mock_1gpu.sqlite).
  if (db.has_table("TARGET_INFO_CUDA_DEVICE")) {
    const auto cols = db.columns("TARGET_INFO_CUDA_DEVICE");
    if (!cols.count("pid") || !cols.count("cudaId")) return;
    Statement s(db.handle(),
                "SELECT pid, cudaId, " + col_or(cols, "gpuId", "NULL") + ", " + col_or(cols, "uuid", "NULL") +
                    " FROM TARGET_INFO_CUDA_DEVICE LIMIT 65536",
                db.path());
    while (s.step()) {
      if (s.null(0) || s.null(1)) continue;
      const auto key = std::make_pair(s.i64(0), s.i64(1));
      if (!s.null(2)) cuda_device_[key] = s.i64(2);
      if (!s.null(3) && !clean(s.text(3)).empty()) cuda_uuid_[key] = "uuid:" + clean(s.text(3));
    }
  }
}

std::string GpuIdentities::name_of(int device) const {
  if (auto it = names_.find(device); it != names_.end()) return it->second;
  std::set<std::string> names;
  for (const auto& [id, n] : names_) names.insert(n);
  return names.size() == 1 ? *names.begin() : std::string();
}

std::string GpuIdentities::bus_of(int64_t pid, int ordinal) const {
  if (ordinal < 0) return "";
  const auto key = std::make_pair(pid, int64_t(ordinal));
  if (auto it = cuda_device_.find(key); it != cuda_device_.end()) {
    const Gpu* hit = nullptr;
    for (const auto& g : gpus_)
      if (g.id == it->second) {
        if (hit) return "";  // two rows with one id: a damaged file, no identity
        hit = &g;
      }
    if (hit && !hit->bus.empty()) return hit->bus;
  }
  if (auto it = cuda_uuid_.find(key); it != cuda_uuid_.end()) return it->second;
  // The only GPU the capture saw ran the kernels. With several rows, neither id nor cuDevice is
  // known to be in the process's numbering (a per-rank capture may list every GPU of its host
  // with cuDevice 0..7 while the rank, under CUDA_VISIBLE_DEVICES, calls its own GPU 0): no guess.
  if (gpus_.size() == 1 && (gpus_.front().cu_device < 0 || gpus_.front().cu_device == ordinal)) return gpus_.front().bus;
  return "";
}

}  // namespace ranks::detail
