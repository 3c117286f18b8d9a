// Which physical GPU a process's CUDA ordinal is, from what an nsys export records (internal to
// ranks/). An ordinal is per process: with CUDA_VISIBLE_DEVICES set per rank (Slurm's
// --gpus-per-task) every rank sees its GPU as device 0, so only the PCI bus location (or the
// device UUID where the bus is absent) tells two ranks' GPUs apart.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sqlite_db.hpp"

namespace ranks::detail {

class GpuIdentities {
 public:
  explicit GpuIdentities(const Database& db);
  // The bus location of the GPU that process `pid` calls `ordinal` ("" when the export cannot say
  // without guessing). Tried in order: TARGET_INFO_CUDA_DEVICE's (pid, cudaId) -> gpuId ->
  // TARGET_INFO_GPU row (2026.1+), then its uuid; the only TARGET_INFO_GPU row (when its cuDevice
  // is NULL or `ordinal`). A row's id or cuDevice is never matched to the ordinal where several
  // GPUs are listed: a per-rank capture may list every GPU of its host, and each rank's device 0
  // would then be the same one.
  std::string bus_of(int64_t pid, int ordinal) const;
  // The GPU model (its peak for MFU) of TARGET_INFO_GPU id `device`, else the one name every listed
  // GPU has, else "" (some exports, the 2026.2 ones seen, have no name column).
  std::string name_of(int device) const;

 private:
  struct Gpu {
    int64_t id = -1, cu_device = -1;  // -1: NULL
    std::string bus;                  // busLocation, else "uuid:" + uuid, else ""
  };
  std::vector<Gpu> gpus_;
  std::map<int64_t, std::string> names_;  // TARGET_INFO_GPU id (-1: NULL) -> the driver's name
  std::map<std::pair<int64_t, int64_t>, int64_t> cuda_device_;  // (pid, cudaId) -> gpuId
  std::map<std::pair<int64_t, int64_t>, std::string> cuda_uuid_;  // (pid, cudaId) -> uuid
};

}  // namespace ranks::detail
