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

namespace collectives {

std::vector<Communicator> p2p_links(const std::vector<const StreamSummary*>& streams,
                                    const std::vector<Communicator>& collectives, const CommunicatorOptions& opt,
                                    const WorkSplit& split = {});

}  // namespace collectives
