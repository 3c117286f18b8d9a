// A rank's collective ops as the cross-rank analysis keeps and ships them. Encoded when the
// profile is read (the timeline is dropped right after), so a process holds about 10 bytes per op
// of the ranks it read instead of a 56-byte CollectiveOp, and ships exactly those bytes to the
// owner of each communicator, which decodes one communicator at a time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/collective_op.hpp"
#include "collectives/communicators.hpp"

namespace straggler {

// One stream's ops in seq order: start, end, launch, iteration, type, dtype, overlap and message size
// of each (what the replay uses), as varints of deltas (wrap-around arithmetic: any int64 round-trips exactly).
struct StreamRecords {
  int32_t stream = 0;
  uint32_t ops = 0;
  std::string bytes;
};

// `ops` as extract_ops returns them (grouped by stream, seq order within).
std::vector<StreamRecords> encode_streams(const std::vector<collectives::CollectiveOp>& ops);
// Ops of one stream with rank set, seq = position and stream = 0 (as the replay sees them). Throws std::logic_error on bytes that are not a whole encoding of `ops` ops.
std::vector<collectives::CollectiveOp> decode_stream(const std::string& bytes, uint32_t ops, int32_t rank);

// The per-stream facts communicator inference compares across ranks (rank and clock domain are
// filled in later, once known).
std::vector<collectives::StreamSummary> summarize_streams(const std::vector<collectives::CollectiveOp>& ops);

}  // namespace straggler
