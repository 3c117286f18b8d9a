// What fixing each cause buys (docs/what-if.md): the steady steps replayed over the run's own
// dependency structure (collectives/what_if.hpp) with one change at a time: each straggler at its
// peers' median, all of them together, the pipeline stages balanced, exposed communication hidden.
// Runs on process 0 over the op records the cross-rank run gathered there for root blame; the rows
// go to every process. HDF5 /what_if; summary key `what_if`; a report section.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <thread>

#include "analyses/builtin.hpp"
#include "analyses/waterfall.hpp"
#include "analyses/what_if.hpp"
#include "collectives/what_if.hpp"
#include "common/balance.hpp"
#include "common/tasks.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "cross_stages.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "rows.hpp"
#include "table_read.hpp"
#include "timings.hpp"

namespace straggler::analyses {
namespace {

namespace c = collectives;
using tables::col;

const tables::Table<WhatIfRow>& what_if_table() {
  using R = WhatIfRow;
  static const tables::Table<R> t{
      "/what_if",
      "the steady steps replayed with one change each (docs/what-if.md); the first row is the replay unchanged",
      tables::Distribution::Replicated,
      {col("change", &R::change, "", "in words"),
       col("kind", &R::kind, "", "measured, fix_rank, fix_link, fix_all, balance_stages or hide_communication"),
       col("ranks", &R::ranks, "", "the ranks it changes (fix_rank, fix_all)"),
       col("step_ms", &R::step_ms, "ms", "the job's mean step over the window with the change"),
       col("speedup", &R::speedup, "", "measured step / step_ms"),
       col("from_iteration", &R::from_iteration, "", "the window replayed: first iteration"),
       col("to_iteration", &R::to_iteration, "", "last iteration (inclusive)")},
      nullptr};
  return t;
}

const tables::Table<WaterfallRow>& waterfall_table() {
  using R = WaterfallRow;
  static const tables::Table<R> t{
      "/waterfall", "per phase: the mean step split into parts that add up to it (docs/waterfall.md)",
      tables::Distribution::Replicated,
      {col("phase", &R::phase, "", "0 = the first steady phase; phases part at the job's change points"),
       col("from_iteration", &R::from_iteration), col("to_iteration", &R::to_iteration, "", "inclusive"),
       col("step_ms", &R::step_ms, "ms", "the phase's measured mean step: its parts add up to it"),
       col("part", &R::part, "", "straggler, slow_link, exposed_communication, compute, idle, pipeline_bubble or waiting"),
       col("label", &R::label, "", "in words"), col("ranks", &R::ranks, "", "the straggler's rank"),
       col("ms", &R::ms, "ms", "per step"), col("share", &R::share, "", "of the phase's mean step"),
       col("item", &R::item, "", "straggler, slow_link: its row in /stragglers or /slow_links (-1: other parts)").added()},
      nullptr};
  return t;
}

const tables::Table<WaterfallRow>& iterations_table() {
  using R = WaterfallRow;
  static const tables::Table<R> t{
      "/waterfall/iterations", "per steady iteration: its step (the job's, median over ranks) split as /waterfall splits a phase",
      tables::Distribution::Replicated,
      {col("phase", &R::phase, "", "the phase it is in"), col("iteration", &R::from_iteration),
       col("step_ms", &R::step_ms, "ms"), col("part", &R::part), col("label", &R::label), col("ranks", &R::ranks),
       col("ms", &R::ms, "ms"), col("share", &R::share), col("item", &R::item).added()},
      nullptr};
  return t;
}

// The mfu analysis's summary value (registered before this one), "null" without it.
std::string mfu_json(const RunSummaryInput& all) {
  for (const auto& [k, v] : all.analysis_keys)
    if (k == "mfu") return v;
  return "null";
}

// The run's post-mortem is computed with its verdict (run_cross_rank: the verdict's costs come
// from it); this analysis publishes it.
class WhatIf : public Analysis {
 public:
  void finish(Transport&, const RunResults& run) override {
    if (run.cross && run.cross->post_mortem) pm_ = *run.cross->post_mortem;
  }
  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(what_if_table().materialize(pm_.what_if));
    out.tables.push_back(waterfall_table().materialize(pm_.waterfall));
    out.tables.push_back(iterations_table().materialize(pm_.iterations));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput& all) const override {
    const double mfu = pm_.what_if.empty() ? 0 : window_mfu(mfu_json(all), pm_.what_if.front().step_ms);
    return {{"what_if", what_if_json(pm_.what_if, mfu)}, {"waterfall", waterfall_json(pm_.waterfall)}};
  }
  // The post-mortem section: the paragraph (with MFU where the mfu analysis, registered before
  // this one, published it), the last phase's waterfall, the what-if table.
  ReportSection report(const RunResults&, const RunSummaryInput& all) const override {
    return {ReportPart::Verdict, post_mortem_report(pm_, mfu_json(all))};
  }
  void load(const std::string& h5) override { pm_ = load_post_mortem(h5); }

  const PostMortem& result() const { return pm_; }

 private:
  PostMortem pm_;
};

}  // namespace

PostMortem load_post_mortem(const std::string& h5) {
  PostMortem pm;  // a table absent: a scan from before the analysis
  if (h5read::exists(h5, "/what_if")) pm.what_if = tables::read_rows(h5, what_if_table());
  if (h5read::exists(h5, "/waterfall")) pm.waterfall = tables::read_rows(h5, waterfall_table());
  if (h5read::exists(h5, "/waterfall/iterations")) pm.iterations = tables::read_rows(h5, iterations_table());
  return pm;
}

double window_cost(const PostMortemWindow& w) { return double(w.end - w.first + 1) * (w.iteration ? 4 : 6); }

namespace {

// What process 0 sends each process: its windows (indexes into the list) and the op records of
// their iterations.
struct WindowShare {
  std::vector<uint32_t> ids;
  std::vector<PostMortemWindow> windows;
  c::BlameRecords records;
};

// Windows to processes, the costliest first to the least loaded (a window's cost: the iterations
// it replays, the lead-in included, times its replays).
// `load_0`: work process 0 does beside its windows, in window_cost's units.
std::vector<int> window_owners(const std::vector<PostMortemWindow>& windows, int processes, double load_0) {
  std::vector<double> cost, load(size_t(std::max(processes, 1)), 0.0);
  for (const auto& w : windows) cost.push_back(window_cost(w));
  load[0] = load_0;
  return common::largest_first(cost, processes, load);
}

// The records of the windows' iterations (and each one's lead-in), in record order.
c::BlameRecords records_for(const c::BlameRecords& all, const c::RecordIndex& index, const std::vector<PostMortemWindow>& ws) {
  // One pass over the records with the wanted iterations marked: a process's windows often span
  // nearly all of them, and per-window lists merged by sorting cost more than the copy.
  if (ws.empty()) return {};
  std::vector<uint8_t> wanted;
  int64_t lowest = INT64_MAX;
  for (const auto& w : ws) lowest = std::min<int64_t>(lowest, int64_t(w.first) - 1);
  for (const auto& w : ws)
    for (int64_t i = int64_t(w.first) - 1; i < int64_t(w.end); ++i) {
      if (size_t(i - lowest) >= wanted.size()) wanted.resize(size_t(i - lowest) + 1, 0);
      wanted[size_t(i - lowest)] = 1;
    }
  std::vector<uint32_t> ops;
  for (uint32_t o = 0; o < all.ops.size(); ++o) {
    const int64_t slot = int64_t(all.ops[o].iteration) - lowest;
    if (slot >= 0 && size_t(slot) < wanted.size() && wanted[size_t(slot)]) ops.push_back(o);
  }
  c::BlameRecords out;
  out.ops.reserve(ops.size());
  for (uint32_t o : ops) {
    const uint32_t id = uint32_t(out.ops.size());
    out.ops.push_back(all.ops[o]);
    for (uint32_t k : index.members_of(o)) {
      auto m = all.members[k];
      m.op = id;
      out.members.push_back(m);
    }
  }
  return out;
}

}  // namespace

}  // namespace straggler::analyses

namespace straggler {
template <>
struct Wire<analyses::PostMortemWindow> {
  static void fields(auto& ar, auto& w) { ar(w.first, w.end, w.from_number, w.to_number, w.step_ms, w.phase, w.iteration); }
};
template <>
struct Wire<analyses::WindowShare> {
  static void fields(auto& ar, auto& s) { ar(s.ids, s.windows, s.records); }
};
}  // namespace straggler

namespace straggler::analyses {

namespace {

// Process 0: every other process's share, packed; its own windows in `own` (replayed from all
// the records there, without a copy).
std::vector<std::string> pack_shares(const CrossRankResults& x, const c::RecordIndex& index,
                                     const std::vector<PostMortemWindow>& windows, int processes, double load_0,
                                     WindowShare& own) {
  auto to = std::vector<std::string>(size_t(processes));
  const auto owner = window_owners(windows, processes, load_0);
  for (int p = 0; p < processes; ++p) {
    WindowShare share;
    for (size_t k = 0; k < windows.size(); ++k)
      if (owner[k] == p) share.ids.push_back(uint32_t(k)), share.windows.push_back(windows[k]);
    if (p == 0) {
      own = std::move(share);
      continue;
    }
    share.records = records_for(*x.op_records, index, share.windows);
    ByteWriter w;
    put(w, share);
    to[size_t(p)] = w.bytes();
  }
  return to;
}

// A share's windows replayed (beside `also`, process 0's other work) on the process's threads;
// their ids and results packed into `out`. Only the calling thread talks to the transport.
void replay_share(Transport& t, const CrossRankResults& x, const c::BlameRecords& rec, const c::RecordIndex& index,
                  const WindowShare& share, const std::vector<double>& work, const std::function<void()>& also,
                  ByteWriter& out) {
  std::vector<WindowResult> res(share.windows.size());
  std::vector<std::function<void()>> tasks;
  if (also) tasks.push_back(also);
  // After each replay a sign of life, from the calling thread only (MPI stays on one thread).
  const auto caller = std::this_thread::get_id();
  const std::function<void()> progress = [&t, caller] {
    if (std::this_thread::get_id() == caller) t.alive();
  };
  for (size_t k = 0; k < share.windows.size(); ++k)
    tasks.push_back([&, k] { res[k] = replay_window(x, rec, index, share.windows[k], work, progress); });
  common::run_tasks(tasks, common::process_threads(), [&t] { t.alive(); });
  put(out, share.ids);
  for (const auto& r : res) what_if_table().pack(out, r.what_if), waterfall_table().pack(out, r.waterfall);
}

}  // namespace

PostMortem shared_post_mortem(Transport& t, const CrossRankResults& x, const std::function<void()>& also_on_0,
                              double also_cost) {
  // Each rank's compute time over its iterations (the stage balance), from the verdict's evidence.
  std::vector<double> work(x.acc.ops.size(), 0.0);
  for (size_t k = 0; k < x.evidence_ranks.size() && k < x.compute_ms.size(); ++k)
    if (x.evidence_ranks[k] >= 0 && size_t(x.evidence_ranks[k]) < work.size())
      for (double v : x.compute_ms[k]) work[size_t(x.evidence_ranks[k])] += v;
  // Process 0 plans and sends each process its share; the replays run everywhere at once.
  std::vector<PostMortemWindow> windows;
  std::vector<std::string> to(size_t(t.size()));
  std::optional<c::RecordIndex> index;
  WindowShare own;
  if (t.rank() == 0 && x.op_records) {
    windows = post_mortem_windows(x);
    index.emplace(*x.op_records);
    to = pack_shares(x, *index, windows, t.size(), also_on_0 ? also_cost : 0.0, own);
  }
  timings().mark("what-if: plan and pack");
  const auto got = t.alltoall(to);
  to.clear();
  timings().mark("what-if: send records");
  ByteWriter mine;
  if (index) {
    replay_share(t, x, *x.op_records, *index, own, work, also_on_0, mine);
  } else if (!got.at(0).empty()) {
    ByteReader r(got[0]);
    const auto share = get<WindowShare>(r);
    replay_share(t, x, share.records, c::RecordIndex(share.records), share, work, {}, mine);
  }
  if (t.rank() == 0 && !index && also_on_0) also_on_0();
  timings().mark("what-if: replay own windows");
  const auto parts = t.gather(mine.bytes(), 0);
  timings().mark("what-if: gather");
  ByteWriter w;
  PostMortem pm;
  if (t.rank() == 0) {
    std::vector<WindowResult> results(windows.size());
    for (const auto& part : parts) {
      if (part.empty()) continue;
      ByteReader r(part);
      for (uint32_t k : get<std::vector<uint32_t>>(r)) {
        results.at(k).what_if = what_if_table().unpack(r);
        results.at(k).waterfall = waterfall_table().unpack(r);
      }
    }
    pm = assemble_post_mortem(windows, std::move(results));
  }
  what_if_table().pack(w, pm.what_if), waterfall_table().pack(w, pm.waterfall), iterations_table().pack(w, pm.iterations);
  const std::string all = t.broadcast(w.bytes(), 0);  // ByteReader keeps a view: hold the bytes
  ByteReader r(all);
  pm.what_if = what_if_table().unpack(r), pm.waterfall = waterfall_table().unpack(r);
  pm.iterations = iterations_table().unpack(r);
  return pm;
}

void charge_costs(const PostMortem& pm, collectives::Verdict& v) {
  for (const WaterfallRow* row : pm.last_phase()) {
    if (row->item < 0) continue;
    const size_t i = size_t(row->item);
    auto charge = [&](auto& problem) { problem.cost_ms_per_step = row->ms, problem.cost_pct = 100 * row->share; };
    if (row->part == "straggler" && i < v.stragglers.size()) charge(v.stragglers[i]);
    if (row->part == "slow_link" && i < v.slow_links.size()) charge(v.slow_links[i]);
  }
}

const WhatIfRow* ideal_row(const std::vector<WhatIfRow>& rows) {
  const WhatIfRow* best = nullptr;
  for (const auto& r : rows)
    if (r.kind == "fix_all" || ((r.kind == "fix_rank" || r.kind == "fix_link") && !best)) best = &r;
  return best;
}

std::string what_if_json(const std::vector<WhatIfRow>& rows, double mfu) {
  JsonWriter j;
  if (rows.empty()) return j.null().str();
  const WhatIfRow& measured = rows.front();
  const WhatIfRow* ideal = ideal_row(rows);
  const double ideal_ms = ideal ? ideal->step_ms : measured.step_ms;
  j.begin_object().key("step_ms_actual").value(measured.step_ms).key("step_ms_ideal").value(ideal_ms);
  j.key("slowdown").value(ideal_ms > 0 ? measured.step_ms / ideal_ms : 1.0);
  j.key("from_iteration").value(measured.from_iteration).key("to_iteration").value(measured.to_iteration);
  if (mfu > 0) j.key("mfu_actual").value(mfu);
  j.key("changes").begin_array();
  for (size_t i = 1; i < rows.size(); ++i) {
    j.begin_object().key("change").value(rows[i].change).key("step_ms").value(rows[i].step_ms);
    if (mfu > 0 && rows[i].step_ms > 0) j.key("mfu").value(mfu * measured.step_ms / rows[i].step_ms);
    j.key("speedup").value(rows[i].speedup).key("kind").value(rows[i].kind).key("ranks").begin_array();
    for (int32_t r : rows[i].ranks) j.value(int64_t(r));
    j.end_array().end_object();
  }
  return j.end_array().end_object().str();
}

std::string waterfall_json(const std::vector<WaterfallRow>& rows) {
  JsonWriter j;
  j.begin_array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (i == 0 || rows[i - 1].phase != r.phase) {
      if (i) j.end_array().end_object();
      j.begin_object().key("from_iteration").value(r.from_iteration).key("to_iteration").value(r.to_iteration);
      j.key("step_ms").value(r.step_ms).key("parts").begin_array();
    }
    j.begin_object().key("part").value(r.part).key("label").value(r.label).key("ms").value(r.ms).key("share").value(r.share);
    j.key("ranks").begin_array();
    for (int32_t k : r.ranks) j.value(int64_t(k));
    j.end_array().end_object();
  }
  if (!rows.empty()) j.end_array().end_object();
  return j.end_array().str();
}

std::unique_ptr<Analysis> what_if() { return std::make_unique<WhatIf>(); }

PostMortem const* post_mortem_of(const std::vector<std::unique_ptr<Analysis>>& analyses) {
  for (const auto& a : analyses)
    if (const auto* w = dynamic_cast<const WhatIf*>(a.get())) return &w->result();
  return nullptr;
}

}  // namespace straggler::analyses
