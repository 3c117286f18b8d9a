#include "tables/cross_tables.hpp"

namespace straggler::tables {
namespace {
std::string collective(collectives::CollectiveType t) { return collectives::collective_name(t); }
double ms(int64_t ns) { return double(ns) / 1e6; }
// The type a collective's name stands for (read back: the inverse of collective()).
collectives::CollectiveType collective_type(const std::string& name) { return collectives::collective_of_name(name); }
template <class T>
T cell(const ColumnData& d, size_t row) {
  T v{};
  detail::load_value(d, row, v);
  return v;
}
}  // namespace

const Table<CommunicatorRow>& communicators_table() {
  using C = CommunicatorRow;
  static const Table<C> t{
      "/collectives/communicators",
      "one row per inferred communicator (communicators.hpp)",
      Distribution::Replicated,
      {computed<C>("name", [](const C& c) { return c.comm.name; })
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.name = cell<std::string>(d, i); }),
       computed<C>("collective", [](const C& c) { return collective(c.comm.type); })
           .doc("type of its first op")
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.type = collective_type(cell<std::string>(d, i)); }),
       computed<C>("size", [](const C& c) { return int32_t(c.comm.ranks.size()); })
           .doc("members")
           .reads([](const ColumnData& d, size_t i, C& c) { c.size = cell<int32_t>(d, i); }),
       computed<C>("matched_ops", [](const C& c) { return c.comm.matched_ops; })
           .doc("ops matched across all members")
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.matched_ops = cell<int64_t>(d, i); }),
       computed<C>("median_transfer_ms", [](const C& c) { return c.comm.median_transfer_ns / 1e6; }, "ms")
           .doc("median transfer time of its ops")
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.median_transfer_ns = cell<double>(d, i) * 1e6; }),
       computed<C>("mismatch_seq", [](const C& c) { return c.comm.mismatch_seq; }, "",
                   "first op whose members disagree (-1: none)")
           .doc("first op whose members issued different collective types (-1: none)")
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.mismatch_seq = cell<int64_t>(d, i); }),
       computed<C>("mismatch", [](const C& c) { return c.comm.mismatch; })
           .doc("what differed")
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.mismatch = cell<std::string>(d, i); }),
       col("op_offset", &C::op_offset, "", "first row in /collectives/ops"),
       col("member_offset", &C::member_offset, "", "first row in /collectives/members"),
       col("arrival_offset", &C::arrival_offset, "", "first element in /collectives/arrival_ns (ops x size, op-major)"),
       computed<C>("member_ops", [](const C& c) { return std::vector<int64_t>(c.comm.member_ops.begin(), c.comm.member_ops.end()); },
                   "", "ops each member completed, in member order")
           .reads([](const ColumnData& d, size_t i, C& c) {
             const auto v = cell<std::vector<int64_t>>(d, i);
             c.comm.member_ops.assign(v.begin(), v.end());
           }),
       computed<C>("p2p", [](const C& c) { return uint8_t(c.comm.p2p); }, "", "1: a pipeline (p2p) link")
           .reads([](const ColumnData& d, size_t i, C& c) { c.comm.p2p = cell<uint8_t>(d, i) != 0; })}};
  return t;
}

const Table<MemberRow>& members_table() {
  static const Table<MemberRow> t{"/collectives",
                                  "member ranks of each communicator, concatenated",
                                  Distribution::Replicated,
                                  {col("members", &MemberRow::rank, "", "ranks of each communicator, by member_offset")
                                       .doc("member ranks of each communicator (ascending), by `member_offset`")}};
  return t;
}

// Per-op terms: collectives/include/collectives/decompose.hpp.
const Table<CommOp>& ops_table() {
  using O = CommOp;
  static const Table<O> t{
      "/collectives/ops",
      "one row per matched op of every communicator, concatenated (streamed per communicator)",
      Distribution::Streamed,  // first row of a block: the communicator's op_offset
      {col("communicator", &O::communicator, "", "row in /collectives/communicators"),
       computed<O>("seq", [](const O& o) { return int32_t(o.op->seq); }, "", "issue index on the communicator"),
       computed<O>("type", [](const O& o) { return uint8_t(o.op->type); }, "", "CollectiveType code (see docs)")
           .doc("collective type code (below)"),
       computed<O>("last_rank", [](const O& o) { return o.op->last_rank; }, "", "the member that arrived last"),
       computed<O>("iteration", [](const O& o) { return o.op->iteration; }, "", "iteration index on the last arriver"),
       computed<O>("first_arrival_ns", [](const O& o) { return o.op->first_arrival; }, "ns", "clock-corrected wall clock"),
       computed<O>("skew_ms", [](const O& o) { return ms(o.op->skew); }, "ms", "last arrival - first arrival"),
       computed<O>("transfer_ms", [](const O& o) { return ms(o.op->transfer); }, "ms", "latest end - last arrival"),
       computed<O>("bytes", [](const O& o) { return o.op->bytes; }, "bytes",
                   "message size of one rank's buffer (NCCL's NVTX payload), -1 when the export has none"),
       computed<O>("busbw_gbps", [](const O& o) { return o.op->busbw_gbps; }, "GB/s",
                   "bus bandwidth as nccl-tests defines it, over the transfer time; NaN when the size is unknown")
           .doc("bus bandwidth (collectives/bandwidth.hpp: nccl-tests' factors, S = the message, x n for "
                "AllGather and ReduceScatter) over `transfer_ms`; NaN where the size is unknown"),
       computed<O>("hold_ms", [](const O& o) { return ms(o.op->hold); }, "ms", "last arrival - second-to-last arrival"),
       computed<O>("blame_ms", [](const O& o) { return ms(o.op->blame); }, "ms", "sum of the other members' waits")}};
  return t;
}

const Table<ArrivalRow>& arrivals_table() {
  static const Table<ArrivalRow> t{
      "/collectives",
      "every member's arrival at every matched op (streamed per communicator)",
      Distribution::Streamed,
      {col("arrival_ns", &ArrivalRow::ns, "ns", "clock-corrected kernel start of each member, op-major per communicator")
           .doc("each member's clock-corrected arrival (kernel start): for communicator c, op k, member m at "
                "`arrival_offset[c] + k * size[c] + m`")}};
  return t;
}

const Table<CollectiveHistogramBin>& collective_histograms_table() {
  using B = CollectiveHistogramBin;
  static const Table<B> t{
      "/histograms",
      "one row per bin, over all matched collectives",
      Distribution::Replicated,
      {col("collective_wait_ns_all", &B::wait, "count", "every member's wait in every matched collective"),
       col("collective_skew_ns_all", &B::skew, "count", "arrival skew of every matched collective"),
       col("collective_transfer_ns_all", &B::transfer, "count",
           "transfer time (latest end - last arrival) of every matched collective")}};
  return t;
}

const Table<ClockRow>& clock_table() {
  using K = ClockRow;
  static const Table<K> t{
      "/clock",
      "one row per rank with collective evidence (clock.hpp)",
      Distribution::Replicated,
      {col("rank", &K::rank),
       col("offset_ms", &K::offset_ms, "ms", "subtracted from the rank's wall clock (reference: lowest rank)"),
       col("drift_ppm", &K::drift_ppm, "ppm"),
       col("aligned", &K::aligned, "", "0: not connected to the reference by any communicator")}};
  return t;
}

// Verdict: collectives/include/collectives/verdict.hpp.
const Table<collectives::Straggler>& stragglers_table() {
  using S = collectives::Straggler;
  static const Table<S> t{"/stragglers",
                          "one row per straggler, most blamed first",
                          Distribution::Replicated,
                          {col("rank", &S::rank), col("host", &S::host),
                           enum_col("cause", &S::cause, collectives::cause_name, int(collectives::Cause::Unknown) + 1),
                           col("evidence", &S::evidence),
                           col("why", &S::why, "", "the cause's own evidence (also in evidence)").added(),
                           col("blame_ms", &S::blame_ms, "ms"),
                           col("hold_ms", &S::hold_ms, "ms"), col("excess_ms", &S::excess_ms, "ms"),
                           col("late_fraction", &S::late_fraction), col("score", &S::score),
                           col("onset_iteration", &S::onset_iteration).doc("iteration number; -1: unknown"),
                           col("iterations_after_onset", &S::iterations_after_onset)
                               .doc("steady iterations from the onset on that judged it (the evidence's strength)")
                               .added(),
                           col("cost_ms_per_step", &S::cost_ms_per_step, "ms",
                               "what the job's step loses to it: its share of the what-if saving (docs/costs.md)")
                               .doc("NaN: not replayed (beyond the 16 most blamed)")
                               .added(),
                           col("cost_pct", &S::cost_pct, "%", "cost_ms_per_step as a share of the phase's step").added(),
                           col("own_slowdown", &S::own_slowdown, "x",
                               "its compute kernels' time against its own iterations before the onset, where that and not "
                               "its role peers showed the slow GPU (they slowed with it); 0: not judged so")
                               .added(),
                           enum_col("cause_detail", &S::cause_detail, ranks::finding_name, ranks::kFindingCount + 1,
                                    "host_delay refined by its costliest host-side finding (\"\": none)"),
                           computed<S>("findings", [](const S& s) {
                             std::vector<std::string> v;
                             for (auto f : s.findings) v.push_back(ranks::finding_name(f));
                             return v;
                           }, "", "findings that set it apart from its peers (/findings), costliest first")
                               .reads([](const ColumnData& d, size_t row, S& s) {
                                 std::vector<std::string> names;
                                 detail::load_value(d, row, names);
                                 for (const auto& n : names)
                                   if (auto f = ranks::finding_from_name(n)) s.findings.push_back(*f);
                               })}};
  return t;
}

const Table<ranks::RankFinding>& findings_table() {
  using F = ranks::RankFinding;
  static const Table<F> t{"/findings",
                          "root-cause findings (ranks/findings.hpp, collectives/root_causes.hpp): one row per rank and finding",
                          Distribution::Replicated,
                          {col("rank", &F::rank), enum_col("finding", &F::finding, ranks::finding_name, ranks::kFindingCount + 1),
                           col("severity", &F::severity).doc("the signature's measured value over its threshold (>= 1)"),
                           col("cost_ms_per_step", &F::cost_ms_per_step, "ms", "time it costs per steady step"),
                           col("evidence", &F::evidence),
                           col("unit", &F::unit).doc("what cost_ms_per_step is per: step, repeating unit or window")}};
  return t;
}

const Table<collectives::SlowLink>& slow_links_table() {
  using L = collectives::SlowLink;
  static const Table<L> t{"/slow_links",
                          "one row per slow host link",
                          Distribution::Replicated,
                          {col("hosts", &L::hosts).doc("the link's hosts (e.g. `node-00`, `node-01`)"), col("collective", &L::collective),
                           col("slowdown", &L::slowdown).doc("its transfers' time over their peers'"),
                           col("onset_iteration", &L::onset_iteration)
                               .doc("iteration number its transfers turned slow from; -1: slow throughout the capture")
                               .added(),
                           col("communicators", &L::communicators).doc("the communicators whose transfers were slow"),
                           col("cost_ms_per_step", &L::cost_ms_per_step, "ms",
                               "what the job's step loses to it: its share of the what-if saving (docs/costs.md)")
                               .added(),
                           col("cost_pct", &L::cost_pct, "%", "cost_ms_per_step as a share of the phase's step").added(),
                           col("own_slowdown", &L::own_slowdown, "x",
                               "its transfers against their own iterations before the onset, where its whole like "
                               "turned slow together; 0: found against its like")
                               .added()}};
  return t;
}

const Table<DesyncRow>& desync_table() {
  using D = DesyncRow;
  static const Table<D> t{
      "/desync",
      "one row per communicator whose members stopped at different ops",
      Distribution::Replicated,
      {col("communicator", &D::communicator),
       computed<D>("collective", [](const D& d) { return collective(d.type); })
           .reads([](const ColumnData& c, size_t i, D& d) { d.type = collective_type(cell<std::string>(c, i)); }),
       col("seq", &D::seq)
           .doc("first op not every member reached, counted per communicator (for a pipeline link `pp-N:s-t`, that "
                "link's ops; see `group_seq`)"),
       col("missing_ranks", &D::missing_ranks).doc("members that never reached it"),
       col("blocked_ranks", &D::blocked_ranks).doc("members waiting in it"),
       col("root_cause", &D::root_cause)
           .doc("1: some missing rank is blocked nowhere else (it stopped by itself); 0: the missing ranks are "
                "themselves blocked in another collective"),
       col("group_seq", &D::group_seq, "", "pipeline link pp-N:s-t: the op's number over all links of pp-N; -1 otherwise"),
       col("iteration", &D::iteration)
           .doc("iteration (0 = the first in the capture) in which the op was reached or waited in; -1 unknown")
           .added(),
       col("crashed_ranks", &D::crashed_ranks)
           .doc("of missing_ranks: those whose capture ended first while the others stayed blocked, or that stopped "
                "in a launch of their own that never finished (a crash)")
           .added(),
       col("stopped_in_launch", &D::stopped_in_launch)
           .doc("of crashed_ranks: those found by a launch of their own that never finished, which no other "
                "collective's members wait in (their GPU work stopped with them)")
           .added()}};
  return t;
}

const Table<DesyncRow>& capture_ended_table() {
  using D = DesyncRow;
  static const Table<D> t{
      "/capture_ended",
      "communicators matched up to where some member's capture ended (not a hang)",
      Distribution::Replicated,
      {col("communicator", &D::communicator),
       col("seq", &D::seq, "", "first op the members below did not reach before their capture ended"),
       col("ranks", &D::missing_ranks)
           .doc("members whose capture ended before op `seq`, which the others reached (not a hang; see above)")}};
  return t;
}

const Table<IterationMatrixRow>& iteration_matrices_table() {
  using M = IterationMatrixRow;
  static const Table<M> t{
      "/iterations",
      "iteration index x rank",
      Distribution::Replicated,
      {matrix<M>("step_ms_matrix", "ranks (/clock/rank)", [](const M& m) { return m.step_ms; }, "ms",
                 "iteration index x rank (columns: /clock/rank); 0 where a rank has no such iteration"),
       matrix<M>("blame_ms_matrix", "ranks (/clock/rank)", [](const M& m) { return m.blame_ms; }, "ms")
           .doc("blame of the collectives of each iteration"),
       matrix<M>("wait_ms_matrix", "ranks (/clock/rank)", [](const M& m) { return m.wait_ms; }, "ms")
           .doc("exposed waits in the collectives of each iteration: each wait x the share of its kernel no "
                "compute kernel of the rank overlaps (what the waiting cost the step; replay.hpp)")}};
  return t;
}

const Table<JobStepRow>& job_step_table() {
  static const Table<JobStepRow> t{"/iterations",
                                   "one row per iteration index",
                                   Distribution::Replicated,
                                   {col("job_step_ms", &JobStepRow::step_ms, "ms", "median over ranks, per iteration index")}};
  return t;
}

const Table<collectives::JobChangePoint>& change_points_table() {
  using P = collectives::JobChangePoint;
  static const Table<P> t{"/iterations/change_points",
                          "where the job step time shifted (verdict.hpp)",
                          Distribution::Replicated,
                          {col("iteration", &P::iteration).doc("an iteration number (as in `number`, not a matrix row)"),
                           col("before_ms", &P::before_ms, "ms"), col("after_ms", &P::after_ms, "ms"),
                           col("culprit_ranks", &P::culprit_ranks).doc("ranks whose step time changed (verdict.hpp)"),
                           col("explanation", &P::explanation).doc("what the verdict makes of the change")}};
  return t;
}

const Table<LayoutRow>& layout_table() {
  using L = LayoutRow;
  static const Table<L> t{"/layout",
                          "the parallel layout, given with --layout or inferred (communicators.hpp); no row when unknown",
                          Distribution::Replicated,
                          {col("tp", &L::tp), col("pp", &L::pp), col("dp", &L::dp),
                           col("order", &L::order).doc("rank order, fastest dimension first: `tp-dp-pp` (Megatron), `tp-pp-dp`, `dp-tp-pp`, ... (topology/layout.hpp)"),
                           col("source", &L::source).doc("`given` or `inferred`"),
                           col("consistency", &L::consistency).doc("share of communicators that are groups of the layout"),
                           col("how", &L::how).doc("what it was inferred from"),
                           col("notes", &L::notes).doc("what the data could not decide; disagreements with --layout")}};
  return t;
}

}  // namespace straggler::tables
