// What fixing each cause buys (docs/what-if.md): the steady steps replayed over the run's own
// dependency structure (collectives/what_if.hpp) with one change at a time: each straggler at its
// peers' median, all of them together, the pipeline stages balanced, exposed communication hidden.
// Runs on process 0 over the op records the cross-rank run gathered there for root blame; the rows
// go to every process. HDF5 /what_if; summary key `what_if`; a report section.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "analyses/builtin.hpp"
#include "analyses/what_if.hpp"
#include "collectives/what_if.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "table_read.hpp"

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

// The window: the steady iterations every rank has, from the last job change point on (the state
// the run ended in), else from the first steady one; indexes [first, end) and the job's mean step.
struct Window {
  int32_t first = 0, end = 0;
  int64_t from_number = -1, to_number = -1;
  double step_ms = 0;
};
Window window_of(const CrossRankResults& x) {
  size_t common = x.step_ms.empty() ? 0 : SIZE_MAX;
  for (const auto& s : x.step_ms) common = std::min(common, s.size());
  common = std::min(common, x.verdict.job_step_ms.size());
  const auto* numbers = x.iteration_number.empty() ? nullptr : &x.iteration_number.front();
  if (numbers) common = std::min(common, numbers->size());
  Window w;
  w.first = common >= 3 ? 1 : 0, w.end = int32_t(common);
  for (const auto& cp : x.verdict.change_points)
    for (int32_t i = w.first; numbers && i + 2 < w.end; ++i)  // at least two iterations after it
      if ((*numbers)[size_t(i)] >= cp.iteration) {
        w.first = std::max(w.first, i);
        break;
      }
  if (w.end <= w.first) return {};
  for (int32_t i = w.first; i < w.end; ++i) w.step_ms += x.verdict.job_step_ms[size_t(i)] / double(w.end - w.first);
  if (numbers) w.from_number = (*numbers)[size_t(w.first)], w.to_number = (*numbers)[size_t(w.end - 1)];
  return w;
}

c::WhatIfInputs inputs_of(const CrossRankResults& x, const Window& w, std::vector<double> work) {
  c::WhatIfInputs in;
  in.work = std::move(work);
  in.records = x.op_records.get();
  for (const auto& cs : x.comms) {
    in.comm_family.push_back(cs.family), in.comm_p2p.push_back(cs.p2p);
    in.comm_data_parallel.push_back(cs.id.kind == topology::GroupKind::DP);
    in.comm_shared.push_back(cs.p2p && cs.shared);
  }
  const auto& layout = x.layout.layout;
  int world = 0;
  for (const auto& cs : x.comms)
    for (int32_t r : cs.ranks) world = std::max(world, r + 1);
  in.role.assign(size_t(world), 0);
  for (int r = 0; layout && r < world && r < layout->world(); ++r) in.role[size_t(r)] = layout->pp_rank(r);
  in.first_iteration = w.first, in.end_iteration = w.end;
  return in;
}

WhatIfRow row_of(std::string change, std::string kind, std::vector<int32_t> ranks, double makespan, double base,
                 const Window& w) {
  WhatIfRow r;
  r.change = std::move(change), r.kind = std::move(kind), r.ranks = std::move(ranks);
  r.step_ms = base > 0 ? w.step_ms * makespan / base : w.step_ms;
  r.speedup = r.step_ms > 0 ? w.step_ms / r.step_ms : 1;
  r.from_iteration = w.from_number, r.to_iteration = w.to_number;
  return r;
}

// Process 0: every change replayed. Rows: measured first, then each straggler (blame order), all
// of them together, the stages balanced (PP > 1), exposed communication hidden.
std::vector<WhatIfRow> replay_changes(const CrossRankResults& x, std::vector<double> work) {
  const Window w = window_of(x);
  if (!x.op_records || w.end <= w.first) return {};
  const c::WhatIfReplay replay(inputs_of(x, w, std::move(work)));
  // Changes are measured against the replay unchanged (which differs from the measured makespan
  // only where a stream's next op was recorded a hair before its previous one ended).
  const double base = replay.replay_unchanged_ns();
  if (replay.ops() == 0 || base <= 0) return {};
  std::vector<WhatIfRow> rows{row_of("as measured", "measured", {}, base, base, w)};
  c::WhatIfChange all;
  // A row for each of the first kMaxRankRows stragglers (blame order); all of them together below.
  constexpr size_t kMaxRankRows = 16;
  for (const auto& s : x.verdict.stragglers) {
    if (all.ranks.size() >= kMaxRankRows) {
      all.ranks.push_back(s.rank);
      if (s.cause == c::Cause::SlowLink) all.links.push_back(s.rank);
      continue;
    }
    c::WhatIfChange one;
    one.ranks = {s.rank};
    if (s.cause == c::Cause::SlowLink) one.links = {s.rank};
    all.ranks.push_back(s.rank), all.links.insert(all.links.end(), one.links.begin(), one.links.end());
    rows.push_back(row_of(fmt::format("rank {} ({}) at its peers' median", s.rank, c::cause_name(s.cause)), "fix_rank",
                          {s.rank}, replay.replay(one), base, w));
  }
  for (const auto& link : x.verdict.slow_links) {  // the link at its like's transfer time
    c::WhatIfChange l;
    for (size_t ci = 0; ci < x.comms.size(); ++ci)
      if (std::find(link.communicators.begin(), link.communicators.end(), x.comms[ci].name) != link.communicators.end())
        l.comms.push_back(uint32_t(ci));
    if (l.comms.empty()) continue;
    all.comms.insert(all.comms.end(), l.comms.begin(), l.comms.end());
    rows.push_back(row_of(fmt::format("slow link ({}) at its like's speed", common::printable(fmt::format("{}", fmt::join(link.hosts, ", ")))),
                          "fix_link", {}, replay.replay(l), base, w));
  }
  if (all.ranks.size() + (all.comms.empty() ? 0 : 1) > 1)
    rows.push_back(row_of(all.comms.empty() ? fmt::format("ranks {} at their peers' median", fmt::join(all.ranks, ", "))
                                            : "every straggler and slow link fixed",
                          "fix_all", all.ranks, replay.replay(all), base, w));
  if (replay.stages() > 1) {
    c::WhatIfChange b;
    b.kind = c::WhatIfChange::Kind::BalanceStages;
    rows.push_back(row_of("pipeline stages balanced", "balance_stages", {}, replay.replay(b), base, w));
  }
  c::WhatIfChange h;
  h.kind = c::WhatIfChange::Kind::HideCommunication;
  rows.push_back(row_of("exposed communication hidden", "hide_communication", {}, replay.replay(h), base, w));
  return rows;
}

class WhatIf : public Analysis {
 public:
  void finish(Transport& t, const RunResults& run) override {
    // Each rank's compute time (its steady window) for the stage balance, from whichever process read it.
    std::vector<double> work(size_t(std::max(run.world, 0)), 0.0);
    for (const auto& r : run.ranks)
      if (r.rank >= 0 && r.rank < run.world) work[size_t(r.rank)] = r.compute_ms;
    t.allreduce(std::span<double>(work), Transport::Op::Sum);
    ByteWriter w;
    if (t.rank() == 0)
      what_if_table().pack(w, run.cross ? replay_changes(*run.cross, std::move(work)) : std::vector<WhatIfRow>{});
    const std::string got = t.broadcast(w.bytes(), 0);  // ByteReader keeps a view: hold the bytes
    ByteReader r(got);
    rows_ = what_if_table().unpack(r);
  }
  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(what_if_table().materialize(rows_));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override {
    return {{"what_if", what_if_json(rows_)}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput&) const override {
    return {ReportPart::Verdict, what_if_report(rows_)};
  }
  void load(const std::string& h5) override {
    if (h5read::exists(h5, "/what_if")) rows_ = tables::read_rows(h5, what_if_table());  // absent: an older scan
  }

 private:
  std::vector<WhatIfRow> rows_;
};

}  // namespace

const WhatIfRow* ideal_row(const std::vector<WhatIfRow>& rows) {
  const WhatIfRow* best = nullptr;
  for (const auto& r : rows)
    if (r.kind == "fix_all" || ((r.kind == "fix_rank" || r.kind == "fix_link") && !best)) best = &r;
  return best;
}

std::string what_if_json(const std::vector<WhatIfRow>& rows) {
  JsonWriter j;
  if (rows.empty()) return j.null().str();
  const WhatIfRow& measured = rows.front();
  const WhatIfRow* ideal = ideal_row(rows);
  const double ideal_ms = ideal ? ideal->step_ms : measured.step_ms;
  j.begin_object().key("step_ms_actual").value(measured.step_ms).key("step_ms_ideal").value(ideal_ms);
  j.key("slowdown").value(ideal_ms > 0 ? measured.step_ms / ideal_ms : 1.0);
  j.key("from_iteration").value(measured.from_iteration).key("to_iteration").value(measured.to_iteration);
  j.key("changes").begin_array();
  for (size_t i = 1; i < rows.size(); ++i) {
    j.begin_object().key("change").value(rows[i].change).key("step_ms").value(rows[i].step_ms);
    j.key("speedup").value(rows[i].speedup).key("kind").value(rows[i].kind).key("ranks").begin_array();
    for (int32_t r : rows[i].ranks) j.value(int64_t(r));
    j.end_array().end_object();
  }
  return j.end_array().end_object().str();
}

std::string what_if_report(const std::vector<WhatIfRow>& rows) {
  if (rows.size() < 2) return "";
  const WhatIfRow& m = rows.front();
  std::string s = fmt::format("\nwhat fixing each cause buys (replay of iterations {}-{}; measured step {:.2f} ms):\n",
                              m.from_iteration, m.to_iteration, m.step_ms);
  for (size_t i = 1; i < rows.size(); ++i)
    s += fmt::format("  {:<48} {:>10.2f} ms  {:.2f}x\n", rows[i].change, rows[i].step_ms, rows[i].speedup);
  return s;
}

std::unique_ptr<Analysis> what_if() { return std::make_unique<WhatIf>(); }

}  // namespace straggler::analyses
