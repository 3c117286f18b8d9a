// Declarations of the cross-rank tables (communicators, per-op records, clocks, verdict, desync),
// identical on every process except the per-op tables, which each communicator's owner produces
// while replaying it (streamed).
#pragma once
#include "cross_rank.hpp"
#include "table.hpp"

namespace straggler::tables {

struct CommunicatorRow {
  CommSummary comm;
  int64_t op_offset = 0, member_offset = 0, arrival_offset = 0;  // first row of its ops, members, arrivals
  int32_t size = 0;  // read back only: members (comm.ranks is restored from /collectives/members)
};
struct LayoutRow {  // collectives::LayoutFinding with a layout
  int32_t tp = 1, pp = 1, dp = 1;
  std::string order, source, how;
  double consistency = 0;
  std::vector<std::string> notes;
};
struct MemberRow {
  int32_t rank = -1;
};
struct CommOp {  // one matched op of a communicator (a view: valid while the replay lives)
  int32_t communicator = -1;
  const collectives::OpRow* op = nullptr;
};
struct ArrivalRow {
  int64_t ns = 0;
};
struct CollectiveHistogramBin {
  uint64_t wait = 0, skew = 0, transfer = 0;
};
struct ClockRow {
  int32_t rank = -1;
  double offset_ms = 0, drift_ppm = 0;
  uint8_t aligned = 0;
};
struct IterationMatrixRow {  // one iteration index; a value per rank (columns: /clock/rank)
  std::vector<double> step_ms, blame_ms, wait_ms;
};
struct JobStepRow {
  double step_ms = 0;
};

const Table<ranks::RankFinding>& findings_table();
const Table<CommunicatorRow>& communicators_table();
const Table<MemberRow>& members_table();
const Table<CommOp>& ops_table();
const Table<ArrivalRow>& arrivals_table();
const Table<CollectiveHistogramBin>& collective_histograms_table();
const Table<ClockRow>& clock_table();
const Table<collectives::Straggler>& stragglers_table();
const Table<collectives::SlowLink>& slow_links_table();
const Table<DesyncRow>& desync_table();
const Table<DesyncRow>& capture_ended_table();
const Table<IterationMatrixRow>& iteration_matrices_table();
const Table<JobStepRow>& job_step_table();
const Table<collectives::JobChangePoint>& change_points_table();
const Table<LayoutRow>& layout_table();

}  // namespace straggler::tables
