// Clock alignment (collectives/clock.hpp): per-rank offset and drift, and how well they fit.
#include "analyses/builtin.hpp"
#include "json_writer.hpp"
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
                    {"not_corrected_because", x.clock.rejected},
                    {"far_clocks", x.clock.far_clocks}};
    out.tables.push_back(std::move(t));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults& res, const RunSummaryInput&) const override {
    if (!res.cross) return {};
    const ClockSummary& c = res.cross->clock;
    JsonWriter j;
    if (c.ops <= 0) {
      j.null();
    } else {
      j.begin_object().key("max_offset_ms").value(c.max_offset_ns / 1e6).key("residual_ms").value(c.residual_ns / 1e6);
      j.key("violations_before").value(c.violations_before).key("violations_after").value(c.violations_after);
      j.key("unaligned_ranks").value(c.unaligned_ranks).key("corrected").value(c.rejected.empty());
      if (!c.rejected.empty()) j.key("not_corrected_because").value(c.rejected);
      j.end_object();
    }
    return {{"clock", j.str()}, {"matched_collectives", std::to_string(c.ops)}};
  }
};

}  // namespace

std::unique_ptr<Analysis> clock() { return std::make_unique<Clock>(); }

}  // namespace straggler::analyses
