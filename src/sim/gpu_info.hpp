// TARGET_INFO_GPU: the GPUs of a capture with the driver's device names (--gpu-name), written
// where the export schema has the table (3.0 here; the 2026.2 exports seen have none).
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sim {

// Creates the table (nsys 2022.4.2 DDL, verbatim) and one row per (CUDA ordinal the process sees,
// physical GPU index on its host) in `devices`: id and busLocation from the physical GPU, cuDevice
// the ordinal.
void write_gpu_info(sqlite3* db, const std::vector<std::pair<int, int>>& devices, const std::string& name, int64_t& rows);

}  // namespace sim
