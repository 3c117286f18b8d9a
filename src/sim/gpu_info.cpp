#include "gpu_info.hpp"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "sqlite_insert.hpp"

namespace sim {
namespace {
// shared/docs/nsys-ddl/nsys-2022.4.2_schema-3.0.0_full.sql
const char* kGpuDdl = R"SQL(
CREATE TABLE TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,                    -- Serialized GlobalId.
    id                          INTEGER   NOT NULL,                    -- Device ID.
    name                        TEXT,                                  -- Device name.
    busLocation                 TEXT,                                  -- PCI bus location.
    isDiscrete                  INTEGER,                               -- True if discrete, false if integrated.
    l2CacheSize                 INTEGER,                               -- Size of L2 cache (B).
    totalMemory                 INTEGER,                               -- Total amount of memory on the device (B).
    memoryBandwidth             INTEGER,                               -- Amount of memory transferred (B).
    clockRate                   INTEGER,                               -- Clock frequency (Hz).
    smCount                     INTEGER,                               -- Number of multiprocessors on the device.
    pwGpuId                     INTEGER,                               -- PerfWorks GPU ID.
    uuid                        TEXT,                                  -- Device UUID.
    luid                        INTEGER,                               -- Device LUID.
    chipName                    TEXT,                                  -- Chip name.
    cuDevice                    INTEGER,                               -- CUDA device ID.
    ctxswDevPath                TEXT,                                  -- GPU context switch device node path.
    ctrlDevPath                 TEXT,                                  -- GPU control device node path.
    revision                    INTEGER,                               -- Revision number.
    nodeMask                    INTEGER,                               -- Device node mask.
    constantMemory              INTEGER,                               -- Memory available on device for __constant__ variables (B).
    maxIPC                      INTEGER,                               -- Maximum instructions per count.
    maxRegistersPerBlock        INTEGER,                               -- Maximum number of 32-bit registers available per block.
    maxShmemPerBlock            INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerBlockOptin       INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerSm               INTEGER,                               -- Maximum shared memory available per multiprocessor (B).
    maxRegistersPerSm           INTEGER,                               -- Maximum number of 32-bit registers available per multiprocessor.
    threadsPerWarp              INTEGER,                               -- Warp size in threads.
    asyncEngines                INTEGER,                               -- Number of asynchronous engines.
    maxWarpsPerSm               INTEGER,                               -- Maximum number of warps per multiprocessor.
    maxBlocksPerSm              INTEGER,                               -- Maximum number of blocks per multiprocessor.
    maxThreadsPerBlock          INTEGER,                               -- Maximum number of threads per block.
    maxBlockDimX                INTEGER,                               -- Maximum X-dimension of a block.
    maxBlockDimY                INTEGER,                               -- Maximum Y-dimension of a block.
    maxBlockDimZ                INTEGER,                               -- Maximum Z-dimension of a block.
    maxGridDimX                 INTEGER,                               -- Maximum X-dimension of a grid.
    maxGridDimY                 INTEGER,                               -- Maximum Y-dimension of a grid.
    maxGridDimZ                 INTEGER,                               -- Maximum Z-dimension of a grid.
    computeMajor                INTEGER,                               -- Major compute capability version number.
    computeMinor                INTEGER,                               -- Minor compute capability version number.
    smMajor                     INTEGER,                               -- Major multiprocessor version number.
    smMinor                     INTEGER                                -- Minor multiprocessor version number.
);
)SQL";
}  // namespace

void write_gpu_info(sqlite3* db, const std::vector<std::pair<int, int>>& devices, const std::string& name, int64_t& rows) {
  if (sqlite3_exec(db, kGpuDdl, nullptr, nullptr, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("TARGET_INFO_GPU: ") + sqlite3_errmsg(db));
  Insert g(db, "TARGET_INFO_GPU", {{"vmId", "1"}, {"id", ":i"}, {"name", ":n"}, {"busLocation", ":b"}, {"isDiscrete", "1"},
                                    {"totalMemory", "85520809984"}, {"smCount", "132"}, {"cuDevice", ":c"}});
  // The bus follows the physical GPU, never the ordinal: with CUDA_VISIBLE_DEVICES per rank every
  // rank's GPU is device 0, yet each sits on its own bus (what the analyser's identity reads).
  for (const auto& [ordinal, physical] : std::set<std::pair<int, int>>(devices.begin(), devices.end())) {
    g.i(g.p(":i"), physical);
    g.i(g.p(":c"), ordinal);
    g.t(g.p(":n"), name);
    g.t(g.p(":b"), fmt::format("0000:{:02x}:00.0", 0x18 + 0x10 * physical));
    g.run();
  }
  rows += g.rows;
}

}  // namespace sim
