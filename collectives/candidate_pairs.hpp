// Candidate pairs of streams for communicator inference without testing every pair (issue 24).
//
// What it rests on: members of one collective finish together (NCCL completes an op on every
// member only once all have arrived), so two members' end times differ by a constant clock offset
// plus a few microseconds, and the intervals between their consecutive ends (offset-free) agree
// op by op. lockstep_score accepts a pair only when nearly all (90%) of those interval differences
// stay within the coherence limit. Here each stream's intervals, cut into bands of a few
// consecutive ones, are quantized to a grid of the limit's width (two grids half a cell apart, a
// fixed offset per band) and hashed: members fall into a common bucket in some band with near
// certainty, distinct groups rarely. Nothing here assumes stream ids, rank order or row order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace collectives {

// Pairs (i < j) of the streams whose first end times are `ends[i]` that share a bucket in some
// band; streams with fewer than 3 ends (too few to tell: the score accepts them) pair with all.
// A bucket larger than `wide_bucket` pairs each stream with its `wide_bucket` nearest neighbours
// in the order of their mean interval over the band (members agree on it to the ends' noise):
// the caller joins verified pairs into components, so connectivity is what matters. `only`: when
// given, the pairs that hold a stream marked there (a search from a few seeds).
std::vector<std::pair<uint32_t, uint32_t>> candidate_pairs(const std::vector<const std::vector<int64_t>*>& ends,
                                                           int64_t cell_ns, size_t wide_bucket = 64,
                                                           const std::vector<uint8_t>* only = nullptr);

}  // namespace collectives
