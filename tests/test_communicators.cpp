// Communicator and layout inference from NCCL's invariants, on synthetic stream fingerprints:
// members of one op end together (plus their host's clock offset); distinct groups wander by
// their own members' jitter; stream ids are arbitrary per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "collectives/communicators.hpp"
#include "../collectives/candidate_pairs.hpp"
#include "topology/infer_layout.hpp"

using namespace collectives;

namespace {

// A little world: ranks with a host clock offset; groups that run ops whose common end is the
// latest of the members' arrivals (each member's arrival jitters on its own).
struct World {
  std::mt19937_64 rng{7};
  std::vector<int64_t> host_offset;  // per rank
  std::vector<int> host;
  std::vector<StreamSummary> streams;
  std::map<std::pair<int, int>, size_t> index;  // (rank, stream) -> streams index
  int next_stream = 1000;

  explicit World(int ranks, int gpus_per_host, int64_t max_offset_ns = 2'000'000) {
    std::uniform_int_distribution<int64_t> off(-max_offset_ns, max_offset_ns);
    std::vector<int64_t> per_host;
    for (int r = 0; r < ranks; ++r) {
      host.push_back(r / gpus_per_host);
      if (size_t(host.back()) >= per_host.size()) per_host.push_back(host.back() == 0 ? 0 : off(rng));
      host_offset.push_back(per_host[size_t(host.back())]);
    }
  }
  // Stream ids are per-process first-use numbers: random bases, never comparable across ranks.
  StreamSummary& stream(int rank, int role, CollectiveType type) {
    auto [it, fresh] = index.try_emplace({rank, role}, streams.size());
    if (fresh) {
      StreamSummary s;
      s.rank = rank, s.stream = int32_t(next_stream++ * 7 % 9973), s.first_type = type;
      s.type_prefix_hash = uint64_t(type) * 31 + 5, s.ops_per_iteration = 0;
      s.clock_domain = uint64_t(host[size_t(rank)]) + 1;
      streams.push_back(s);
    }
    return streams[it->second];
  }
  // One op of a group at true time around t with per-member jitter (ns): all members end at the
  // latest arrival + transfer + 0..2 us noise, recorded on their host clocks.
  void op(const std::vector<int>& members, int role, CollectiveType type, int64_t t, int64_t jitter_ns) {
    std::normal_distribution<double> j(0, std::max(1.0, double(jitter_ns)));
    std::uniform_int_distribution<int64_t> noise(0, 2000);
    int64_t last = 0;
    for (size_t i = 0; i < members.size(); ++i) last = std::max(last, t + int64_t(j(rng)));
    for (int r : members) {
      auto& s = stream(r, role, type);
      if (s.first_ends.size() < StreamSummary::kFingerprint) s.first_ends.push_back(last + 150'000 + noise(rng) + host_offset[size_t(r)]);
      s.ops++;
    }
  }
};

std::set<std::vector<int>> groups_of(const CommunicatorInference& inf, bool p2p) {
  std::set<std::vector<int>> out;
  for (const auto& c : inf.comms) {
    if (c.p2p != p2p) continue;
    std::vector<int> r;
    for (const auto& m : c.members) r.push_back(m.rank);
    out.insert(r);
  }
  return out;
}

// Megatron-like TP x PP x DP with Megatron rank order: TP all-reduces per microbatch, pipeline
// p2p between adjacent stages (one stream per rank serving both neighbours, as batched p2p on the
// pipeline group does), DP all-reduce buckets at the end of the step, later on earlier stages.
World megatron(int tp, int pp, int dp, int gpus_per_host, int64_t jitter_ns, int iterations = 6) {
  topology::ParallelLayout l{tp, pp, dp};
  World w(l.world(), gpus_per_host);
  enum { TP = 1, PP = 2, DP = 3 };
  for (int it = 0; it < iterations; ++it) {
    const int64_t t0 = int64_t(it) * 80'000'000 + int64_t(it % 3) * 400'000;
    for (int s = 0; s < pp; ++s)
      for (int d = 0; d < dp; ++d) {
        // each TP group runs its own (jittered) pace: offsets per group and iteration
        const int64_t pace = int64_t(d * 37 + s * 11 + it * 5) % 13 * 50'000;
        std::vector<int> tpg;
        for (int t = 0; t < tp; ++t) tpg.push_back(l.rank_of(t, d, s));
        if (tp > 1)
          for (int k = 0; k < 12; ++k) w.op(tpg, TP, CollectiveType::AllReduce, t0 + pace + k * 1'500'000, jitter_ns);
        // pipelines of different DP replicas drift apart within a step by their own jitter
        const int64_t drift = int64_t(d * 53 + it * 17) % 19 * jitter_ns * 5;
        if (s + 1 < pp)
          for (int t = 0; t < tp; ++t)
            for (int m = 0; m < 4; ++m) {
              w.op({l.rank_of(t, d, s), l.rank_of(t, d, s + 1)}, PP, CollectiveType::SendRecv,
                   t0 + drift + 20'000'000 + s * 3'000'000 + m * 9'000'000, jitter_ns);
              w.op({l.rank_of(t, d, s), l.rank_of(t, d, s + 1)}, PP, CollectiveType::SendRecv,
                   t0 + drift + 24'500'000 + s * 3'000'000 + m * 9'000'000, jitter_ns);
            }
      }
    for (int s = 0; s < pp; ++s)
      for (int t = 0; t < tp; ++t) {
        std::vector<int> dpg;
        for (int d = 0; d < dp; ++d) dpg.push_back(l.rank_of(t, d, s));
        if (dp > 1)
          for (int b = 0; b < 4; ++b)
            w.op(dpg, DP, CollectiveType::AllReduce, t0 + 70'000'000 - s * 2'000'000 + b * 300'000, jitter_ns);
      }
  }
  return w;
}

}  // namespace

TEST(Communicators, DistinctGroupsInStepAreNotMerged) {
  // TP2 x PP2 x DP4: the four DP groups (per TP index and stage) stay four, TP groups eight.
  auto w = megatron(2, 2, 4, 4, 30'000);
  const auto inf = infer_communicators(w.streams, std::nullopt);
  const topology::ParallelLayout l{2, 2, 4};
  std::set<std::vector<int>> want;
  for (const auto& g : topology::communicator_groups(l))
    if (g.kind != topology::GroupKind::PP) want.insert(g.ranks);
  EXPECT_EQ(groups_of(inf, false), want);
}

TEST(Communicators, P2pLinksPairOneSenderWithOneReceiver) {
  // TP partners 0 and 1 send to 8 and 9 at nearly the same instant: links {0,8} and {1,9}.
  auto w = megatron(2, 2, 4, 4, 30'000);
  const auto inf = infer_communicators(w.streams, std::nullopt);
  const auto links = groups_of(inf, true);
  EXPECT_TRUE(links.count({0, 8}));
  EXPECT_TRUE(links.count({1, 9}));
  EXPECT_FALSE(links.count({0, 9}));
  EXPECT_EQ(links.size(), 8u);
  for (const auto& c : inf.comms) EXPECT_LE(c.members.size(), 4u) << c.name;
}

TEST(Communicators, MiddleStageStreamServesBothNeighbours) {
  // TP2 x PP4 x DP4 on hosts of 8 (one stage per host): only p2p crosses hosts, and each rank runs
  // its p2p on one stream for both neighbours (batched p2p on the pipeline communicator).
  auto w = megatron(2, 4, 4, 8, 60'000);
  const auto inf = infer_communicators(w.streams, std::nullopt);
  const auto links = groups_of(inf, true);
  EXPECT_EQ(links.size(), 24u);  // 8 pipelines x 3 links
  EXPECT_TRUE(links.count({0, 8}) && links.count({8, 16}) && links.count({16, 24}));
  ASSERT_TRUE(inf.layout.layout);
  EXPECT_EQ(inf.layout.source, "inferred");
  EXPECT_EQ(*inf.layout.layout, (topology::ParallelLayout{2, 4, 4}));
  size_t shared = 0;
  for (const auto& c : inf.comms) shared += c.p2p && c.shared;
  EXPECT_EQ(shared, 24u);  // every link touches a middle stage
}

TEST(Communicators, LayoutInferredOnSeveralShapes) {
  for (auto [tp, pp, dp, gph] : std::vector<std::tuple<int, int, int, int>>{{2, 2, 4, 4}, {4, 2, 8, 8}, {1, 1, 8, 4}, {1, 2, 4, 4}}) {
    auto w = megatron(tp, pp, dp, gph, 30'000);
    const auto inf = infer_communicators(w.streams, std::nullopt);
    ASSERT_TRUE(inf.layout.layout) << tp << "x" << pp << "x" << dp;
    EXPECT_EQ(*inf.layout.layout, (topology::ParallelLayout{tp, pp, dp})) << tp << "x" << pp << "x" << dp;
    EXPECT_DOUBLE_EQ(inf.layout.consistency, 1.0) << tp << "x" << pp << "x" << dp;
  }
}

TEST(Communicators, GivenLayoutDisagreementIsReported) {
  auto w = megatron(2, 2, 4, 4, 30'000);
  const auto inf = infer_communicators(w.streams, topology::ParallelLayout{4, 2, 2});
  EXPECT_EQ(inf.layout.source, "given");
  EXPECT_LT(inf.layout.consistency, 1.0);
  ASSERT_FALSE(inf.layout.notes.empty());
  EXPECT_NE(inf.layout.notes.back().find("not groups of layout 4x2x2"), std::string::npos);
}

TEST(Communicators, OtherRankOrderIsInferred) {
  // tp-pp-dp: the pipeline neighbours are adjacent TP blocks.
  topology::ParallelLayout l{2, 2, 2, topology::RankOrder::TpPpDp};
  std::vector<topology::ObservedGroup> obs;
  for (const auto& g : topology::communicator_groups(l)) {
    if (g.kind == topology::GroupKind::PP) {
      obs.push_back({g.ranks, true, 40});
      continue;
    }
    obs.push_back({g.ranks, false, g.kind == topology::GroupKind::TP ? 400.0 : 40.0});
  }
  const auto guess = topology::infer_layout(obs, {0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_TRUE(guess);
  EXPECT_EQ(guess->layout, l);
}

TEST(Communicators, EveryRankOrderIsInferred) {
  // Data-parallel replicas side by side (dp-tp-pp) and the other orders Megatron-Core's `order`
  // string allows: each layout's own groups name it, and its strides number its ranks.
  for (topology::RankOrder o : topology::kRankOrders) {
    topology::ParallelLayout l{2, 2, 2, o};
    std::set<int> seen;
    for (int r = 0; r < 8; ++r) {
      EXPECT_EQ(l.rank_of(l.tp_rank(r), l.dp_rank(r), l.pp_rank(r)), r) << topology::rank_order_name(o);
      seen.insert(l.tp_rank(r) + 2 * l.dp_rank(r) + 4 * l.pp_rank(r));
    }
    EXPECT_EQ(seen.size(), 8u) << topology::rank_order_name(o);
    EXPECT_EQ(topology::rank_order_from_name(topology::rank_order_name(o)), o);
    std::vector<topology::ObservedGroup> obs;
    for (const auto& g : topology::communicator_groups(l))
      obs.push_back({g.ranks, g.kind == topology::GroupKind::PP, g.kind == topology::GroupKind::TP ? 400.0 : 40.0});
    const auto guess = topology::infer_layout(obs, {0, 1, 2, 3, 4, 5, 6, 7});
    ASSERT_TRUE(guess) << topology::rank_order_name(o);
    EXPECT_EQ(guess->layout, l) << topology::rank_order_name(o);
  }
}

TEST(Communicators, LinkOpsMatchedByEndsFollowingDrift) {
  // a serves b and another peer; b's clock is 5 ms ahead and drifts 40 us over the run.
  std::vector<int64_t> a, b;
  for (int k = 0; k < 50; ++k) {
    a.push_back(int64_t(k) * 1'000'000);
    if (k % 2 == 0) b.push_back(int64_t(k) * 1'000'000 + 5'000'000 + k * 800);
  }
  const auto pairs = match_link_ops(a, b, -5'000'000, 10'000);
  ASSERT_EQ(pairs.size(), 25u);
  for (size_t i = 0; i < pairs.size(); ++i) EXPECT_EQ(pairs[i].first, 2 * pairs[i].second);
}


TEST(Communicators, PairsAndAllToAllAreNoPipeline) {
  // One SendRecv pair and nothing else: a pipeline of two or an all-to-all of two; no layout.
  std::vector<topology::ObservedGroup> pair = {{{0, 1}, true, 33}};
  EXPECT_FALSE(topology::infer_layout(pair, {0, 1}));
  // Every rank talking p2p to three others is all-to-all, not a chain: no pipeline from it (and
  // those links fit no layout, so none is claimed).
  std::vector<topology::ObservedGroup> a2a;
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) a2a.push_back({{a, b}, true, 10});
  a2a.push_back({{0, 1, 2, 3}, false, 40});
  EXPECT_FALSE(topology::infer_layout(a2a, {0, 1, 2, 3}));
}

// NCCL's communicator id (NVTX payload): streams with one id are one communicator, even where
// their timing cannot part them (two groups ending together to the nanosecond); an id two streams
// of one rank carry, or whose members' leading types differ, is not trusted (inference decides).
TEST(Communicators, NcclCommunicatorIdIsTheExactKey) {
  World w(8, 8, 0);
  for (int k = 0; k < 20; ++k) {
    const int64_t t = int64_t(k) * 5'000'000;
    w.op({0, 1, 2, 3}, 1, CollectiveType::AllReduce, t, 0);
    w.op({4, 5, 6, 7}, 2, CollectiveType::AllReduce, t, 0);
  }
  for (auto& s : w.streams) s.first_ends.assign(s.first_ends.size(), 0), s.first_ends[0] = 1;  // indistinguishable
  const auto blind = infer_communicators(w.streams, std::nullopt);
  for (auto& s : w.streams) s.comm_id = s.rank < 4 ? 0xA11 : 0xB22;
  const auto inf = infer_communicators(w.streams, std::nullopt);
  EXPECT_EQ(groups_of(inf, false), (std::set<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}))
      << "without ids: " << groups_of(blind, false).size() << " groups";
  // A member whose leading types differ (its capture began an op later): that id is set aside.
  auto shifted = w.streams;
  shifted[5].type_prefix_hash ^= 1;
  for (const auto& c : infer_communicators(shifted, std::nullopt).comms)
    EXPECT_FALSE(c.members.size() == 4 && c.members.front().rank == 4) << "id B22 trusted across leading types";
  // Rank 0 with two streams of one id: that id is set aside.
  auto extra = w.streams[0];
  extra.stream += 1;
  w.streams.push_back(extra);
  const auto dup = infer_communicators(w.streams, std::nullopt);
  for (const auto& c : dup.comms) {
    if (c.members.front().rank == 4) {
      EXPECT_EQ(c.members.size(), 4u);
    }
  }
}

// Large families are scored through candidate pairs (issue 24): the same communicators as when
// every pair is scored, over layouts, jitter and seeds (megatron()'s worlds: members end together
// up to 2 us of noise and their hosts' clock offsets, distinct groups apart by their own pace).
TEST(Communicators, CandidatePairsFindWhatEveryPairFinds) {
  struct Case {
    int tp, pp, dp;
    int64_t jitter_ns;
  };
  for (const Case& c : {Case{2, 2, 16, 20'000}, Case{4, 2, 8, 50'000}, Case{2, 4, 8, 5'000}, Case{8, 1, 16, 30'000},
                        Case{1, 2, 32, 20'000}}) {
    const World w = megatron(c.tp, c.pp, c.dp, 8, c.jitter_ns);
    CommunicatorOptions every, candidates;
    every.exact_family_streams = SIZE_MAX, candidates.exact_family_streams = 0;
    const auto a = infer_communicators(w.streams, std::nullopt, every);
    const auto b = infer_communicators(w.streams, std::nullopt, candidates);
    SCOPED_TRACE(::testing::Message() << c.tp << "x" << c.pp << "x" << c.dp << " jitter " << c.jitter_ns);
    EXPECT_EQ(groups_of(a, false), groups_of(b, false));
    EXPECT_EQ(groups_of(a, true), groups_of(b, true));
    ASSERT_EQ(a.comms.size(), b.comms.size());
    for (size_t i = 0; i < a.comms.size(); ++i) EXPECT_EQ(a.comms[i].name, b.comms[i].name);
    EXPECT_EQ(a.layout.layout.has_value(), b.layout.layout.has_value());
    if (a.layout.layout && b.layout.layout) {
      EXPECT_EQ(a.layout.layout->to_string(), b.layout.layout->to_string());
    }
  }
}

// Candidate pairs: every pair of members of one group shares a bucket (or is joined through
// members that do), and groups far apart are not paired: the count grows with the streams, not
// their square.
TEST(Communicators, CandidatePairsPairMembersNotEveryone) {
  std::mt19937_64 rng(11);
  const int groups = 400, size = 4;
  std::vector<std::vector<int64_t>> ends(size_t(groups * size));
  std::normal_distribution<double> pace(0, 400'000), noise(0, 2'000);
  std::uniform_int_distribution<int64_t> offset(-50'000'000, 50'000'000);
  for (int g = 0; g < groups; ++g) {
    std::vector<int64_t> t{0};
    for (int k = 1; k < 64; ++k) t.push_back(t.back() + 1'500'000 + int64_t(pace(rng)));
    for (int m = 0; m < size; ++m) {
      const int64_t off = offset(rng);
      for (int64_t x : t) ends[size_t(g * size + m)].push_back(x + off + int64_t(noise(rng)));
    }
  }
  std::vector<const std::vector<int64_t>*> ptrs;
  for (const auto& e : ends) ptrs.push_back(&e);
  const auto pairs = candidate_pairs(ptrs, 100'000);
  std::set<std::pair<uint32_t, uint32_t>> got(pairs.begin(), pairs.end());
  size_t member_pairs = 0, found = 0;
  for (int g = 0; g < groups; ++g)
    for (int a = 0; a < size; ++a)
      for (int b = a + 1; b < size; ++b) ++member_pairs, found += got.count({uint32_t(g * size + a), uint32_t(g * size + b)});
  EXPECT_EQ(found, member_pairs);
  const size_t n = ends.size();
  EXPECT_LT(pairs.size(), n * 20) << "of " << n * (n - 1) / 2 << " pairs";
}

// A crowded bucket: every group runs one schedule, apart by less than a cell (distinct TP groups
// of one pipeline stage), and the streams come in no useful order. Each stream's candidates still
// hold a member of its own group (its best partner), and the pairs stay a small multiple of the
// streams: within a bucket the nearest by the band's mean interval are the members.
TEST(Communicators, CandidatePairsFindMembersInCrowdedBuckets) {
  std::mt19937_64 rng(23);
  const int groups = 1000, size = 4;
  std::vector<int64_t> schedule{0};
  for (int k = 1; k < 64; ++k) schedule.push_back(schedule.back() + 1'500'000);
  std::normal_distribution<double> group_jitter(0, 20'000), noise(0, 1'000);
  std::uniform_int_distribution<int64_t> offset(-50'000'000, 50'000'000);
  std::vector<std::vector<int64_t>> ends;
  std::vector<int> group_of;
  for (int g = 0; g < groups; ++g) {
    std::vector<int64_t> t;
    int64_t drift = 0;
    for (int64_t x : schedule) drift += int64_t(group_jitter(rng)), t.push_back(x + drift);
    for (int m = 0; m < size; ++m) {
      const int64_t off = offset(rng);
      ends.emplace_back();
      for (int64_t x : t) ends.back().push_back(x + off + int64_t(noise(rng)));
      group_of.push_back(g);
    }
  }
  std::vector<size_t> order(ends.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<const std::vector<int64_t>*> ptrs;
  std::vector<int> group;
  for (size_t i : order) ptrs.push_back(&ends[i]), group.push_back(group_of[i]);
  const auto pairs = candidate_pairs(ptrs, 100'000, CommunicatorOptions{}.candidate_neighbours);
  std::vector<uint8_t> has_member(ptrs.size(), 0);
  for (const auto& [a, b] : pairs)
    if (group[a] == group[b]) has_member[a] = has_member[b] = 1;
  EXPECT_EQ(std::count(has_member.begin(), has_member.end(), 1), long(ptrs.size()));
  const size_t all = ptrs.size() * (ptrs.size() - 1) / 2;
  EXPECT_LT(pairs.size(), all / 4) << "of " << all << " pairs";
}
