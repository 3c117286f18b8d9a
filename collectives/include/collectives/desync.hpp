// Hangs across communicators: which ranks stopped by themselves and where a stopped pipeline
// stands, from the per-communicator desyncs the replay finds (replay.hpp). Rules of NCCL alone:
// a rank blocked in a collective waits for its peers; a rank that never reached an op and waits in
// no other collective stopped by itself (NCCL docs: a collective blocks until every member calls it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicators.hpp"
#include "collectives/nccl_kernel.hpp"

namespace collectives {

struct DesyncRow {
  std::string communicator;  // display name
  int32_t comm = -1;         // index into the run's communicators
  CollectiveType type = CollectiveType::Unknown;
  int64_t seq = 0;
  std::vector<int32_t> missing_ranks, blocked_ranks;
  // Of missing_ranks: those whose capture ended first while the others stayed blocked (a crash).
  std::vector<int32_t> crashed_ranks;
  // Of crashed_ranks: found by a launch of their own that never finished, in an op no other row's
  // members wait in (every member reached it and none finished: a process, or its GPU, died there).
  std::vector<int32_t> stopped_in_launch;
  bool root_cause = false;  // some missing rank is blocked nowhere else: it stopped by itself
  // seq counts this communicator's ops. For a pipeline link, group_seq is the op's number in the
  // p2p sequence of the whole pipeline group as the first missing rank issues it (its p2p ops on
  // all its links of the group: the seq a per-group flight recorder shows); -1 otherwise.
  int64_t group_seq = -1;
  int32_t iteration = -1;  // iteration index of the op where it was reached (-1: unknown)
};

// Sets root_cause on `desync`: a missing rank blocked in no op of `desync` or `ended` and not in
// `stuck` (ranks stuck in a launch no communicator could be matched to) stopped by itself; one
// blocked elsewhere is a victim of a hang upstream of it. When that leaves no root at all and
// every rank of the job was read (`every_rank_read`: a missing profile may be whom it waits for), a
// missing rank that is only stuck (in no row's blocked_ranks) waits for no one the data shows: its
// launch never finished although the op's members all reached it (a dead process's queued kernels
// never run, a living one's do), so it stopped there: a root, in crashed_ranks and stopped_in_launch.
// A rank whose own host stopped launching (a hang) leaves no unfinished launch behind.
void mark_root_causes(std::vector<DesyncRow>& desync, const std::vector<DesyncRow>& ended,
                      const std::vector<int32_t>& stuck, bool every_rank_read = false);

// Sets group_seq on the rows of pipeline links: the p2p ops the first missing rank completed on
// every link of the group (a stream serving two links counted once), plus one per link where it
// is blocked. `comms` are the run's communicators (DesyncRow::comm indexes them).
void number_in_pipeline_group(std::vector<DesyncRow>& desync, const std::vector<Communicator>& comms);

}  // namespace collectives
