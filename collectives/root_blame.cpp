#include "collectives/root_blame.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <span>
#include <tuple>

#include "common/csr.hpp"

namespace collectives {

void add_blame_records(const CommReplay& replay, const std::vector<MemberOps>& members, BlameRecords& out,
                       uint32_t comm) {
  for (size_t k = 0; k < replay.ops.size() && k < replay.arrival.size(); ++k) {
    const auto& row = replay.ops[k];
    const auto& arr = replay.arrival[k];
    const int64_t last = row.first_arrival + row.skew;
    const uint32_t id = uint32_t(out.ops.size());
    out.ops.push_back({row.last_rank, last, row.hold, double(row.blame), comm, uint32_t(k), row.transfer, row.iteration});
    for (size_t m = 0; m < arr.size() && m < members.size(); ++m) {
      const auto& mine = members[m].ops;
      out.members.push_back({members[m].rank, id, arr[m], last - arr[m], k < mine.size() ? mine[k].launch : arr[m]});
    }
  }
}

namespace {

// How much later a rank runs than it would without each root's own delays: (root, ns), the
// kRootsKept largest. A shift from a root not listed counts as 0 (slack for that root).
constexpr size_t kRootsKept = 8;
// In place, not a vector: every member of every op takes its op's shifts (an allocation each).
struct Shift {
  std::array<std::pair<int32_t, double>, kRootsKept> kept{};
  size_t n = 0;
  std::span<const std::pair<int32_t, double>> by_root() const { return {kept.data(), n}; }
  void assign(const std::vector<std::pair<int32_t, double>>& v) {
    n = std::min(v.size(), kRootsKept);
    std::copy_n(v.begin(), n, kept.begin());
  }
  double of(int32_t root) const {
    for (const auto& e : by_root())
      if (e.first == root) return e.second;
    return 0;
  }
  double total_except(int32_t root) const {
    double t = 0;
    for (const auto& e : by_root()) t += e.first == root ? 0 : e.second;
    return t;
  }
};

// One op, its members in arrival order of the records.
struct OpView {
  const OpBlame& op;
  const std::vector<MemberArrival>& all;
  std::span<const uint32_t> ids;  // indices into `all`
  const MemberArrival& at(size_t i) const { return all[ids[i]]; }
};

// The last arriver's own delay: its lead over the others once every other root's shift is taken
// out of everyone's arrival (what is left when those roots are fixed), at most its lateness.
double own_delay(const OpView& v, const std::vector<Shift>& shift) {
  const int32_t last = v.op.last;
  double mine = double(v.op.last_arrival) - shift[size_t(last)].total_except(last), others = -1e300;
  for (size_t i = 0; i < v.ids.size(); ++i) {
    const auto& m = v.at(i);
    if (m.rank != last) others = std::max(others, double(m.arrival) - shift[size_t(m.rank)].total_except(last));
  }
  if (others == -1e300) return 0;
  return std::clamp(mine - others, 0.0, double(std::max<int64_t>(v.op.lateness, 0)));
}

// Without root k's delays every member arrives its k-shift earlier (the last arriver also without
// its own delay when it is k); they all leave at the latest such arrival. Returns the waits that
// would go (members whose wait grows count 0) and the shift all members leave with.
std::pair<double, double> without_root(const OpView& v, const std::vector<Shift>& shift, int32_t k, double own) {
  auto early = [&](const MemberArrival& m) {
    return double(m.arrival) - shift[size_t(m.rank)].of(k) - (m.rank == k && m.rank == v.op.last ? own : 0.0);
  };
  double leave = -1e300;
  for (size_t i = 0; i < v.ids.size(); ++i) leave = std::max(leave, early(v.at(i)));
  double saved = 0;
  for (size_t i = 0; i < v.ids.size(); ++i) saved += std::max(0.0, double(v.at(i).wait) - (leave - early(v.at(i))));
  return {saved, double(v.op.last_arrival) - leave};
}

}  // namespace

RootBlame root_blame(const BlameRecords& rec, int world) {
  RootBlame out;
  const size_t n = size_t(std::max(world, 0));
  out.direct_ns.assign(n, 0), out.propagated_ns.assign(n, 0), out.root_ns.assign(n, 0);
  // Members by op (record order within an op), those of ranks in the world.
  const common::Csr by_op = common::group_by(rec.members.size(), rec.ops.size(), [&](size_t i) {
    const auto& m = rec.members[i];
    return m.rank >= 0 && size_t(m.rank) < n ? size_t(m.op) : SIZE_MAX;
  });
  auto members_of = [&](uint32_t op) { return by_op.of(op); };
  // Ops in order of their last arrival (when their members leave): a rank's shifts come from the
  // ops it left before. A total order, so that the result does not depend on how communicators
  // spread over processes.
  // The keys built once, not at each comparison (the sort was a third of root blame at 512 ranks);
  // the op's index last, so that ties fall in record order.
  struct Key {
    int64_t last_arrival;
    int32_t last;
    int64_t lateness;
    double blame;
    int32_t rank;
    int64_t arrival;
    uint32_t op;
    bool operator<(const Key& o) const {
      return std::tie(last_arrival, last, lateness, blame, rank, arrival, op) <
             std::tie(o.last_arrival, o.last, o.lateness, o.blame, o.rank, o.arrival, o.op);
    }
  };
  std::vector<Key> keys(rec.ops.size());
  for (uint32_t i = 0; i < rec.ops.size(); ++i) {
    const auto& o = rec.ops[i];
    const MemberArrival none{}, &m = members_of(i).empty() ? none : rec.members[members_of(i).front()];
    keys[i] = {o.last_arrival, o.last, o.lateness, o.blame, m.rank, m.arrival, i};
  }
  std::sort(keys.begin(), keys.end());
  std::vector<uint32_t> order(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].op;
  keys = {};
  std::vector<Shift> shift(n);
  std::vector<std::pair<int32_t, double>> saved, leave_shift;
  std::vector<int32_t> roots;
  for (uint32_t k : order) {
    const OpBlame& op = rec.ops[k];
    if (op.last < 0 || size_t(op.last) >= n || members_of(k).empty()) continue;
    const OpView v{op, rec.members, members_of(k)};
    const size_t last = size_t(op.last);
    const double own = own_delay(v, shift);
    const double p = op.lateness > 0 ? 1 - own / double(op.lateness) : 0.0;
    out.direct_ns[last] += op.blame;
    out.propagated_ns[last] += p * op.blame;
    // Candidate roots: the last arriver and every root a member is shifted by.
    roots.assign(1, op.last);
    for (uint32_t i : members_of(k))
      for (const auto& e : shift[size_t(rec.members[i].rank)].by_root()) roots.push_back(e.first);
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    saved.clear(), leave_shift.clear();
    double total_saved = 0;
    for (int32_t r : roots) {
      const auto [s, after] = without_root(v, shift, r, own);
      if (s > 0) saved.push_back({r, s}), total_saved += s;
      if (after > 0) leave_shift.push_back({r, after});
    }
    // The op's blame goes to the roots whose removal saves waits (scaled down where their savings
    // overlap); what no root explains stays with the last arriver.
    const double scale = total_saved > op.blame ? op.blame / total_saved : 1.0;
    for (const auto& [r, s] : saved)
      if (r >= 0 && size_t(r) < n) out.root_ns[size_t(r)] += s * scale;
    out.root_ns[last] += std::max(0.0, op.blame - total_saved * scale);
    // Members of one collective leave together: they all carry the same shifts on.
    std::sort(leave_shift.begin(), leave_shift.end(), [](auto& a, auto& b) { return a.second > b.second; });
    if (leave_shift.size() > kRootsKept) leave_shift.resize(kRootsKept);
    for (uint32_t i : members_of(k)) shift[size_t(rec.members[i].rank)].assign(leave_shift);
  }
  return out;
}

}  // namespace collectives
