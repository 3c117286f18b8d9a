// Which measured orders are the program's (what_if.cpp): a rank's arrival that came after another
// op's end looks like a wait for it, but only looks. Ranks of one role run one program (Megatron and
// DDP run the same schedule on every rank of a pipeline stage), so when most of the rank's role
// peers arrived at the same point before the same op had ended, nothing there waits for that op:
// the order on this rank was its own timing (a slow GPU finishing its backward after a receive it
// had posted early), and a replay that keeps it as a dependency would keep the slow rank's delay
// after the rank is fixed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace collectives {

class PeerOrder {
 public:
  // By entry: its peer group (the same role, communicator family, op position and link end), its
  // rank, its arrival and its op's end. Entries of one rank in one group: only the first counts.
  PeerOrder(std::vector<uint32_t> group, std::vector<int32_t> rank, std::vector<double> arrival,
            std::vector<double> end, size_t groups);
  // Whether the peers refute that entry `later` waited for the op of entry `earlier` (both the same
  // rank's): of up to `kVotes` other ranks holding both points, more arrived at `later`'s point
  // before `earlier`'s op ended than after.
  bool refuted(uint32_t earlier, uint32_t later) const;
  static constexpr size_t kVotes = 8;

 private:
  std::vector<uint32_t> first_;  // group g: members_[first_[g], first_[g + 1]), by rank
  std::vector<uint32_t> members_;
  std::vector<uint32_t> group_;
  std::vector<int32_t> rank_;
  std::vector<double> arrival_, end_;
  uint32_t find(uint32_t g, int32_t r) const;  // the entry of rank r in group g, or UINT32_MAX
};

// Which of its links of one family a rank's p2p op is on, in the order the rank first used them.
// A pair of stages may talk over one communicator per direction with the same two members, so the
// end of a link alone would put a stage's sends and receives at one position into one peer group;
// the order of first use is the program's (every rank of a stage runs the same schedule), so it
// tells them apart however the communicators are numbered.
struct LinkUse {
  int32_t rank;
  uint64_t family;
  double arrival;
  uint32_t comm, entry;
};
void order_links(std::vector<LinkUse> uses, std::vector<uint32_t>& link);  // link[entry] = its order (< 65536)

}  // namespace collectives
