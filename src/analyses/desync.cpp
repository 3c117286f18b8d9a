// Hangs (collectives/desync.hpp): per communicator the first op some members never reached, who
// stopped by itself, and communicators whose members' captures merely ended early.
#include <algorithm>
#include <iterator>

#include "analyses/builtin.hpp"
#include "json_rows.hpp"
#include "tables/cross_tables.hpp"

namespace straggler::analyses {
namespace {

class Desync : public Analysis {
 public:
  void tables(const RunResults& res, tables::ResultTables& out) const override {
    if (!res.cross) return;
    out.tables.push_back(tables::desync_table().materialize(res.cross->desync));
    out.tables.push_back(tables::capture_ended_table().materialize(res.cross->capture_ended));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults& res, const RunSummaryInput&) const override {
    if (!res.cross) return {};
    // Only root causes: victims blocked by another hang are in the HDF5 /desync table.
    std::vector<DesyncRow> roots;
    std::copy_if(res.cross->desync.begin(), res.cross->desync.end(), std::back_inserter(roots),
                 [](auto& d) { return d.root_cause; });
    // Members whose capture ended before they reached an op the others reached (not a hang).
    return {{"desync", json_rows(tables::desync_table().materialize(roots), {{"root_cause"}, {}, {"group_seq"}})},
            {"capture_ended", json_rows(tables::capture_ended_table().materialize(res.cross->capture_ended))}};
  }
};

}  // namespace

std::unique_ptr<Analysis> desync() { return std::make_unique<Desync>(); }

}  // namespace straggler::analyses
