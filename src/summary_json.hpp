// The verdict JSON of ../shared/docs/summary-contract.md (keys are a public interface).
#pragma once
#include <string>

#include "rows.hpp"

namespace straggler {
std::string summary_json(const RunSummaryInput& in);
// Writes summary_json(in) to `path` (a temporary name: OutputFiles renames it). Returns "" or
// why it failed (the system's words, e.g. "No space left on device").
std::string write_summary_json(const std::string& path, const RunSummaryInput& in);
}
