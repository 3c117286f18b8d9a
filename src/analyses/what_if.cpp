// What fixing each cause buys (docs/what-if.md): the steady steps replayed over the run's own
// dependency structure (collectives/what_if.hpp) with one change at a time: each straggler at its
// peers' median, all of them together, the pipeline stages balanced, exposed communication hidden.
// Runs on process 0 over the op records the cross-rank run gathered there for root blame; the rows
// go to every process. HDF5 /what_if; summary key `what_if`; a report section.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <thread>
#include <tuple>

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
       col("kind", &R::kind, "", "measured, fix_rank, fix_problem (stragglers sharing a host), fix_link, fix_all, balance_stages or hide_communication"),
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
       col("item", &R::item, "", "straggler, slow_link: its row in /stragglers or /slow_links (-1: other parts)").added(),
       col("alone_ms", &R::alone_ms, "ms", "straggler, slow_link: what fixing it alone saves per step (its cost, docs/costs.md)")
           .added()},
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
  void load(const h5read::File& h5) override { pm_ = load_post_mortem(h5); }

  const PostMortem& result() const { return pm_; }

 private:
  PostMortem pm_;
};

}  // namespace

PostMortem load_post_mortem(const h5read::File& h5) {
  PostMortem pm;  // a table absent: a scan from before the analysis
  if (h5.exists("/what_if")) pm.what_if = tables::read_rows(h5, what_if_table());
  if (h5.exists("/waterfall")) pm.waterfall = tables::read_rows(h5, waterfall_table());
  if (h5.exists("/waterfall/iterations")) pm.iterations = tables::read_rows(h5, iterations_table());
  return pm;
}

double window_cost(const PostMortemWindow& w) { return double(w.end - w.first + 1) * (w.iteration ? 4 : 6); }

namespace {

// Windows to processes, the costliest first to the least loaded (a window's cost: the iterations
// it replays, the lead-in included, times its replays); the same on every process.
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
  c::BlameRecords out;
  for (uint32_t o = 0; o < all.ops.size(); ++o) {
    const int64_t slot = int64_t(all.ops[o].iteration) - lowest;
    if (slot < 0 || size_t(slot) >= wanted.size() || !wanted[size_t(slot)]) continue;
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

// Appends `part` to `into`, its ops renumbered.
void append_records(c::BlameRecords& into, const c::BlameRecords& part) {
  const uint32_t base = uint32_t(into.ops.size());
  into.ops.insert(into.ops.end(), part.ops.begin(), part.ops.end());
  for (auto m : part.members) m.op += base, into.members.push_back(m);
}

// The records in one order whatever the number of processes: by communicator, each one's ops in
// sequence (as its owner appended them), members with their op. Which process owns which
// communicator depends on the process count, so the received order does too; replays and sums
// over it must not (identical outputs at any process count: a tie in the replay went the other
// way at 3 processes, 0.05 ms of a step moved between two parts of the waterfall).
void canonical_order(c::BlameRecords& r) {
  const size_t n = r.ops.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(r.ops[a].comm, r.ops[a].seq) < std::tie(r.ops[b].comm, r.ops[b].seq);
  });
  bool sorted = true;
  for (size_t i = 0; i < n && sorted; ++i) sorted = order[i] == i;
  if (sorted) return;
  std::vector<uint32_t> new_of(n);
  for (size_t i = 0; i < n; ++i) new_of[order[i]] = uint32_t(i);
  std::vector<c::OpBlame> ops(n);
  for (size_t i = 0; i < n; ++i) ops[i] = r.ops[order[i]];
  for (auto& m : r.members) m.op = new_of[m.op];
  std::stable_sort(r.members.begin(), r.members.end(), [](const auto& a, const auto& b) { return a.op < b.op; });
  r.ops = std::move(ops);
}

// The op records, sent once (each process holds its communicators'): all of them to process 0
// (root blame follows every op in time order), and to each other process those of its windows'
// iterations. Both come out in process order, as one gather of everything would give them, so a
// window replays the same records wherever it runs. Process 0's are `all`, the others' `share`.
void send_records(Transport& t, c::BlameRecords&& mine, const std::vector<std::vector<PostMortemWindow>>& of_process,
                  c::BlameRecords& all, c::BlameRecords& share) {
  const int P = t.size(), me = t.rank();
  std::optional<c::RecordIndex> index;  // alone, nothing is sent: no index to pick records with
  if (P > 1) index.emplace(mine);
  auto to = std::vector<std::string>(size_t(P));
  auto pack = [](const c::BlameRecords& r) {
    ByteWriter w;
    put(w, r);
    return w.bytes();
  };
  for (int q = 0; q < P; ++q)
    if (q != me) to[size_t(q)] = q == 0 ? pack(mine) : pack(records_for(mine, *index, of_process[size_t(q)]));
  c::BlameRecords own = me == 0 ? c::BlameRecords{} : records_for(mine, *index, of_process[size_t(me)]);
  if (me == 0) all = std::move(mine);
  mine = {};
  const auto got = t.alltoall(to);
  to.clear();
  c::BlameRecords& into = me == 0 ? all : share;
  for (int p = 0; p < P; ++p) {
    if (p == me) {
      if (me != 0) append_records(into, own);
      continue;
    }
    if (got[size_t(p)].empty()) continue;
    ByteReader r(got[size_t(p)]);
    append_records(into, get<c::BlameRecords>(r));
  }
}

// A process's windows replayed (beside `also`, process 0's other work) on the process's threads;
// their results packed into `out` in window order. Only the calling thread talks to the transport.
void replay_share(Transport& t, const CrossRankResults& x, const c::BlameRecords& rec,
                  const std::vector<PostMortemWindow>& windows, const std::vector<double>& work,
                  const std::function<void()>& also, ByteWriter& out) {
  const c::RecordIndex index(rec);
  std::vector<WindowResult> res(windows.size());
  std::vector<std::function<void()>> tasks;
  if (also) tasks.push_back(also);
  // After each replay a sign of life, from the calling thread only (MPI stays on one thread).
  const auto caller = std::this_thread::get_id();
  const std::function<void()> progress = [&t, caller] {
    if (std::this_thread::get_id() == caller) t.alive();
  };
  for (size_t k = 0; k < windows.size(); ++k)
    tasks.push_back([&, k] { res[k] = replay_window(x, rec, index, windows[k], work, progress); });
  common::run_tasks(tasks, common::process_threads(), [&t] { t.alive(); });
  for (const auto& r : res) what_if_table().pack(out, r.what_if), waterfall_table().pack(out, r.waterfall);
}

// Each rank's compute time over its iterations (the stage balance), from the verdict's evidence.
std::vector<double> work_of(const CrossRankResults& x) {
  std::vector<double> work(x.acc.ops.size(), 0.0);
  for (size_t k = 0; k < x.evidence_ranks.size() && k < x.compute_ms.size(); ++k)
    if (x.evidence_ranks[k] >= 0 && size_t(x.evidence_ranks[k]) < work.size())
      for (double v : x.compute_ms[k]) work[size_t(x.evidence_ranks[k])] += v;
  return work;
}

// Process 0: the windows' results from every process's packed results, in window order.
PostMortem assemble(const std::vector<PostMortemWindow>& windows, const std::vector<int>& owner,
                    const std::vector<std::string>& parts) {
  std::vector<WindowResult> results(windows.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].empty()) continue;
    ByteReader r(parts[p]);
    for (size_t k = 0; k < windows.size(); ++k)
      if (owner[k] == int(p)) results[k].what_if = what_if_table().unpack(r), results[k].waterfall = waterfall_table().unpack(r);
  }
  return assemble_post_mortem(windows, std::move(results));
}

}  // namespace

PostMortem shared_post_mortem(Transport& t, CrossRankResults& x, collectives::BlameRecords&& mine,
                              const std::function<void(const collectives::BlameRecords&)>& on_all_records,
                              double cost_on_0) {
  // Every process plans alike (the verdict and step times are the same everywhere).
  const std::vector<PostMortemWindow> windows = post_mortem_windows(x);
  const std::vector<int> owner = window_owners(windows, t.size(), on_all_records ? cost_on_0 : 0.0);
  std::vector<std::vector<PostMortemWindow>> of_process(size_t(t.size()));
  for (size_t k = 0; k < windows.size(); ++k) of_process[size_t(owner[k])].push_back(windows[k]);
  auto all = std::make_shared<c::BlameRecords>();
  c::BlameRecords share;
  send_records(t, std::move(mine), of_process, *all, share);
  canonical_order(*all), canonical_order(share);
  timings().mark("what-if: send records");
  ByteWriter packed;
  const auto& own = of_process[size_t(t.rank())];
  if (t.rank() == 0) {
    x.op_records = all;
    const std::function<void()> also = on_all_records ? std::function<void()>([&] { on_all_records(*all); }) : nullptr;
    replay_share(t, x, *all, own, work_of(x), also, packed);
  } else {
    replay_share(t, x, share, own, work_of(x), {}, packed);
  }
  timings().mark("what-if: replay own windows");
  const auto parts = t.gather(packed.bytes(), 0);
  timings().mark("what-if: gather");
  PostMortem pm;
  if (t.rank() == 0) pm = assemble(windows, owner, parts);
  ByteWriter w;
  what_if_table().pack(w, pm.what_if), waterfall_table().pack(w, pm.waterfall), iterations_table().pack(w, pm.iterations);
  const std::string bytes = t.broadcast(w.bytes(), 0);  // ByteReader keeps a view: hold the bytes
  ByteReader r(bytes);
  pm.what_if = what_if_table().unpack(r), pm.waterfall = waterfall_table().unpack(r);
  pm.iterations = iterations_table().unpack(r);
  return pm;
}

// A problem costs what fixing it alone buys (the run without it, all else as it was: the truth a
// counterfactual run gives) over the steps since its onset: the phases from there on, each by its
// iterations (a second fault later, or a change of the job's, cuts the run in phases, and the cost
// of the first is over all of them, not over the last alone). Without an onset, or with one inside
// the last phase, the last phase: the state the run ended in. Faults that hide each other (two
// stragglers holding one critical path: fixing either alone buys little of what fixing both buys)
// are charged their share of the saving together instead, so that neither reads as free.
void charge_costs(const PostMortem& pm, collectives::Verdict& v) {
  if (pm.waterfall.empty()) return;
  const int32_t last = pm.waterfall.back().phase;
  std::map<int32_t, std::pair<double, double>> phase_saving;  // phase: (together, sum of alone)
  for (const auto& row : pm.waterfall)
    if (row.item >= 0) phase_saving[row.phase].first += row.ms, phase_saving[row.phase].second += row.alone_ms;
  auto charge = [&](auto& problem, const std::string& part, size_t i) {
    double ms = 0, step = 0, n = 0;
    for (int pass = 0; pass < 2 && n == 0; ++pass)
      for (const auto& row : pm.waterfall) {
        if (row.part != part || row.item < 0 || size_t(row.item) != i) continue;
        const bool since = problem.onset_iteration >= 0 && row.from_iteration >= problem.onset_iteration;
        if (pass == 0 ? !since : row.phase != last) continue;
        const double w = double(std::max<int64_t>(row.to_iteration - row.from_iteration + 1, 1));
        const auto [together, alone] = phase_saving[row.phase];
        ms += w * (alone >= 0.5 * together ? row.alone_ms : row.ms), step += w * row.step_ms, n += w;
      }
    if (n == 0) return;
    problem.cost_ms_per_step = ms / n, problem.cost_pct = step > 0 ? 100 * ms / step : 0;
  };
  for (size_t i = 0; i < v.stragglers.size(); ++i) charge(v.stragglers[i], "straggler", i);
  for (size_t i = 0; i < v.slow_links.size(); ++i) charge(v.slow_links[i], "slow_link", i);
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
