#include "report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "analyses/what_if.hpp"
#include "collectives/root_causes.hpp"
#include "common/groups.hpp"
#include "problems.hpp"
#include "ranks/discovery.hpp"
#include "ranks/histogram.hpp"
#include "version.hpp"

namespace straggler {
namespace {

using common::printable;  // every path or name from the inputs goes through it

// "1 host", "2 hosts"
std::string plural(size_t n, const char* one, const char* many = nullptr) {
  return fmt::format("{} {}", n, n == 1 ? std::string(one) : many ? std::string(many) : std::string(one) + "s");
}

// "0-2, 40" for sorted distinct values; at most `limit` runs, then ", ...".
std::string ranges(const std::vector<int>& v, size_t limit = 8) {
  std::string out;
  size_t runs = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (runs++ == limit) return out + ", ...";
    out += (out.empty() ? "" : ", ") + (i == j ? std::to_string(v[i]) : fmt::format("{}-{}", v[i], v[j]));
    i = j + 1;
  }
  return out;
}

// "ranks 0-2, 40: 37 missing (3-39)" when the ranks found leave gaps below the highest one (or
// below the --layout's world size); "" when they are complete.
std::string missing_ranks_line(const RunSummaryInput& in, const Options& opt) {
  std::vector<int> found;
  for (const auto& r : in.ranks) found.push_back(r.rank);
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (found.empty()) return "";
  const int world = std::max(found.back() + 1, opt.layout ? opt.layout->world() : 0);
  if (int(found.size()) == world) return "";
  std::vector<int> missing;
  for (int r = 0, k = 0; r < world; ++r)
    if (size_t(k) < found.size() && found[size_t(k)] == r) ++k;
    else missing.push_back(r);
  return fmt::format("ranks {}: {} missing ({}{})\n", ranges(found), missing.size(), ranges(missing),
                     opt.layout ? " of --layout " + opt.layout->to_string() : "");
}

}  // namespace

std::string failure_text(const FailureRow& f) {
  return printable(f.error.rfind(f.file, 0) == 0 ? f.error : f.file + ": " + f.error);
}

namespace {

std::string versions(const std::vector<InputFile>& inputs) {
  std::map<std::string, int> seen;
  for (const auto& f : inputs)
    if (!f.version.empty() || !f.schema.empty())
      seen[fmt::format("{} {} (schema {})", printable(f.format), f.version.empty() ? "?" : printable(f.version),
                       f.schema.empty() ? "?" : printable(f.schema))]++;
  std::string out;
  for (const auto& [v, n] : seen) out += (out.empty() ? "" : ", ") + v + (seen.size() > 1 ? fmt::format(" x{}", n) : "");
  return out;
}

std::string who(const RankRow& r) {
  return fmt::format("rank {} ({}, gpu {})", r.rank, r.host.empty() ? "?" : printable(r.host), r.device);
}

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

void highlight(std::ostream& os, const RunSummaryInput& in, const char* title, double RankRow::*field,
               const char* unit_note) {
  std::vector<const RankRow*> rows;
  for (const auto& r : in.ranks) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) { return a->*field > b->*field; });
  std::vector<double> all;
  for (const auto* r : rows) all.push_back(r->*field);
  const double median = common::Distribution::of(all).p50;
  os << fmt::format("  {} ({}): ", title, unit_note);
  for (size_t i = 0; i < std::min<size_t>(3, rows.size()); ++i) {
    const auto* r = rows[i];
    os << fmt::format("{}{} {:.1f} ms ({:.1f}%)", i ? "; " : "", who(*r), r->*field, pct(r->*field, r->scope_ms));
  }
  os << fmt::format("  [median {:.1f} ms]\n", median);
}

// The verdict line: what was found, and over how much evidence.
void print_headline(std::ostream& os, const CrossRankResults& x, bool in_failed, const std::vector<Problem>& problems) {
  const auto& v = x.verdict;
  if (v.stragglers.empty() && v.slow_links.empty() && x.desync.empty() && v.too_short()) {
    os << fmt::format("verdict: no slow link, no desync; stragglers not judged: {} over {} ranks {} too few to tell a "
                      "straggler from chance ({})",
                      plural(size_t(v.judged_iterations), "steady iteration"), v.compared_ranks,
                      v.judged_iterations == 1 ? "is" : "are",
                      v.needed_iterations > 0 ? fmt::format("at least {} needed", v.needed_iterations)
                                              : std::string("no number would do"));
  } else if (v.stragglers.empty() && v.slow_links.empty() && x.desync.empty() && !problems.empty()) {
    // A problem on every rank: never "healthy as far as ranks go" above it.
    os << "verdict: " << problem_headline(problems.front());
  } else if (v.stragglers.empty() && v.slow_links.empty() && x.desync.empty()) {
    os << "verdict: healthy as far as ranks go: no straggler, no slow link, no desync (no rank holds the others back; "
          "what the job's own step costs is in the post-mortem below)";
  } else {
    std::vector<std::string> found;
    // Stragglers that share a host are one problem: named by the host first, then the rest.
    size_t grouped = 0;
    for (const auto& p : problems)
      if (p.place_kind == "host") found.push_back(problem_headline(p)), grouped += p.stragglers.size();
    if (v.stragglers.size() > grouped)
      found.push_back(plural(v.stragglers.size() - grouped, grouped ? "other straggler" : "straggler"));
    if (!v.slow_links.empty()) found.push_back(plural(v.slow_links.size(), "slow link"));
    if (!x.desync.empty()) {
      // The ranks that stopped by themselves (root causes), else every missing rank.
      std::set<int> stopped, any;
      for (const auto& d : x.desync)
        for (auto r : d.missing_ranks) {
          any.insert(int(r));
          if (d.root_cause) stopped.insert(int(r));
        }
      const std::string who = fmt::format("{}", fmt::join(stopped, ", "));
      if (!stopped.empty())
        found.push_back(fmt::format("desync of {} {}{}", stopped.size() == 1 ? "rank" : "ranks", who, how_stopped(problems)));
      else  // every missing rank waits in another op: the one that stopped was not among those read
        found.push_back(in_failed ? "desync: the rank that stopped is not among the profiles read (see the failures)"
                                  : "desync: every missing rank is blocked elsewhere");
    }
    os << "verdict: " << fmt::format("{}", fmt::join(found, ", "));
  }
  os << fmt::format(" ({}, {}; {:.1f} MB exchanged between processes)\n", plural(x.comms.size(), "communicator"),
                    plural(size_t(x.clock.ops), "matched collective"), double(x.bytes_exchanged_total) / 1e6);
}

// "7.21 ms per step (7.9% of the step)": the one cost of a problem (docs/costs.md).
std::string cost_text(double ms, double pct) {
  if (!std::isfinite(ms)) return "not replayed (only the 16 most blamed stragglers are; see /what_if)";
  return fmt::format("{:.2f} ms per step ({:.1f}% of the step)", ms, pct);
}

// Who, since when, why, what it costs: a line each; the evidence indented below.
void print_straggler(std::ostream& os, const collectives::Straggler& s) {
  std::vector<std::string> parts;  // the evidence's parts, less the cause's own (the why line)
  for (size_t from = 0;;) {
    const size_t at = s.evidence.find("; ", from);
    std::string part = s.evidence.substr(from, at == std::string::npos ? std::string::npos : at - from);
    if (part != s.why) parts.push_back(std::move(part));
    if (at == std::string::npos) break;
    from = at + 2;
  }
  const std::string cause = fmt::format("{}{}", collectives::cause_name(s.cause),
                                        s.cause_detail == ranks::Finding::None ? "" : fmt::format(" ({})", ranks::finding_name(s.cause_detail)));
  os << fmt::format("  STRAGGLER rank {} ({})\n", s.rank, s.host.empty() ? std::string("host unknown") : printable(s.host));
  os << fmt::format("    costs the job: {}\n", cost_text(s.cost_ms_per_step, s.cost_pct));
  os << fmt::format("    since:         iteration {}\n", s.onset_iteration >= 0 ? std::to_string(s.onset_iteration) : "? (from the start of the steady state)");
  os << fmt::format("    why:           {}{}\n", cause, s.why.empty() ? "" : ": " + printable(s.why));
  os << "    evidence:\n";
  for (const auto& p : parts)
    if (!p.empty()) os << "      " << printable(p) << "\n";
}

// A slow link: its hosts and cost, and where the hosts cannot be told apart further, what to run.
void print_slow_link(std::ostream& os, const collectives::SlowLink& l) {
  std::vector<std::string> shown;
  for (const auto& h : l.hosts) shown.push_back(printable(h));
  // Without host names (the profiles hold none) the link is said by the communicators that see it.
  std::vector<std::string> comms;
  for (const auto& c : l.communicators) comms.push_back(printable(c));
  const std::string hosts = shown.empty() ? fmt::format("(hosts unknown: the profiles name none) seen by {}", fmt::join(comms, ", "))
                                          : fmt::format("{}", fmt::join(shown, ", "));
  os << fmt::format("  SLOW LINK {}\n", hosts);
  os << fmt::format("    costs the job: {}\n", cost_text(l.cost_ms_per_step, l.cost_pct));
  os << fmt::format("    why:           {} ({})\n", collectives::slow_link_evidence(l),
                    plural(l.communicators.size(), "communicator"));
  if (l.onset_iteration >= 0) os << fmt::format("    since:         iteration {}\n", l.onset_iteration);
  if (l.hosts.size() > 2)
    os << fmt::format("    next:          the profiles do not narrow it below these {} hosts: run nccl-tests "
                      "(all_reduce_perf -b 8M -e 1G) on pairs of them to find the link\n", l.hosts.size());
}

// No rank stands out: the job's own costs lead (its largest waterfall parts beyond compute).
void print_job_costs(std::ostream& os, const CrossRankResults& x) {
  if (!x.verdict.stragglers.empty() || !x.verdict.slow_links.empty() || !x.desync.empty() || !x.post_mortem) return;
  std::vector<const analyses::WaterfallRow*> parts;
  for (const auto* r : x.post_mortem->last_phase())
    if (r->part != "compute" && r->ms > 0) parts.push_back(r);
  std::sort(parts.begin(), parts.end(), [](auto* a, auto* b) { return a->ms > b->ms; });
  if (parts.empty()) return;
  std::string text;
  for (size_t i = 0; i < parts.size() && i < 3; ++i)
    text += fmt::format("{}{} {:.2f} ms per step ({:.1f}%)", i ? ", " : "", parts[i]->label, parts[i]->ms, 100 * parts[i]->share);
  os << fmt::format("  the job's own costs, beyond compute ({:.2f} ms per step): {}\n", parts.front()->step_ms, text);
}

// One line per finding. step: what the change points measure ("step time" only when iterations
// come from step markers).
void print_findings(std::ostream& os, const CrossRankResults& x, const char* step, const std::vector<Problem>& problems) {
  const auto& v = x.verdict;
  std::vector<uint8_t> grouped(v.stragglers.size(), 0);
  for (const auto& p : problems)
    if (p.place_kind == "host") {
      print_problem(os, p);
      for (size_t si : p.stragglers) grouped[si] = 1;
    }
  for (size_t si = 0; si < v.stragglers.size(); ++si)
    if (!grouped[si]) print_straggler(os, v.stragglers[si]);
  for (const auto& p : problems)
    if (p.place_kind == "every_rank") print_problem(os, p);
  for (const auto& l : v.slow_links) print_slow_link(os, l);
  for (const auto& d : x.desync) {
    const std::string miss = fmt::format("{}", fmt::join(d.missing_ranks, ", "));
    const std::string blocked = fmt::format("{}", fmt::join(d.blocked_ranks, ", "));
    const std::string crashed = d.crashed_ranks.empty() ? "" : fmt::format(" (crashed: {})", fmt::join(d.crashed_ranks, ", "));
    os << fmt::format("  {} {} op {} ({}{}): never reached by {} {}{}{}\n", d.root_cause ? "DESYNC" : "desync (blocked elsewhere)",
                      d.communicator, d.seq, collectives::collective_name(d.type),
                      d.iteration >= 0 ? fmt::format(", iteration {}", d.iteration) : "",
                      d.missing_ranks.size() == 1 ? "rank" : "ranks", miss, crashed,
                      blocked.empty() ? "" : "; waiting in it: " + blocked);
  }
  for (const auto& cp : v.change_points) {
    const std::string who = fmt::format("{}", fmt::join(cp.culprit_ranks, ", "));
    os << fmt::format("  {} changed at iteration {}: {:.2f} -> {:.2f} ms{}: {}\n", step, cp.iteration, cp.before_ms,
                      cp.after_ms, who.empty() ? "" : " (ranks that changed: " + who + ")", cp.explanation);
  }
}

void print_clock_and_layout(std::ostream& os, const CrossRankResults& x) {
  if (!x.clock.far_clocks.empty())
    os << "  clocks: far apart (beyond NTP's milliseconds), aligned by the ends of their collectives: "
       << x.clock.far_clocks << "\n";
  if (!x.clock.rejected.empty())
    os << "  clocks: NOT corrected: " << x.clock.rejected << "\n";
  else if (x.clock.unaligned_ranks > 0)
    os << fmt::format("  clocks: {} not aligned to the others (no trusted collective ties them to rank 0's clock): "
                      "their times are as recorded; the rest corrected, max offset {:.3f} ms\n",
                      plural(size_t(x.clock.unaligned_ranks), "rank"), x.clock.max_offset_ns / 1e6);
  else if (x.clock.max_offset_ns >= 500 || x.clock.violations_before > 0)  // under 0.5 us: nothing to say
    os << fmt::format("  clocks: max offset {:.3f} ms corrected (residual {:.1f} us); collectives ending before their "
                      "last member arrived (impossible on one clock): {} before, {} after correction\n",
                      x.clock.max_offset_ns / 1e6, x.clock.residual_ns / 1e3, x.clock.violations_before,
                      x.clock.violations_after);
  if (x.clock.distrusted_edges)
    os << fmt::format("  clocks: {} pairwise clock fits left out (spread over 100 us, or an offset over 20 ms on thin "
                      "evidence)\n", x.clock.distrusted_edges);
  if (x.layout.layout) {
    const auto& l = *x.layout.layout;
    os << fmt::format("  layout: TP{} x PP{} x DP{} (rank order {}), {}; {:.0f}% of communicators are its groups\n", l.tp,
                      l.pp, l.dp, topology::rank_order_name(l.order),
                      x.layout.source == "given" ? "given with --layout" : "inferred from who talks to whom",
                      100.0 * x.layout.consistency);
  } else {
    os << "  layout: unknown (no --layout, and the communicators found do not determine a TP x PP x DP layout); each rank is "
          "compared with all ranks\n";
  }
}

// Layout notes, mismatched collective types, and communicators cut short by their captures.
void print_communicator_notes(std::ostream& os, const CrossRankResults& x) {
  for (const auto& n : x.layout.notes)
    os << "  note: " << printable(n) << "\n";
  for (const auto& c : x.comms)
    if (c.mismatch_seq >= 0) os << fmt::format("  MISMATCH {} op {}: {}\n", c.name, c.mismatch_seq, printable(c.mismatch));
  // Unequal op counts that are no desync: captures that ended at different times.
  std::set<std::string> desynced;
  for (const auto& d : x.desync) desynced.insert(d.communicator);
  size_t uneven = 0;
  for (const auto& c : x.comms) {
    // p2p links: a member's stream may also serve its other pipeline neighbour
    if (desynced.count(c.name) || c.member_ops.empty() || c.p2p) continue;
    auto [lo, hi] = std::minmax_element(c.member_ops.begin(), c.member_ops.end());
    uneven += *lo != *hi;
  }
  if (uneven)
    os << fmt::format("  note: {} {} members with different op counts where the captures ended "
                      "at different times; ops are matched up to the shortest\n", plural(uneven, "communicator"),
                      uneven == 1 ? "has" : "have");
}

// "3", "0, 1, 5", or "40 ranks: 0, 1, 2, ..." for long lists.
std::string rank_list(const std::vector<int32_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < std::min<size_t>(ranks.size(), 8); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return ranks.size() > 8 ? fmt::format("{} ranks: {}, ...", ranks.size(), s) : s;
}

// The Book of Root Causes over all ranks, costliest first; the job's own (most ranks) marked.
void print_root_causes(std::ostream& os, const CrossRankResults& x, size_t total_ranks) {
  auto rows = collectives::summarize_findings(x.findings, total_ranks);
  collectives::charge_findings(rows, x.verdict, x.post_mortem ? x.post_mortem->last_step_ms() : 0);
  if (rows.empty()) {
    os << "root-cause findings: none\n";
    return;
  }
  os << "root-cause findings (what each costs per steady step, or per repeating unit or capture window where steps "
        "are unknown; costliest first):\n";
  for (const auto& f : rows) {
    // A hotspot is a place to look, not lost time: no cost (ranks/findings.hpp).
    const std::string cost =
        f.finding == ranks::Finding::KernelHotspot
            ? std::string("no cost (a place to look)")
        : f.cost_basis == "replay"
            ? fmt::format("costs the job {} (what fixing its straggler buys; its own figure {:.2f} ms per step)",
                          cost_text(f.cost_ms_per_step, f.cost_pct), f.own_ms_per_step)
            : fmt::format("{:.2f} ms per {}{}{}", f.cost_ms_per_step, f.unit,
                          std::isfinite(f.cost_pct) ? fmt::format(" ({:.1f}% of the step)", f.cost_pct) : "",
                          f.ranks.size() > 1 ? fmt::format(" (median {:.2f})", f.median_cost_ms_per_step) : "");
    os << fmt::format("  {} on {} {}{}: {}: {}\n", ranks::finding_name(f.finding), f.ranks.size() == 1 ? "rank" : "ranks",
                      rank_list(f.ranks),
                      f.shared ? fmt::format(" (the job's own: {} of {} ranks)", f.ranks.size(), total_ranks) : "", cost,
                      printable(f.evidence));
  }
}

void print_verdict(std::ostream& os, const CrossRankResults& x, bool in_failed, const char* step, size_t total_ranks,
                   const std::vector<Problem>& problems) {
  print_headline(os, x, in_failed, problems);
  print_job_costs(os, x);
  print_findings(os, x, step, problems);
  print_clock_and_layout(os, x);
  print_communicator_notes(os, x);
  print_root_causes(os, x, total_ranks);
}

// An HTA figure as HTA prints it (rounded to 2 decimals); "-" where HTA has none.
std::string hta_pct(double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.2f}", v); }

// One line per rank (small runs only: at scale the highlights and the HDF5 say it).
void print_rank_table(std::ostream& os, const std::vector<const RankRow*>& rows, bool periodic, bool marked) {
  os << fmt::format("\n{:>5} {:<12} {:>3} {:>8} {:>9} {:>6} {:>6} {:>6} {:>6} {:>5} {:>9} {:>9} {:>5} {:>6} {:>6} {:>6} "
                    "{:>6}  {}\n",
                    "rank", "host", "gpu", "kernels", !periodic ? "step ms" : marked ? "step/unit" : "unit ms", "busy%",
                    "nccl%", "expo%", "idle%", "gaps", "wait ms", "blame ms", "late%", "H.idle", "H.comp", "H.nonc",
                    "H.ovl", "cause");
  for (const RankRow* rp : rows) {
    const RankRow& r = *rp;
    os << fmt::format("{:>5} {:<12} {:>3} {:>8} {:>9} {:>6.1f} {:>6.1f} {:>6.1f} {:>6.1f} {:>5} {:>9.1f} {:>9.1f} {:>5.0f} "
                      "{:>6} {:>6} {:>6} {:>6}  {}\n",
                      r.rank, printable(r.host).substr(0, 12), r.device, r.kernel_count,
                      r.step_ms_median > 0 ? fmt::format("{:.2f}", r.step_ms_median) : std::string("-"),
                      pct(r.busy_ms, r.scope_ms), pct(r.nccl_ms, r.scope_ms), pct(r.exposed_nccl_ms, r.scope_ms),
                      pct(r.idle_ms, r.scope_ms), r.long_gap_count, r.wait_ms, r.root_blame_ms, 100 * r.late_fraction,
                      hta_pct(r.hta_idle_pct), hta_pct(r.hta_compute_pct), hta_pct(r.hta_non_compute_pct),
                      hta_pct(r.hta_comm_overlap_pct), r.cause);
  }
  os << "(gaps: idle gaps over 1 ms; wait: time in collectives waiting for the last member; blame: peers' time "
        "waiting for it, charged to the rank that started each chain of waits (root blame); late: share of its "
        "collectives where it arrived last; H.*: Holistic Trace Analysis' idle, compute and non-compute % of its "
        "kernel span and comm/comp overlap % of communication, by HTA's definitions (docs/metrics.md))\n";
}

// Holistic Trace Analysis' per-rank figures over all ranks: min / median / max and the ranks at
// the extremes, a line each whatever the number of ranks. Nothing for a file written before they
// existed (all NaN).
void print_hta(std::ostream& os, const RunSummaryInput& in) {
  struct Figure {
    const char* name;
    double RankRow::*field;
  };
  static const Figure figures[] = {{"idle (of kernel span)", &RankRow::hta_idle_pct},
                                   {"compute (of kernel span)", &RankRow::hta_compute_pct},
                                   {"non-compute (of kernel span)", &RankRow::hta_non_compute_pct},
                                   {"comm/comp overlap (of comm)", &RankRow::hta_comm_overlap_pct}};
  std::ostringstream lines;
  bool any = false;
  for (const auto& f : figures) {
    std::vector<const RankRow*> rows;  // by rank, stably sorted: ties name the lowest rank at min, the highest at max
    for (const auto& r : in.ranks)
      if (!std::isnan(r.*f.field)) rows.push_back(&r);
    if (rows.empty()) {
      lines << fmt::format("  {:<30}  -  (no rank has {})\n", f.name,
                           f.field == &RankRow::hta_comm_overlap_pct ? "communication kernels" : "GPU events");
      continue;
    }
    any = true;
    std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) { return a->*f.field < b->*f.field; });
    std::vector<double> v;
    for (const auto* r : rows) v.push_back(r->*f.field);
    lines << fmt::format("  {:<30} {:>6.2f} (rank {}) / {:>6.2f} / {:>6.2f} (rank {}){}\n", f.name, v.front(),
                         rows.front()->rank, common::Distribution::of(v).p50, v.back(), rows.back()->rank,
                         rows.size() < in.ranks.size() ? fmt::format("  [{} of {} ranks]", rows.size(), in.ranks.size())
                                                       : std::string());
  }
  if (!any) return;
  os << "HTA breakdown (Holistic Trace Analysis' definitions, docs/metrics.md), % per rank: min (rank) / median / max "
        "(rank)\n"
     << lines.str();
}

// What this command wrote (a `report` writes no HDF5): the one line that differs between a scan and its report.
void print_wrote(std::ostream& os, const Options& opt) {
  std::vector<std::string> wrote;
  for (const auto& f : {opt.output, opt.summary})
    if (!f.empty()) wrote.push_back(printable(f));
  if (!wrote.empty()) os << "\nwrote " << fmt::format("{}", fmt::join(wrote, " and ")) << "\n";
}

// Where iterations come from and the step (or repeating unit) time over all ranks.
void print_iterations(std::ostream& os, const RunSummaryInput& in, const std::map<std::string, int>& sources,
                      const std::string& unit, bool periodic, bool marked) {
  std::string src;
  for (const auto& [s, n] : sources)
    src += (src.empty() ? "" : ", ") + (s == "collective_period" ? fmt::format("the collective period ({} per unit, "
                                                                               "no step markers) on {} ranks", unit, n)
                                                                 : fmt::format("{} on {} ranks", s, n));
  if (in.steady_step_ms.empty()) {
    os << "iterations: unknown (no NVTX step markers and no regularly repeating NCCL sequence: no step times); "
          "figures cover the whole capture\n";
    return;
  }
  auto d = common::Distribution::of(in.steady_step_ms);
  std::vector<int> its;
  for (const auto& r : in.ranks) its.push_back(r.iterations);
  std::sort(its.begin(), its.end());
  os << fmt::format("{}: {} per rank (median; first {}not in steady figures), from {}\n",
                    marked ? "iterations" : "repeating units", its[its.size() / 2], marked ? "is warm-up, " : "", src);
  const std::string what =
      !periodic ? "step time (steady state, all ranks)"
      : marked  ? "step time or repeating unit (NVTX steps on some ranks, collective period on others; steady state)"
                : fmt::format("repeating unit (collective period, {}; not a marked training step; steady state, "
                              "all ranks)", unit);
  os << fmt::format("{}: median {:.2f} ms, p90 {:.2f} ms, max {:.2f} ms\n", what, d.p50, d.p90, d.max);
}

// GPU time over all ranks and the ranks that stand out.
void print_gpu_time(std::ostream& os, const RunSummaryInput& in) {
  double busy = 0, compute = 0, nccl = 0, exposed = 0, scope = 0;
  for (const auto& r : in.ranks) busy += r.busy_ms, compute += r.compute_ms, nccl += r.nccl_ms, exposed += r.exposed_nccl_ms, scope += r.scope_ms;
  os << fmt::format("GPU time, all ranks: busy {:.1f}%, compute {:.1f}%, NCCL {:.1f}% (exposed {:.1f}%), idle {:.1f}%\n",
                    pct(busy, scope), pct(compute, scope), pct(nccl, scope), pct(exposed, scope), pct(scope - busy, scope));
  print_hta(os, in);
  os << "per-rank highlights (largest first):\n";
  highlight(os, in, "most idle", &RankRow::idle_ms, "GPU doing nothing");
  highlight(os, in, "most NCCL", &RankRow::nccl_ms, "GPU in NCCL kernels");
  highlight(os, in, "most exposed NCCL", &RankRow::exposed_nccl_ms, "NCCL not overlapped by compute");
  highlight(os, in, "most sync", &RankRow::sync_ms, "host blocked in synchronize calls");
}

}  // namespace

void print_failures(std::ostream& os, const std::vector<FailureRow>& failures) {
  for (const auto& f : failures) os << "straggler-scan: " << failure_text(f) << "\n";
}

std::string disconnected_groups(const std::map<int32_t, std::vector<const RankRow*>>& groups);

// Ranks that share no collective with the others (physically one job's ranks are tied by its
// communicators): stale profiles of another run in the folder, or runs put together. One line
// naming a file of each group, and one for ranks with NCCL kernels in no communicator at all; ""
// when the ranks form one job.
std::string disconnected_line(const RunSummaryInput& in) {
  common::Groups<int32_t> job;
  for (const auto& r : in.ranks) job.add(r.rank);
  for (const auto& c : in.cross->comms)
    for (size_t i = 1; i < c.ranks.size(); ++i)
      if (job.has(c.ranks[0]) && job.has(c.ranks[i])) job.join(c.ranks[i], c.ranks[0]);
  // Only ranks in some communicator: a rank with none (inference found nothing) says nothing.
  std::set<int32_t> tied;
  for (const auto& c : in.cross->comms)
    if (c.ranks.size() > 1) tied.insert(c.ranks.begin(), c.ranks.end());
  std::map<int32_t, std::vector<const RankRow*>> groups;
  std::vector<const RankRow*> alone;  // NCCL kernels, yet in no communicator while others share some
  for (const auto& r : in.ranks)
    if (tied.count(r.rank)) groups[job.find(r.rank)].push_back(&r);
    else if (r.nccl_kernel_count > 0) alone.push_back(&r);
  if (!alone.empty() && !tied.empty()) {
    std::vector<int> ranks;
    for (const auto* r : alone) ranks.push_back(r->rank);
    return fmt::format("  WARNING: {} {} ({}{}) {} NCCL kernels but {} no collective with the other ranks: another job's "
                       "profile, or {} peers were not profiled; compared with the others as {}\n",
                       alone.size() == 1 ? "rank" : "ranks", ranges(ranks), printable(alone.front()->file),
                       alone.size() > 1 ? ", ..." : "", "ran", alone.size() == 1 ? "shares" : "share",
                       alone.size() == 1 ? "its" : "their", alone.size() == 1 ? "it is" : "they are") +
           (groups.size() < 2 ? "" : disconnected_groups(groups));
  }
  if (groups.size() < 2) return "";
  return disconnected_groups(groups);
}

// The line for groups of ranks tied within but not to each other.
std::string disconnected_groups(const std::map<int32_t, std::vector<const RankRow*>>& groups) {
  std::vector<std::string> parts;
  for (const auto& [g, rows] : groups) {
    if (parts.size() == 4) break;
    std::vector<int> ranks;
    for (const auto* r : rows) ranks.push_back(r->rank);
    parts.push_back(fmt::format("ranks {} ({}{})", ranges(ranks), printable(rows.front()->file),
                                rows.size() > 1 ? ", ..." : ""));
  }
  return fmt::format("  WARNING: these profiles are not one job: {} groups of ranks share no collective with each other: {}{}; "
                     "stale files of another run, or runs put in one folder? (one folder per run; --strict refuses "
                     "captures of different times)\n",
                     groups.size(), fmt::join(parts, "; "), groups.size() > 4 ? "; ..." : "");
}

// The verdict analysis's section: what is wrong (stragglers, slow links, desyncs, change points),
// clocks and layout, communicator notes, the root causes.
std::string verdict_report(const RunSummaryInput& in) {
  if (!in.cross || in.ranks.empty()) return "";
  const bool any_period = std::any_of(in.ranks.begin(), in.ranks.end(),
                                      [](const RankRow& r) { return r.iteration_source == "collective_period"; });
  std::ostringstream os;
  os << disconnected_line(in);
  print_verdict(os, *in.cross, !in.failures.empty(), any_period ? "repeating-unit time (collective period)" : "step time",
                in.ranks.size(), build_problems(*in.cross, in.ranks));
  return os.str();
}

// The rank_metrics analysis's section: iterations and step times, GPU time, per-rank highlights,
// and one line per rank in small runs.
std::string measurements_report(const RunSummaryInput& in) {
  if (in.ranks.empty()) return "";
  std::ostringstream os;
  // Only NVTX step markers give training steps; the NCCL period gives a repeating unit (one FSDP
  // block, a microbatch, or a step), so it is never called a step time.
  std::map<std::string, int> sources;
  std::vector<int64_t> per_unit;  // collectives per unit: ceil(NCCL kernels / (units + the cut-off one))
  for (const auto& r : in.ranks) {
    sources[r.iteration_source]++;
    if (r.iteration_source == "collective_period" && r.iterations > 0)
      per_unit.push_back((r.nccl_kernel_count + r.iterations) / (r.iterations + 1));
  }
  std::sort(per_unit.begin(), per_unit.end());
  const std::string unit = per_unit.empty() ? "" : fmt::format("~{} collectives", per_unit[per_unit.size() / 2]);
  const bool periodic = sources.count("collective_period"), marked = sources.count("nvtx");
  print_iterations(os, in, sources, unit, periodic, marked);
  print_gpu_time(os, in);
  // Above 64 ranks the ten that matter most (stragglers, then the most blamed): a table of 512
  // lines is read by nobody.
  std::vector<const RankRow*> rows;
  for (const auto& r : in.ranks) rows.push_back(&r);
  if (rows.size() > 64) {
    std::stable_sort(rows.begin(), rows.end(), [](const RankRow* a, const RankRow* b) {
      return std::make_pair(!a->cause.empty(), a->root_blame_ms) > std::make_pair(!b->cause.empty(), b->root_blame_ms);
    });
    rows.resize(10);
    std::sort(rows.begin(), rows.end(), [](const RankRow* a, const RankRow* b) { return a->rank < b->rank; });
    os << fmt::format("\nthe 10 ranks that matter most (stragglers, then the most blamed); the other {} are in the HDF5 "
                      "file's /ranks (scripts/plot_stragglers.py plots them all):", in.ranks.size() - 10);
  }
  print_rank_table(os, rows, periodic, marked);
  return os.str();
}

// The run_inputs analysis's section: the profiles skipped and why.
std::string inputs_report(const RunSummaryInput& in) {
  if (in.failures.empty()) return "";
  std::string out = fmt::format("\nskipped {}:\n", plural(in.failures.size(), "profile"));
  for (const auto& f : in.failures) out += "  " + failure_text(f) + "\n";
  return out;
}

void print_report(std::ostream& os, const RunSummaryInput& in, const Options& opt) {
  std::set<std::string> files;  // files that gave at least one accepted rank
  for (const auto& r : in.ranks) files.insert(r.file);
  const size_t files_ok = files.size();
  // "": ranks whose profiles name no host (PyTorch traces without tensorboard's default file names).
  const size_t named = size_t(std::count_if(in.hosts.begin(), in.hosts.end(), [](const std::string& h) { return !h.empty(); }));
  const std::string hosts = named == in.hosts.size() ? plural(named, "host")
                            : named == 0            ? std::string("hosts unknown (the profiles name none)")
                                                    : plural(named, "host") + " and ranks on hosts unknown";
  os << fmt::format("straggler-scan {}: {} from {} on {}; {}\n", kToolVersion, plural(in.ranks.size(), "rank"),
                    plural(files_ok, "file"), hosts, versions(in.inputs));
  if (in.ranks.empty()) return;
  os << missing_ranks_line(in, opt);
  // The analyses' sections (Analysis::report): what is wrong, then what was measured, then what
  // was read; within a part in registry order.
  for (ReportPart part : {ReportPart::Verdict, ReportPart::Measurements, ReportPart::Inputs})
    for (const auto& section : in.report_sections)
      if (section.part == part) os << section.text;
  print_wrote(os, opt);
}

}  // namespace straggler
