// Per-rank metrics (ranks/metrics.hpp): the driver computes them where each profile is read and
// keeps them as RunResults' rank rows, which the report and the summary read too; this analysis
// writes them.
#include "analyses/builtin.hpp"
#include "common/stats.hpp"
#include "json_writer.hpp"
#include "report.hpp"
#include "rows.hpp"
#include "tables/rank_tables.hpp"

namespace straggler::analyses {
namespace {

class RankMetrics : public Analysis {
 public:
  void tables(const RunResults& res, tables::ResultTables& out) const override {
    using namespace straggler::tables;
    out.tables.push_back(ranks_table().materialize(res.ranks));
    out.tables.push_back(histogram_edges_table().materialize(histogram_bins()));
    out.tables.push_back(rank_histograms_table().materialize(res.histograms));
    out.tables.push_back(summed_histograms_table().materialize(res.histograms));
    out.tables.push_back(top_kernels_table().materialize(res.top_kernels));
    out.tables.push_back(iterations_table().materialize(res.iterations));
  }
  // step_ms: over every steady-state iteration of every rank (gathered in `all`).
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput& all) const override {
    if (all.steady_step_ms.empty()) return {};
    const auto d = common::Distribution::of(all.steady_step_ms);
    JsonWriter j;
    j.begin_object().key("median").value(d.p50).key("p90").value(d.p90).end_object();
    return {{"step_ms", j.str()}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput& all) const override {
    return {ReportPart::Measurements, measurements_report(all)};
  }
};

}  // namespace

std::unique_ptr<Analysis> rank_metrics() { return std::make_unique<RankMetrics>(); }

}  // namespace straggler::analyses
