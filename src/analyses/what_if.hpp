// What-if replay rows (src/analyses/what_if.cpp, docs/what-if.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace straggler::analyses {

struct WhatIfRow {
  std::string change, kind;  // kind: measured, fix_rank, fix_link, fix_all, balance_stages, hide_communication
  std::vector<int32_t> ranks;
  double step_ms = 0, speedup = 1;
  int64_t from_iteration = -1, to_iteration = -1;  // the window replayed (iteration numbers, inclusive)
};

// The row that fixes every straggler and slow link (fix_all, else the only fix_rank or fix_link);
// null when there is none.
const WhatIfRow* ideal_row(const std::vector<WhatIfRow>& rows);
// Summary value of `what_if` (../shared/docs/summary-contract.md): null without rows.
std::string what_if_json(const std::vector<WhatIfRow>& rows);
std::string what_if_report(const std::vector<WhatIfRow>& rows);

}  // namespace straggler::analyses
