// What-if replay rows (src/analyses/what_if.cpp, docs/what-if.md).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analyses/waterfall.hpp"

namespace collectives {
struct Verdict;
struct BlameRecords;
class RecordIndex;
}
namespace h5read {
class File;
}

namespace straggler {
struct CrossRankResults;
class Analysis;
class Transport;
}

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
// `mfu`: the MFU over the replayed window (window_mfu; 0: unknown): with it, each change's MFU.
std::string what_if_json(const std::vector<WhatIfRow>& rows, double mfu = 0);
// The MFU over a window ending with the run, whose mean step is `step_ms`, from the mfu analysis's
// summary value (its last phase); 0 without MFU.
double window_mfu(const std::string& mfu_json, double step_ms);

// The post-mortem of a run: what-if rows of its last phase, the waterfall of every phase.
struct PostMortem {
  std::vector<WhatIfRow> what_if;
  std::vector<WaterfallRow> waterfall;   // per phase
  std::vector<WaterfallRow> iterations;  // per steady iteration (from_iteration = to_iteration)
  // The waterfall of the phase the run ended in (rows are in phase order): what the costs are of.
  std::vector<const WaterfallRow*> last_phase() const {
    std::vector<const WaterfallRow*> out;
    for (const auto& r : waterfall)
      if (r.phase == waterfall.back().phase) out.push_back(&r);
    return out;
  }
  // Its mean step (0 without a waterfall): the base of every cost_pct.
  double last_step_ms() const { return waterfall.empty() ? 0 : waterfall.back().step_ms; }
};
// One window of the post-mortem: a phase (iteration indexes [first, end) between the job's
// change points: its what-if rows and waterfall) or one iteration of a phase (its waterfall only);
// their iteration numbers and the job's mean step over them.
struct PostMortemWindow {
  int32_t first = 0, end = 0;
  int64_t from_number = -1, to_number = -1;
  double step_ms = 0;
  int32_t phase = 0;
  bool iteration = false;
};
struct WindowResult {
  std::vector<WhatIfRow> what_if;  // a phase's
  std::vector<WaterfallRow> waterfall;
};
// Every window, each phase followed by its iterations (src/analyses/what_if_phases.cpp).
std::vector<PostMortemWindow> post_mortem_windows(const CrossRankResults& x);
// One window replayed with every change, from op records holding at least its iterations and
// the one before (`index`: of `rec`).
WindowResult replay_window(const CrossRankResults& x, const collectives::BlameRecords& rec,
                           const collectives::RecordIndex& index, const PostMortemWindow& w, const std::vector<double>& work,
                           const std::function<void()>& progress = {});
// The post-mortem from every window's result (results[k] of windows[k]).
PostMortem assemble_post_mortem(const std::vector<PostMortemWindow>& windows, std::vector<WindowResult>&& results);
// Process 0 (the op records are there): every window replayed in turn.
// `work`: each rank's steady compute time (the stage balance). `progress` is called after each
// replay: long local work is a sign of life to the other processes (--timeout), not silence.
PostMortem post_mortem(const CrossRankResults& x, const std::vector<double>& work,
                       const std::function<void()>& progress = {});
// Collective: the post-mortem's windows spread over the processes, planned alike on every process.
// The op records go once (`mine`: this process's communicators'): all of them to process 0 (kept
// in x.op_records there), and to each other process those of its windows' iterations. The
// results are gathered on process 0 in window order and given to every process. Called by
// run_cross_rank once the verdict is decided. `on_all_records`: process 0's other work on every
// record (root blame), run beside its windows (on its threads), costing `cost_on_0` window units
// (the windows are shared out around it; the same value on every process).
PostMortem shared_post_mortem(Transport& t, CrossRankResults& x, collectives::BlameRecords&& mine,
                              const std::function<void(const collectives::BlameRecords&)>& on_all_records = {},
                              double cost_on_0 = 0);
// A window's share of the post-mortem's work: the iterations it replays, the lead-in included,
// times its replays (about 5 ms a unit at 512 ranks).
double window_cost(const PostMortemWindow& w);
// The post-mortem a saved scan holds (src/scan_load.cpp, the analysis's load()).
PostMortem load_post_mortem(const h5read::File& h5);
// The cost of each problem (docs/costs.md): a straggler's or slow link's part of the last phase's
// waterfall (what fixing them together saves, shared out by what each saves alone), in ms per
// step and % of the step. Those without a part (not replayed) keep NaN.
void charge_costs(const PostMortem& pm, collectives::Verdict& v);
// The post-mortem a scan's what_if analysis holds (null when it has none): `compare` reads it.
PostMortem const* post_mortem_of(const std::vector<std::unique_ptr<Analysis>>& analyses);
// Summary value of `waterfall`: per phase its range, step and parts ([] without).
std::string waterfall_json(const std::vector<WaterfallRow>& rows);
// A duration for the report: "12.34 ms", or "1.23 s" from a second on.
std::string ms_text(double ms);
// The report's post-mortem section; `mfu_json`: the mfu analysis's summary value ("null": none).
std::string post_mortem_report(const PostMortem& pm, const std::string& mfu_json);

}  // namespace straggler::analyses
