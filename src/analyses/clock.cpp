// Clock alignment (collectives/clock.hpp): per-rank offset and drift, and how well they fit.
#include "analyses/builtin.hpp"
#include "tables/cross_tables.hpp"

namespace straggler::analyses {
namespace {

class Clock : public Analysis {
 public:
  void tables(const RunResults& res, tables::ResultTables& out) const override {
    if (!res.cross) return;
    const CrossRankResults& x = *res.cross;
    std::vector<tables::ClockRow> rows;
    for (int32_t r : x.evidence_ranks) {
      const size_t i = size_t(r);
      rows.push_back({r, x.clocks.offset_ns[i] / 1e6, x.clocks.drift[i] * 1e6, x.clocks.aligned[i]});
    }
    tables::TableData t = tables::clock_table().materialize(rows);
    t.attributes = {{"max_offset_ms", x.clock.max_offset_ns / 1e6},
                    {"residual_ms", x.clock.residual_ns / 1e6},
                    {"violations_before", x.clock.violations_before},
                    {"violations_after", x.clock.violations_after},
                    {"matched_ops", x.clock.ops},
                    {"unaligned_ranks", int64_t(x.clock.unaligned_ranks)},
                    {"distrusted_edges", x.clock.distrusted_edges},
                    {"not_corrected_because", x.clock.rejected}};
    out.tables.push_back(std::move(t));
  }
};

}  // namespace

std::unique_ptr<Analysis> clock() { return std::make_unique<Clock>(); }

}  // namespace straggler::analyses
