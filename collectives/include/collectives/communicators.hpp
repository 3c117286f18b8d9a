// Which CUDA streams on which ranks form one NCCL communicator.
// Without NCCL payloads there is no communicator id in an nsys export, but NCCL runs one stream
// per communicator and rank, and members of a communicator (1) issue the same sequence of
// collective types at the same rate per iteration and (2) finish each collective together: the difference of two members' end
// times is their (constant) clock difference, op after op. So streams are grouped into
// families by their type sequence, and within a family joined when their end times stay
// coherent (median absolute deviation of the difference below a threshold). A parallel layout,
// when given, names each communicator (tp-3, dp-0, pp-1) and splits any group that spans two of
// its groups.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/nccl_kernel.hpp"
#include "topology/layout.hpp"

namespace collectives {

// One (rank, stream) as seen by its reader: exchanged to every process.
struct StreamSummary {
  int32_t rank = -1, stream = 0;
  uint32_t ops = 0;
  uint64_t type_prefix_hash = 0;     // hash of the first kPrefix collective types
  uint32_t ops_per_iteration = 0;    // median over its steady iterations (0: no iterations)
  CollectiveType first_type = CollectiveType::Unknown;
  std::vector<int64_t> first_ends;   // end times (wall clock) of the first kFingerprint ops
  static constexpr size_t kPrefix = 16, kFingerprint = 48;
};

struct Member {
  int32_t rank = -1, stream = 0;
  uint32_t ops = 0;
};

struct Communicator {
  std::string name;             // "tp-3" etc. with a layout, else "comm-<n>"
  std::vector<Member> members;  // sorted by rank
  CollectiveType type = CollectiveType::Unknown;  // type of its first op
  uint64_t family = 0;  // same collective sequence and member count: comparable communicators
};

struct CommunicatorOptions {
  // Upper limit of the lock-step score (median op-to-op change of two members' end-time
  // difference); real p2p pairs reach ~15 us, members of large rings a few us.
  int64_t coherence_ns = 100'000;
};

// Deterministic: every process computes the same list from the same summaries.
std::vector<Communicator> infer_communicators(std::vector<StreamSummary> streams,
                                              const std::optional<topology::ParallelLayout>& layout,
                                              const CommunicatorOptions& opt = {});

// Lock-step test of two fingerprints (exposed for tests).
bool coherent(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t limit_ns);

}  // namespace collectives
