#include "collectives/root_blame.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>

namespace collectives {

void add_blame_records(const CommReplay& replay, const std::vector<int32_t>& ranks, BlameRecords& out) {
  for (size_t k = 0; k < replay.ops.size() && k < replay.arrival.size(); ++k) {
    const auto& row = replay.ops[k];
    const auto& arr = replay.arrival[k];
    const int64_t last = row.first_arrival + row.skew;
    const uint32_t id = uint32_t(out.ops.size());
    out.ops.push_back({row.last_rank, last, row.hold, double(row.blame)});
    for (size_t m = 0; m < arr.size() && m < ranks.size(); ++m)
      out.members.push_back({ranks[m], id, arr[m], last - arr[m]});
  }
}

namespace {

// The delay a rank carries: waits it received and has not yet passed on, by the rank each chain
// started from. A few roots at most (the smallest merged away): chains are few.
struct Carried {
  std::vector<std::pair<int32_t, double>> by_root;
  double total() const {
    double t = 0;
    for (const auto& e : by_root) t += e.second;
    return t;
  }
  void add(int32_t root, double ns) {
    for (auto& e : by_root)
      if (e.first == root) return void(e.second += ns);
    by_root.push_back({root, ns});
    if (by_root.size() > 4) {  // keep the four largest
      std::sort(by_root.begin(), by_root.end(), [](auto& a, auto& b) { return a.second > b.second; });
      by_root.pop_back();
    }
  }
};

}  // namespace

RootBlame root_blame(const BlameRecords& rec, int world) {
  RootBlame out;
  const size_t n = size_t(std::max(world, 0));
  out.direct_ns.assign(n, 0), out.propagated_ns.assign(n, 0), out.root_ns.assign(n, 0);
  std::vector<std::vector<uint32_t>> members_of(rec.ops.size());
  for (uint32_t i = 0; i < rec.members.size(); ++i)
    if (rec.members[i].op < rec.ops.size()) members_of[rec.members[i].op].push_back(i);
  std::vector<Carried> carried(n);
  // Ops in order of their last arrival: the waits a rank received come before it passes them on.
  std::vector<uint32_t> order(rec.ops.size());
  std::iota(order.begin(), order.end(), 0u);
  // A total order, so that the result does not depend on how communicators spread over processes.
  auto key = [&](uint32_t i) {
    const auto& o = rec.ops[i];
    const MemberArrival none{}, &m = members_of[i].empty() ? none : rec.members[members_of[i].front()];
    return std::make_tuple(o.last_arrival, o.last, o.lateness, o.blame, m.rank, m.arrival);
  };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  for (uint32_t k : order) {
    const OpBlame& op = rec.ops[k];
    if (op.last < 0 || size_t(op.last) >= n) continue;
    const size_t last = size_t(op.last);
    Carried& mine = carried[last];
    const double held = mine.total();
    const double take = std::min(held, double(std::max<int64_t>(op.lateness, 0)));
    const double p = op.lateness > 0 ? take / double(op.lateness) : 0.0;
    out.direct_ns[last] += op.blame;
    out.propagated_ns[last] += p * op.blame;
    out.root_ns[last] += (1 - p) * op.blame;
    // The op's roots: its last arriver for 1 - p, the roots of the delay it carries for p (pro
    // rata). The waiting members carry their waits from those roots in those shares.
    std::vector<std::pair<int32_t, double>> roots{{op.last, 1 - p}};
    if (take > 0)
      for (auto& [r, ns] : mine.by_root) {
        if (r >= 0 && size_t(r) < n) out.root_ns[size_t(r)] += p * op.blame * ns / held;
        roots.push_back({r, p * ns / held});
        ns -= take * ns / held;  // passed on
      }
    for (uint32_t i : members_of[k]) {
      const auto& m = rec.members[i];
      if (m.rank < 0 || size_t(m.rank) >= n || m.rank == op.last || m.wait <= 0) continue;
      for (const auto& [r, share] : roots)
        if (share > 0) carried[size_t(m.rank)].add(r, share * double(m.wait));
    }
  }
  return out;
}

}  // namespace collectives
