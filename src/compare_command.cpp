// `straggler-scan compare GOOD BAD` (docs/compare.md): each side a run directory (scanned here, in
// memory, as the main command scans) or the HDF5 of an earlier scan (read back on process 0:
// src/scan_load.hpp); process 0 digests both and compares (src/compare.hpp); every process writes
// the tables. Outputs: HDF5 /compare/{runs,kernels,waterfall,changes}, the summary
// (key `compare`), a report.
#include "compare_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "analyses/kernel_names.hpp"
#include "analyses/walls.hpp"
#include "analyses/what_if.hpp"
#include "collectives/nccl_annotate.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "command_outputs.hpp"
#include "compare.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "hdf5_writer.hpp"
#include "json_writer.hpp"
#include "output_files.hpp"
#include "rows.hpp"
#include "scan_load.hpp"
#include "timings.hpp"
#include "version.hpp"

namespace straggler {
namespace {

using compare::ChangeRow;
using compare::KernelDelta;
using compare::WaterfallDelta;
using tables::col;

struct RunRow {
  std::string side, path;
  double step_ms = 0, mfu = -1;
  int64_t from_iteration = -1, to_iteration = -1;
};

const tables::Table<RunRow>& runs_table() {
  static const tables::Table<RunRow> t{
      "/compare/runs", "the two runs: good, then bad (docs/compare.md)", tables::Distribution::Replicated,
      {col("side", &RunRow::side), col("path", &RunRow::path),
       col("step_ms", &RunRow::step_ms, "ms", "mean step of its last phase"), col("mfu", &RunRow::mfu, "", "-1: unknown"),
       col("from_iteration", &RunRow::from_iteration), col("to_iteration", &RunRow::to_iteration)},
      nullptr};
  return t;
}
const tables::Table<KernelDelta>& kernels_table() {
  using K = KernelDelta;
  static const tables::Table<K> t{
      "/compare/kernels", "each kernel name, per rank per step in each run: significant changes first", tables::Distribution::Replicated,
      {col("name", &K::name), col("nccl", &K::nccl), col("change", &K::change, "", "added, removed, more_frequent, fewer, slower, faster, unchanged"),
       col("significant", &K::significant, "", "1: above the noise threshold"), col("good_count", &K::good_count),
       col("bad_count", &K::bad_count), col("good_ms", &K::good_ms, "ms"), col("bad_ms", &K::bad_ms, "ms"),
       col("delta_ms", &K::delta_ms, "ms", "bad - good, per rank per step, waiting included"),
       col("noise_ms", &K::noise_ms, "ms", "the threshold own_delta_ms passed (significant) or did not"),
       col("own_delta_ms", &K::own_delta_ms, "ms", "change of its own work (time less waiting): on own_rank, else the mean over ranks"),
       col("own_rank", &K::own_rank, "", "the rank where its own work changed most (-1: the mean over ranks)"),
       col("good_wait_ms", &K::good_wait_ms, "ms", "NCCL: waiting for the last member, per rank per step"),
       col("bad_wait_ms", &K::bad_wait_ms, "ms", "NCCL: waiting for the last member, per rank per step"),
       col("waiting_for", &K::waiting_for, "", "NCCL: the rank the bad run's waits are for (-1: none)")},
      nullptr};
  return t;
}
const tables::Table<WaterfallDelta>& waterfall_table() {
  using W = WaterfallDelta;
  static const tables::Table<W> t{
      "/compare/waterfall", "the last phase's waterfall of each run, part by part (docs/waterfall.md)", tables::Distribution::Replicated,
      {col("part", &W::part), col("label", &W::label), col("good_ms", &W::good_ms, "ms"), col("bad_ms", &W::bad_ms, "ms"),
       col("delta_ms", &W::delta_ms, "ms")},
      nullptr};
  return t;
}
const tables::Table<ChangeRow>& changes_table() {
  static const tables::Table<ChangeRow> t{
      "/compare/changes", "stragglers (rank, cause) and findings in either run", tables::Distribution::Replicated,
      {col("kind", &ChangeRow::kind, "", "straggler or finding"), col("what", &ChangeRow::what, "", "its cause, or the finding"),
       col("status", &ChangeRow::status, "", "appeared, gone or both"), col("ranks", &ChangeRow::ranks)},
      nullptr};
  return t;
}

// The mfu analysis's summary value of a loaded scan ("null" without).
std::string mfu_value(const Scan& scan) {
  RunSummaryInput all;
  all.cross = scan.cross.get();
  for (const auto& a : scan.analyses)
    for (const auto& [k, v] : a->summary(scan.results, all))
      if (k == "mfu") return v;
  return "null";
}

// What a side's scan says, from its rows of every rank (a loaded scan holds all of them; a scan
// run here holds each process's own, gathered first: gathered_rows).
struct SideRows {
  std::vector<int32_t> ranks;
  std::vector<analyses::KernelNameRow> kernels;
  std::vector<analyses::RankWaiting> waiting;  // every rank's (replicated: no gathering)
};

SideRows own_rows(const Scan& scan) {
  SideRows r;
  for (const auto& row : scan.results.ranks) r.ranks.push_back(row.rank);
  r.kernels = analyses::kernel_name_rows(scan.analyses);
  r.waiting = analyses::rank_waiting(scan.analyses);
  return r;
}

// Every process's rows on process 0 (collective).
SideRows gathered_rows(Transport& t, const Scan& scan) {
  const SideRows mine = own_rows(scan);
  ByteWriter w;
  w.pod<uint64_t>(mine.ranks.size());
  for (int32_t r : mine.ranks) w.pod<int32_t>(r);
  analyses::kernel_names_table().pack(w, mine.kernels);
  SideRows all;
  for (const std::string& blob : t.allgather(w.bytes())) {
    ByteReader r(blob);
    const uint64_t n = r.pod<uint64_t>();
    for (uint64_t i = 0; i < n; ++i) all.ranks.push_back(r.pod<int32_t>());
    auto rows = analyses::kernel_names_table().unpack(r);
    all.kernels.insert(all.kernels.end(), rows.begin(), rows.end());
  }
  std::sort(all.ranks.begin(), all.ranks.end());
  all.waiting = mine.waiting;
  return all;
}

// Each NCCL kernel's waits per rank (compare.hpp), and the rank the waits are charged to most
// (/walls caused_wait_ms: root blame shares of the replay's waits, where one rank holds well beyond
// an even share), else the first straggler.
void add_waits(compare::RunDigest& d, const SideRows& rows) {
  double total = 0;
  for (const auto& w : rows.waiting) total += std::max(0.0, w.caused_wait_ms);
  // As the walls report names them: well beyond an even share (docs/walls.md).
  double most = total * std::max(0.1, 3.0 / double(std::max<size_t>(rows.waiting.size(), 1)));
  for (const auto& w : rows.waiting)
    if (w.caused_wait_ms >= most && w.caused_wait_ms > 0) most = w.caused_wait_ms, d.waiting_for = w.rank;
  if (d.waiting_for < 0 && !d.stragglers.empty()) d.waiting_for = d.stragglers.front().first;
  compare::digest_waits(d);
}

compare::RunDigest digest(const Scan& scan, const SideRows& rows, const std::string& shown) {
  compare::RunDigest d;
  d.path = shown;
  const analyses::PostMortem* pm = analyses::post_mortem_of(scan.analyses);
  if (pm && !pm->what_if.empty()) {
    const auto& m = pm->what_if.front();
    d.step_ms = m.step_ms, d.from_iteration = m.from_iteration, d.to_iteration = m.to_iteration;
    const double mfu = analyses::window_mfu(mfu_value(scan), m.step_ms);
    d.mfu = mfu > 0 ? mfu : -1;
    for (const auto& r : pm->waterfall)
      if (r.phase == pm->waterfall.back().phase) d.waterfall.push_back(r);
  }
  std::map<int32_t, size_t> index;  // rank -> position in the per-rank vectors
  for (int32_t r : rows.ranks) index.emplace(r, index.size());
  d.ranks = int32_t(index.size());
  d.rank_ids = rows.ranks;
  for (const auto& k : rows.kernels) {
    if (!index.count(k.rank) || k.steps <= 0) continue;
    auto& e = d.kernels[k.name];
    e.nccl |= k.nccl;
    e.count.resize(index.size(), 0.0), e.ms.resize(index.size(), 0.0);
    e.count[index[k.rank]] += double(k.count) / k.steps, e.ms[index[k.rank]] += k.total_ms / k.steps;
  }
  if (scan.cross) {
    for (const auto& s : scan.cross->verdict.stragglers) d.stragglers.push_back({s.rank, collectives::cause_name(s.cause)});
    std::map<std::string, std::vector<int32_t>> by;
    for (const auto& f : scan.cross->findings) by[ranks::finding_name(f.finding)].push_back(f.rank);
    for (auto& [what, rs] : by) d.findings.push_back({what, rs});
  }
  for (auto& [name, k] : d.kernels) k.count.resize(index.size(), 0.0), k.ms.resize(index.size(), 0.0);
  add_waits(d, rows);
  return d;
}

// NCCL kernels whose waiting changed by more than 0.1% of GOOD's step, largest change first.
std::vector<const KernelDelta*> waiting_changes(const compare::Comparison& c, double good_step_ms) {
  std::vector<const KernelDelta*> out;
  for (const auto& k : c.kernels)
    if (k.nccl && std::abs(k.bad_wait_ms - k.good_wait_ms) > compare::CompareOptions{}.min_step_share * good_step_ms) out.push_back(&k);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return std::abs(a->bad_wait_ms - a->good_wait_ms) > std::abs(b->bad_wait_ms - b->good_wait_ms);
  });
  return out;
}

std::string summary_json(const compare::Comparison& c, const std::vector<compare::RunDigest>& runs) {
  JsonWriter j;
  j.begin_object().key("tool").value("straggler-scan").key("version").value(kToolVersion).key("command").value("compare");
  j.key("good").value(runs[0].path).key("bad").value(runs[1].path).key("compare").begin_object();
  j.key("step_ms").begin_object().key("good").value(c.good_step_ms).key("bad").value(c.bad_step_ms).key("ratio").value(c.step_ratio).end_object();
  j.key("mfu").begin_object().key("good");
  c.good_mfu > 0 ? j.value(c.good_mfu) : j.null();
  j.key("bad");
  c.bad_mfu > 0 ? j.value(c.bad_mfu) : j.null();
  j.end_object().key("kernels").begin_array();  // the significant ones
  for (const auto& k : c.kernels) {
    if (!k.significant) break;
    j.begin_object().key("name").value(k.name).key("nccl").value(bool(k.nccl)).key("change").value(k.change);
    j.key("good_count").value(k.good_count).key("bad_count").value(k.bad_count).key("good_ms").value(k.good_ms);
    j.key("bad_ms").value(k.bad_ms).key("delta_ms").value(k.delta_ms).key("noise_ms").value(k.noise_ms);
    j.key("own_delta_ms").value(k.own_delta_ms).key("own_rank").value(int64_t(k.own_rank));
    j.key("good_wait_ms").value(k.good_wait_ms).key("bad_wait_ms").value(k.bad_wait_ms).key("waiting_for").value(int64_t(k.waiting_for)).end_object();
  }
  j.end_array().key("waiting").begin_array();  // NCCL kernels whose waiting changed: not their own work
  for (const auto& k : waiting_changes(c, runs[0].step_ms))
    j.begin_object().key("name").value(k->name).key("good_wait_ms").value(k->good_wait_ms).key("bad_wait_ms").value(k->bad_wait_ms)
        .key("waiting_for").value(int64_t(k->waiting_for)).end_object();
  j.end_array().key("waterfall").begin_array();
  for (const auto& w : c.waterfall)
    j.begin_object().key("part").value(w.part).key("label").value(w.label).key("good_ms").value(w.good_ms)
        .key("bad_ms").value(w.bad_ms).key("delta_ms").value(w.delta_ms).end_object();
  j.end_array().key("changes").begin_array();
  for (const auto& ch : c.changes) {
    j.begin_object().key("kind").value(ch.kind).key("what").value(ch.what).key("status").value(ch.status).key("ranks").begin_array();
    for (int32_t r : ch.ranks) j.value(int64_t(r));
    j.end_array().end_object();
  }
  return j.end_array().end_object().end_object().str();
}

std::string report(const compare::Comparison& c, const std::vector<compare::RunDigest>& runs) {
  std::string s = fmt::format("compare: good {} (iterations {}-{}), bad {} (iterations {}-{})\n", common::printable(runs[0].path),
                              runs[0].from_iteration, runs[0].to_iteration, common::printable(runs[1].path),
                              runs[1].from_iteration, runs[1].to_iteration);
  s += fmt::format("  step {} -> {} ({:+.1f}%)", analyses::ms_text(c.good_step_ms), analyses::ms_text(c.bad_step_ms), 100 * (c.step_ratio - 1));
  if (c.good_mfu > 0 && c.bad_mfu > 0) s += fmt::format("; MFU {:.1f}% -> {:.1f}%", 100 * c.good_mfu, 100 * c.bad_mfu);
  s += "\n  kernels (own work: time less waiting for a collective's last member; per rank per step; above the noise threshold):\n";
  size_t shown = 0;
  for (const auto& k : c.kernels) {
    if (!k.significant || shown++ >= 12) break;
    const std::string where = k.own_rank >= 0 ? fmt::format("on rank {}", k.own_rank) : "mean";
    s += fmt::format("    {:<14} {:+10.3f} ms {:<12} ({:.3f} -> {:.3f} ms per rank, {:.1f} -> {:.1f} launches)  {}\n", k.change,
                     k.own_delta_ms, where, k.good_ms, k.bad_ms, k.good_count, k.bad_count, common::printable(k.name.substr(0, 80)));
  }
  if (!shown) s += "    none\n";
  const auto waits = waiting_changes(c, runs[0].step_ms);
  if (!waits.empty()) s += "  waiting in collectives (not the kernels' own work; per rank per step):\n";
  for (size_t i = 0; i < waits.size() && i < 5; ++i) {
    const auto& k = *waits[i];
    s += fmt::format("    {:+10.3f} ms  {:.3f} -> {:.3f} ms{}  {}\n", k.bad_wait_ms - k.good_wait_ms, k.good_wait_ms, k.bad_wait_ms,
                     k.waiting_for >= 0 ? fmt::format(", waiting for rank {}", k.waiting_for) : "",
                     common::printable(k.name.substr(0, 80)));
  }
  s += "  where the step goes (good -> bad):\n";
  for (const auto& w : c.waterfall)
    s += fmt::format("    {:<40} {:>11} -> {:>11}  {:+.2f} ms\n", w.label, analyses::ms_text(w.good_ms), analyses::ms_text(w.bad_ms), w.delta_ms);
  for (const auto& ch : c.changes)
    if (ch.status != "both")
      s += fmt::format("  {} {} {} (ranks {})\n", ch.kind, common::printable(ch.what), ch.status == "appeared" ? "appeared" : "went away",
                       fmt::join(ch.ranks, ", "));
  return s;
}

}  // namespace

// The tables, packed on process 0 and unpacked on every process (the writer is collective).
std::string pack_compare(const compare::Comparison& c, const std::vector<compare::RunDigest>& runs) {
  std::vector<RunRow> rr;
  for (size_t i = 0; i < runs.size(); ++i)
    rr.push_back({i == 0 ? "good" : "bad", runs[i].path, runs[i].step_ms, runs[i].mfu, runs[i].from_iteration, runs[i].to_iteration});
  ByteWriter w;
  runs_table().pack(w, rr), kernels_table().pack(w, c.kernels), waterfall_table().pack(w, c.waterfall);
  changes_table().pack(w, c.changes);
  return w.bytes();
}
std::vector<tables::TableData> unpack_compare(const std::string& blob) {
  ByteReader r(blob);
  std::vector<tables::TableData> out;
  out.push_back(runs_table().materialize(runs_table().unpack(r)));
  out.push_back(kernels_table().materialize(kernels_table().unpack(r)));
  out.push_back(waterfall_table().materialize(waterfall_table().unpack(r)));
  out.push_back(changes_table().materialize(changes_table().unpack(r)));
  return out;
}

}  // namespace straggler

namespace straggler {

std::vector<tables::TableData> compare_table_schemas() { return unpack_compare(pack_compare({}, {})); }

int run_compare(Transport& t, const Options& opt) {
  timings().start();
  std::string error, kinds;
  if (t.root()) {
    try {
      check_output_paths(opt);
      check_outputs_not_inputs(opt, opt.inputs);
      for (const auto& in : opt.inputs) kinds += is_scan_file(in) ? 'h' : 'd';
    } catch (const common::UsageError& e) {
      error = e.what();
    }
  }
  error = t.broadcast(error, 0);
  if (!error.empty()) throw common::UsageError(error);
  kinds = t.broadcast(kinds, 0);
  // A run directory is scanned here, in memory, with every scan option the user gave; a saved scan
  // is read back on process 0 (through the checks of src/h5_read.hpp). No temporary file either way.
  std::vector<compare::RunDigest> runs(opt.inputs.size());
  compare::Comparison c;
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    if (kinds[i] == 'h') {
      if (t.root()) {
        try {
          const Scan scan = load_scan(opt.inputs[i]);
          runs[i] = digest(scan, own_rows(scan), opt.inputs[i]);
        } catch (const common::UsageError& e) {
          if (error.empty()) error = e.what();
        }
      }
      continue;
    }
    Options sub = scan_options_for(opt.inputs[i], opt, {"model-flops-per-step", "gpu", "peak-tflops", "precision"});
    const Scan scan = analyse(t, sub, [](const std::string& p) { return collectives::read_annotated(p); });
    if (scan.status != 0)
      throw common::UsageError(common::printable(opt.inputs[i]) + ": no usable profile (" + scan.failure + ")");
    const SideRows rows = gathered_rows(t, scan);
    if (t.root()) runs[i] = digest(scan, rows, opt.inputs[i]);
    timings().mark("scan " + common::printable(opt.inputs[i]));
  }
  if (t.root() && error.empty()) c = compare::compare_runs(runs[0], runs[1]);
  error = t.broadcast(error, 0);
  if (!error.empty()) throw common::UsageError(error);
  const std::string blob = t.broadcast(t.root() ? pack_compare(c, runs) : std::string(), 0);
  tables::ResultTables out;
  out.tables = unpack_compare(blob);
  write_command_outputs(t, opt, std::move(out), [&] { return summary_json(c, runs); });
  if (t.root() && !opt.quiet) std::cout << report(c, runs);
  return 0;
}

}  // namespace straggler
