// The verdict JSON of ../shared/docs/summary-contract.md (keys are a public interface).
#pragma once
#include <string>

#include "rows.hpp"

namespace straggler {
std::string summary_json(const RunSummaryInput& in);
// Written under a temporary name and renamed; throws std::runtime_error naming the file.
void write_summary_json(const std::string& path, const RunSummaryInput& in);
}
