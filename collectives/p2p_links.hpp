// Pipeline (p2p) links from coinciding end times. Each p2p send has exactly one receiver and the
// two ends of one SendRecv finish together (within microseconds on one clock, at a fixed offset
// across hosts), so a link is the pair of streams whose ops coincide at one offset for a large
// share of their ops. One stream may serve two links (Megatron's batched p2p runs both pipeline
// neighbours on the pipeline group's one communicator): its ops are split between them, each op
// to one peer. Pipeline peers never share a TP or DP group, so streams of co-members of a
// collective communicator pair only when nothing else fits (e.g. all-to-all done with p2p).
#pragma once
#include <vector>

#include "collectives/communicators.hpp"
#include "topology/layout.hpp"

namespace collectives {

std::vector<Communicator> p2p_links(const std::vector<const StreamSummary*>& streams,
                                    const std::vector<Communicator>& collectives, const CommunicatorOptions& opt,
                                    const WorkSplit& split = {});

// The links a layout's pipelines hold that coinciding ends did not find: a grouped send/receive
// kernel ends with the later of its two exchanges, so a stream serving two neighbours may coincide
// with one of them in only a small share of its ops (interleaved 1F1B's ring, Megatron's batched
// p2p). For each pair of adjacent stages (and the last and first stage, where any pipeline shows
// that wrap link) with no link, its streams' densest offset, with fewer coinciding ops than a
// link found from the data alone needs. Wrap links found in at most half the pipelines are chance
// coincidences: removed, and counted in the return value. mark_shared_links goes after it.
size_t complete_links(const std::vector<const StreamSummary*>& streams, const topology::ParallelLayout& layout,
                      std::vector<Communicator>& comms, const CommunicatorOptions& opt);

// Every link whose member stream serves another marked shared (its ops are those that pair across
// the link, keep_link_ops, not its position in the stream), the others not: after links were
// added or dropped.
void mark_shared_links(std::vector<Communicator>& comms);

}  // namespace collectives
