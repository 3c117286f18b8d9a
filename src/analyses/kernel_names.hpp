// Kernel names per rank over the steady window (src/analyses/kernel_names.cpp): the rows
// `straggler-scan compare` reads back from a scan's HDF5.
#pragma once
#include <cstdint>
#include <string>

#include "analysis.hpp"
#include "table.hpp"

namespace straggler::analyses {

struct KernelNameRow {
  int32_t rank = -1;
  std::string name;
  uint8_t nccl = 0;
  int64_t count = 0;
  double total_ms = 0;
  int32_t steps = 0;  // the rank's steady iterations (1 when it has no steady window: the whole capture)
};
const tables::Table<KernelNameRow>& kernel_names_table();
// The rows a scan's kernel_names analysis holds (this process's ranks; all of them in a loaded scan).
std::vector<KernelNameRow> kernel_name_rows(const std::vector<std::unique_ptr<Analysis>>& analyses);

}  // namespace straggler::analyses
