// Hosts whose clocks are far apart, aligned from when their NCCL ops end, before communicators are
// inferred. NTP keeps a job's hosts within milliseconds, and communicator inference leans on that
// (members' first ends within CommunicatorOptions::max_clock_error_ns, p2p ends searched within
// it). A host whose clock is off by more (a stale NTP, a VM resumed, a clock set by hand) would
// have its collectives left unmatched and false links found at wrong offsets (repro3
// A_host_clock_offset_false_findings). What lets us align it anyway, from NCCL's semantics alone:
// the members of one collective, and the two ends of one p2p transfer, end within microseconds of
// each other; ranks on one host share its clock. So between two hosts whose ranks share any
// collective, the differences of their op end times pile up at the hosts' clock difference,
// however large, while the ends of unrelated ops spread out.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "collectives/communicators.hpp"
#include "ranks/belonging.hpp"

namespace collectives {

// The largest host clock error searched: ranks::kMaxHostClockErrorNs (ranks/belonging.hpp, which
// lets captures that far apart be one job's).
using ranks::kMaxHostClockErrorNs;

// Whether the communicators found leave a clock domain (host) apart from the others, or tie two
// domains by a p2p link at an offset beyond NTP: then coarse_domain_offsets may find more.
bool hosts_look_misaligned(const std::vector<StreamSummary>& streams, const std::vector<Communicator>& comms,
                           int64_t ntp_ns);

// Per clock domain, its clock minus the reference domain's (that of the lowest rank), where the
// ends of its ops pile up at one difference with a domain already aligned; only differences
// beyond `ntp_ns` are kept (smaller ones are the ordinary clock fit's). Deterministic.
std::map<uint64_t, int64_t> coarse_domain_offsets(const std::vector<StreamSummary>& streams, int64_t ntp_ns);

// Whether the op ends `mine` (one rank's) were collectives with the ranks whose ends are `all`
// (sorted; `sample` a few per stream of them): members of one collective end within microseconds
// (NCCL semantics), at the clock difference of their hosts. The differences mine - sample must pile
// up in one window (at least 6, a quarter denser than any a millisecond away, within
// kMaxHostClockErrorNs), and at that difference, refined, three quarters of its ends within the
// span of `all` must meet one of them within kTightSpreadNs: not only the first few, as two jobs
// of one model started together end their first ops alike and then drift apart.
bool ends_meet(const std::vector<int64_t>& mine, const std::vector<int64_t>& sample, const std::vector<int64_t>& all);

}  // namespace collectives
