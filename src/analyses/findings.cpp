// Root-cause findings (ranks/findings.hpp per rank, collectives/root_causes.hpp across ranks):
// /findings, and the summary key `findings` (per finding its ranks and cost, costliest first).
#include "analyses/builtin.hpp"
#include "analyses/what_if.hpp"
#include "collectives/root_causes.hpp"
#include "json_writer.hpp"
#include "tables/cross_tables.hpp"

namespace straggler::analyses {
namespace {

class Findings : public Analysis {
 public:
  void tables(const RunResults& res, tables::ResultTables& out) const override {
    if (!res.cross) return;
    out.tables.push_back(tables::findings_table().materialize(res.cross->findings));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults& res, const RunSummaryInput&) const override {
    JsonWriter j;
    j.begin_array();
    auto rows = res.cross ? collectives::summarize_findings(res.cross->findings, size_t(res.total_ranks))
                          : std::vector<collectives::FindingSummary>{};
    if (res.cross)
      collectives::charge_findings(rows, res.cross->verdict, res.cross->post_mortem ? res.cross->post_mortem->last_step_ms() : 0);
    for (const auto& s : rows) {
      j.begin_object().key("finding").value(ranks::finding_name(s.finding)).key("ranks").begin_array();
      for (int32_t r : s.ranks) j.value(r);
      j.end_array().key("cost_ms_per_step").value(s.cost_ms_per_step);
      j.key("cost_pct").value(s.cost_pct).key("cost_basis").value(s.cost_basis);
      j.key("own_ms_per_step").value(s.own_ms_per_step);
      j.key("median_cost_ms_per_step").value(s.median_cost_ms_per_step).key("unit").value(s.unit);
      j.key("shared").value(s.shared);
      j.key("evidence").value(s.evidence).end_object();
    }
    j.end_array();
    return {{"findings", j.str()}};
  }
};

}  // namespace

std::unique_ptr<Analysis> findings() { return std::make_unique<Findings>(); }

}  // namespace straggler::analyses
