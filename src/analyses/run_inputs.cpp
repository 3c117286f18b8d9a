// The run's inputs: every file read (format, version, rank processes) and every failure.
#include "analyses/builtin.hpp"
#include "report.hpp"
#include "rows.hpp"
#include "tables/run_tables.hpp"

namespace straggler::analyses {
namespace {

class RunInputs : public Analysis {
 public:
  void tables(const RunResults& res, tables::ResultTables& out) const override {
    out.tables.push_back(tables::inputs_table().materialize(res.inputs));
    out.tables.push_back(tables::failures_table().materialize(res.failures));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput& all) const override {
    return {{"hosts", std::to_string(all.hosts.size())}, {"files", std::to_string(all.inputs.size())}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput& all) const override {
    return {ReportPart::Inputs, inputs_report(all)};
  }
};

}  // namespace

std::unique_ptr<Analysis> run_inputs() { return std::make_unique<RunInputs>(); }

}  // namespace straggler::analyses
