// TARGET_INFO_GPU: the GPUs of a capture with the driver's device names (--gpu-name), written
// where the export schema has the table (3.0 here; the 2026.2 exports seen have none).
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sim {

// Creates the table (nsys 2022.4.2 DDL, verbatim) and one row per device id in `devices`.
void write_gpu_info(sqlite3* db, const std::vector<int>& devices, const std::string& name, int64_t& rows);

}  // namespace sim
