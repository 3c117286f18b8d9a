// The straggler verdict (collectives/verdict.hpp): stragglers with cause and onset, slow links,
// the per-iteration matrices it judged on, the job's step series and its change points.
#include <algorithm>

#include "analyses/builtin.hpp"
#include "json_rows.hpp"
#include "report.hpp"
#include "tables/cross_tables.hpp"

namespace straggler::analyses {
namespace {
using namespace straggler::tables;

// Iteration index x rank (columns in /clock/rank order); 0 where a rank has no such iteration.
TableData iteration_matrices(const CrossRankResults& x) {
  size_t iters = 0;
  for (const auto& s : x.step_ms) iters = std::max(iters, s.size());
  auto at = [](const std::vector<double>& v, size_t i, double scale) { return i < v.size() ? v[i] / scale : 0.0; };
  std::vector<IterationMatrixRow> rows(iters);
  for (size_t i = 0; i < iters; ++i)
    for (size_t k = 0; k < x.evidence_ranks.size(); ++k) {
      const size_t r = size_t(x.evidence_ranks[k]);
      rows[i].step_ms.push_back(at(x.step_ms[k], i, 1));
      rows[i].blame_ms.push_back(at(x.acc.blame_by_iteration[r], i, 1e6));
      rows[i].wait_ms.push_back(at(x.acc.wait_by_iteration[r], i, 1e6));
    }
  TableData t = iteration_matrices_table().materialize(rows);
  for (auto& c : t.columns) c.width = x.evidence_ranks.size();
  return t;
}

class Verdict : public Analysis {
 public:
  void tables(const RunResults& res, ResultTables& out) const override {
    if (!res.cross) return;
    const CrossRankResults& x = *res.cross;
    TableData stragglers = stragglers_table().materialize(x.verdict.stragglers);
    // How much evidence the verdict had (consistency.hpp): "too short" is decided from these.
    stragglers.attributes = {{"judged_iterations", x.verdict.judged_iterations},
                             {"compared_ranks", x.verdict.compared_ranks},
                             {"needed_iterations", x.verdict.needed_iterations}};
    out.tables.push_back(std::move(stragglers));
    out.tables.push_back(slow_links_table().materialize(x.verdict.slow_links));
    out.tables.push_back(iteration_matrices(x));
    std::vector<JobStepRow> job;
    for (double v : x.verdict.job_step_ms) job.push_back({v});
    out.tables.push_back(job_step_table().materialize(job));
    out.tables.push_back(change_points_table().materialize(x.verdict.change_points));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults& res, const RunSummaryInput&) const override {
    if (!res.cross) return {};
    const auto& v = res.cross->verdict;
    const auto& st = v.stragglers;
    const std::string stragglers =
        json_rows(stragglers_table().materialize(st), {{"cause_detail"}, {"onset_iteration"}, {}, [&](JsonWriter& w, size_t i) {
                    w.key("cause_detail");
                    st[i].cause_detail == ranks::Finding::None ? w.null() : w.value(ranks::finding_name(st[i].cause_detail));
                  }});
    // How much evidence the verdict had (collectives/consistency.hpp): judged false when the
    // capture is too short for any rank to be named.
    JsonWriter e;
    e.begin_object().key("steady_iterations").value(v.judged_iterations);
    e.key("ranks_compared").value(v.compared_ranks).key("iterations_needed");
    v.needed_iterations > 0 ? e.value(v.needed_iterations) : e.null();
    e.key("judged").value(!v.too_short()).end_object();
    return {{"stragglers", stragglers},
            {"slow_links", json_rows(slow_links_table().materialize(v.slow_links))},
            {"change_points", json_rows(change_points_table().materialize(v.change_points))},
            {"straggler_evidence", e.str()}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput& all) const override {
    return {ReportPart::Verdict, verdict_report(all)};
  }
};

}  // namespace

std::unique_ptr<Analysis> verdict() { return std::make_unique<Verdict>(); }

}  // namespace straggler::analyses
