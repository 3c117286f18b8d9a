// Analyses behind one interface, in the manner of Scalasca's patterns and HPCToolkit's
// finalizers and sinks. The driver runs every registered analysis through the same hooks:
//
//   per rank, where its profile was read   add_rank(slot, {timeline, metrics, ops})
//   once ranks are agreed                  assign_ranks(rank of each slot)
//   after the cross-rank run (collective)  finish(transport, run)
//   when writing                           tables(run, out)
//
// What an analysis consumes: the normalized timeline and per-rank metrics of each rank it sees
// (ranks/), and the run's results (RunResults: rank rows, failures, and the cross-rank replay,
// clocks and verdict, identical on every process). How its partial results merge across
// processes: through the distribution of its tables (ByRank rows are placed by rank, Summed
// tables summed, Replicated written once), or explicitly in finish() over the transport. What it
// produces: result tables (src/table.hpp), which the writers iterate without knowing it.
//
// Adding one: a class in one file, and one line that registers it (src/analyses/builtin.cpp for
// ours; a test may register its own) with the options it takes. It publishes itself: its tables,
// its summary keys, its report section; load() makes it survive `straggler-scan report`.
// docs/analyses.md lists them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_op.hpp"
#include "options.hpp"
#include "ranks/metrics.hpp"
#include "ranks/timeline.hpp"
#include "results.hpp"
#include "table.hpp"
#include "transport.hpp"

namespace h5read {
class File;  // src/h5_read.hpp: a scan file opened and checked
}

namespace straggler {

struct RunSummaryInput;  // rows.hpp

// One rank process as its reader and the per-rank metrics left it (valid during the call only:
// the timeline is dropped right after).
struct RankInput {
  const ranks::RankTimeline& timeline;
  const ranks::RankMetrics& metrics;
  const std::vector<collectives::CollectiveOp>& ops;  // its NCCL kernels as compact ops (collective_op.hpp)
};

class Analysis {
 public:
  virtual ~Analysis() = default;
  // Called for each rank process this process read, in reading order; `slot` counts them from 0.
  virtual void add_rank(size_t slot, const RankInput& rank) { (void)slot, (void)rank; }
  // rank_of_slot[slot]: the rank every process agreed on (-1: not analysed, e.g. a duplicate).
  virtual void assign_ranks(const std::vector<int32_t>& rank_of_slot) { (void)rank_of_slot; }
  // Collective: every process calls it, in registry order, after the cross-rank run.
  virtual void finish(Transport& t, const RunResults& run) { (void)t, (void)run; }
  // Its tables: this process's rows (ByRank, Summed), or the whole table (Replicated). An analysis
  // that saw nothing still declares its tables, empty: docs/hdf5-layout.md is made that way.
  virtual void tables(const RunResults& run, tables::ResultTables& out) const = 0;
  // The summary keys it fills (../shared/docs/summary-contract.md), key -> a whole JSON value
  // (JsonWriter::str()). Asked on process 0 only, after finish(); `all` holds every rank's row
  // (gathered). A contract key that no analysis fills gets the contract's empty value ("pipeline":
  // null, "scaling": [], ...); src/summary_json.cpp orders the keys, the analyses own them.
  virtual std::vector<std::pair<std::string, std::string>> summary(const RunResults& run,
                                                                    const RunSummaryInput& all) const {
    (void)run, (void)all;
    return {};
  }
  // Its section of the report (on process 0): which part it belongs to, and its lines ("" for
  // none). The same text from a saved scan as from the scan itself.
  virtual ReportSection report(const RunResults& run, const RunSummaryInput& all) const {
    (void)run, (void)all;
    return {};
  }
  // A saved scan read back (`straggler-scan report`, src/scan_load.hpp): restores from its own
  // tables in the HDF5 file `h5` (tables::read_rows) what summary() and report() use. The built-in
  // analyses' results are restored into RunResults by scan_load itself.
  virtual void load(const h5read::File& h5) { (void)h5; }
};

// A `--NAME VALUE` option an analysis declares: parsed with the tool's own options (--help lists
// it), its value reaches the analysis through the run's spec (Options::analysis_option).
struct AnalysisOption {
  std::string name, help, default_value;
};

struct AnalysisInfo {
  std::string name, description;
  std::function<std::unique_ptr<Analysis>(const Options& spec)> make;
  std::vector<AnalysisOption> options = {};
};

// Adds an analysis to the registry (after those already there); returns true so that a
// registration can be one line: `static const bool reg = register_analysis({...});`.
bool register_analysis(AnalysisInfo info);
// The built-in analyses first (builtin.cpp), then any registered elsewhere, in registration order.
std::vector<AnalysisInfo> analysis_registry();
// A fresh instance of each registered analysis, in registry order, made for the run `spec`.
std::vector<std::unique_ptr<Analysis>> make_analyses(const Options& spec);

// An analysis whose rows are one record per rank, measured where the rank was read: the slot to
// rank bookkeeping done once. `measure` returns the rank's rows with any rank field left unset;
// `set_rank` fills it once known.
template <class Row>
class PerRankAnalysis : public Analysis {
 public:
  void add_rank(size_t slot, const RankInput& rank) override {
    for (auto& r : measure(rank)) pending_.push_back({slot, std::move(r)});
  }
  void assign_ranks(const std::vector<int32_t>& rank_of_slot) override {
    rows_.clear();
    for (auto& [slot, row] : pending_)
      if (rank_of_slot.at(slot) >= 0) set_rank(row, rank_of_slot[slot]), rows_.push_back(std::move(row));
    pending_.clear();
  }
  const std::vector<Row>& rows() const { return rows_; }

 protected:
  void set_rows(std::vector<Row> rows) { rows_ = std::move(rows); }  // load(): rows read back
  virtual std::vector<Row> measure(const RankInput& rank) = 0;
  virtual void set_rank(Row& row, int32_t rank) = 0;

 private:
  std::vector<std::pair<size_t, Row>> pending_;
  std::vector<Row> rows_;
};

}  // namespace straggler
