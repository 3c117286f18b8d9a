// The scaling analysis (docs/scaling-cliffs.md): its tables, summary rows and report text, shared by the
// scan (one run: /scaling/groups and /scaling/rows) and `straggler-scan scaling` (several runs).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "analysis.hpp"
#include "collectives/scaling.hpp"
#include "table.hpp"

namespace straggler::analyses {

const tables::Table<collectives::ScalingGroup>& scaling_groups_table();
const tables::Table<collectives::ScalingRow>& scaling_rows_table();

// Summary key `scaling` (../shared/docs/summary-contract.md): one object per row.
std::string scaling_json(const std::vector<collectives::ScalingRow>& rows);
// The report's scaling section ("" when there is nothing to say).
std::string scaling_report(const std::vector<collectives::ScalingRow>& rows, bool across_runs, double cliff_factor);

// --fabric and --topology (one-line errors naming the file: common::UsageError).
collectives::ScalingOptions scaling_options(const std::string& fabric_file, const std::string& topology_file,
                                            std::shared_ptr<const topology::Fabric>& fabric_holder);

// The like-collective groups a finished scan measured (its scaling analysis), or none.
std::vector<collectives::ScalingGroup> scaling_groups(const std::vector<std::unique_ptr<Analysis>>& analyses);

}  // namespace straggler::analyses
