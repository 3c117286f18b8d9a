// collectives::decide as data: each tests/cases/decide/*.json (format: tests/cases/README.md)
// gives rank and communicator evidence and the verdict the rules of verdict.hpp imply.
#include <optional>
#include <set>

#include "case_fixture.hpp"
#include "collectives/verdict.hpp"

using namespace collectives;
using cases::element;

namespace {

// A per-iteration series: a number (every iteration), an array, or {"value"|"before", "from",
// "after", "jitter"} (a step at index `from`, plus deterministic noise of that amplitude).
std::vector<double> series(element e, size_t n, uint64_t rank, const std::string& key) {
  std::vector<double> v(n, 0.0);
  if (e.is_array()) {
    v.clear();
    for (element x : e.get_array()) v.push_back(cases::num(x));
    return v;
  }
  if (!e.is_object()) {
    std::fill(v.begin(), v.end(), cases::num(e));
    return v;
  }
  const double before = cases::num_or(e, "before", cases::num_or(e, "value", 0));
  const double after = cases::num_or(e, "after", before), jitter = cases::num_or(e, "jitter", 0);
  const size_t from = size_t(cases::num_or(e, "from", double(n)));
  uint64_t salt = 1469598103934665603ull;  // FNV-1a of the key: the same noise everywhere
  for (char c : key) salt = (salt ^ uint8_t(c)) * 1099511628211ull;
  for (size_t i = 0; i < n; ++i) v[i] = (i < from ? before : after) + jitter * cases::noise(rank, salt, i);
  return v;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// A field of the rank, else of "defaults".
std::optional<element> field(element rank, const std::optional<element>& defaults, const char* key) {
  if (cases::has(rank, key)) return element(rank[key]);
  if (defaults && cases::has(*defaults, key)) return element((*defaults)[key]);
  return std::nullopt;
}

RankEvidence rank_evidence(element r, const std::optional<element>& defaults, size_t n) {
  RankEvidence e;
  e.rank = int(int64_t(r["rank"]));
  e.host = cases::str_or(r, "host", "h0");
  e.role = int(cases::num_or(r, "role", 0));
  auto get = [&](const char* key, double fallback) {
    const auto x = field(r, defaults, key);
    return x ? series(*x, n, uint64_t(e.rank), key) : std::vector<double>(n, fallback);
  };
  e.step_ms = get("step_ms", 100), e.compute_ms = get("compute_ms", 80), e.kernels = get("kernels", 200);
  e.idle_ms = get("idle_ms", 5);
  const auto wait_ms = get("wait_ms", 0), blame_ms = get("blame_ms", 0);
  for (size_t i = 0; i < n; ++i) {
    e.wait_by_iteration.push_back(wait_ms[i] * 1e6), e.blame_by_iteration.push_back(blame_ms[i] * 1e6);
    e.iteration_number.push_back(int64_t(i));
  }
  e.wait_ns = sum(wait_ms) * 1e6, e.blame_ns = sum(blame_ms) * 1e6;
  auto scalar = [&](const char* key, double fallback) {
    const auto x = field(r, defaults, key);
    return x ? cases::num(*x) : fallback;
  };
  e.transfer_ns = scalar("transfer_ms", 0) * 1e6, e.hold_ns = scalar("hold_ms", 0) * 1e6;
  e.ops = scalar("ops", 100), e.late = scalar("late", 0);
  if (const auto top = field(r, defaults, "top_kernels"))
    for (element k : top->get_array()) {
      e.top_names.push_back(std::string(std::string_view(k["name"])));
      auto ms = series(k["ms"], n, uint64_t(e.rank), "top_ms");
      for (double& x : ms) x *= 1e6;
      e.name_ns.push_back(ms), e.name_count.push_back(series(k["count"], n, uint64_t(e.rank), "top_count"));
    }
  return e;
}

CommEvidence comm_evidence(element c) {
  CommEvidence e;
  e.name = std::string(std::string_view(c["name"]));
  e.type = cases::collective_type(cases::str_or(c, "type", "AllReduce"));
  e.family = uint64_t(cases::num_or(c, "family", 1));
  e.ranks = cases::ints(c["ranks"]);
  e.hosts = cases::strings(c["hosts"]);
  e.median_transfer_ns = cases::num(c["median_transfer_us"]) * 1e3;
  e.ops = int64_t(cases::num_or(c, "ops", 100));
  return e;
}

class DecideCase : public testing::TestWithParam<std::string> {};

TEST_P(DecideCase, VerdictAsExpected) {
  simdjson::dom::parser parser;
  element doc;
  ASSERT_EQ(parser.load(GetParam()).get(doc), simdjson::SUCCESS) << GetParam();
  const size_t n = size_t(int64_t(doc["iterations"]));
  std::optional<element> defaults;
  if (cases::has(doc, "defaults")) defaults = element(doc["defaults"]);
  std::vector<RankEvidence> ranks;
  for (element r : doc["ranks"].get_array()) ranks.push_back(rank_evidence(r, defaults, n));
  std::vector<CommEvidence> comms;
  if (cases::has(doc, "comms"))
    for (element c : doc["comms"].get_array()) comms.push_back(comm_evidence(c));
  const size_t clean = cases::has(doc, "clean_iterations") ? size_t(int64_t(doc["clean_iterations"])) : SIZE_MAX;
  const Verdict v = decide(ranks, comms, clean);
  SCOPED_TRACE(cases::str_or(doc, "about", GetParam()));

  element expect = doc["expect"];
  // Stragglers: rank, cause and (when given) onset; by rank.
  std::set<std::tuple<int, std::string, int64_t>> want, got;
  for (element s : expect["stragglers"].get_array())
    want.insert({int(int64_t(s["rank"])), std::string(std::string_view(s["cause"])),
                 cases::has(s, "onset") ? int64_t(s["onset"]) : INT64_MIN});
  for (const auto& s : v.stragglers) {
    int64_t onset = s.onset_iteration;
    for (const auto& w : want)
      if (std::get<0>(w) == s.rank && std::get<2>(w) == INT64_MIN) onset = INT64_MIN;  // not checked
    got.insert({s.rank, cause_name(s.cause), onset});
  }
  std::string found;  // what decide said, to read a failure by
  for (const auto& s : v.stragglers)
    found += "rank " + std::to_string(s.rank) + " " + cause_name(s.cause) + " z " + std::to_string(s.score) +
             " excess " + std::to_string(s.excess_ms) + " ms: " + s.evidence + "\n";
  EXPECT_EQ(got, want) << found;
  for (size_t i = 0; i < ranks.size(); ++i) {  // the per-rank column agrees with the rows
    bool named = false;
    for (const auto& s : v.stragglers) named |= s.rank == ranks[i].rank && s.cause == v.cause[i];
    EXPECT_EQ(named, v.cause[i] != Cause::None) << "rank " << ranks[i].rank;
  }
  // Slow links: hosts and communicators.
  std::set<std::pair<std::vector<std::string>, std::vector<std::string>>> links_want, links_got;
  if (cases::has(expect, "slow_links"))
    for (element l : expect["slow_links"].get_array()) {
      auto c = cases::strings(l["communicators"]);
      std::sort(c.begin(), c.end());
      links_want.insert({cases::strings(l["hosts"]), c});
    }
  for (const auto& l : v.slow_links) {
    auto c = l.communicators;
    std::sort(c.begin(), c.end());
    links_got.insert({l.hosts, c});
  }
  EXPECT_EQ(links_got, links_want);
  if (cases::has(expect, "change_points")) {
    std::vector<int64_t> want_cp, got_cp;
    for (element x : expect["change_points"].get_array()) want_cp.push_back(int64_t(x));
    for (const auto& cp : v.change_points) got_cp.push_back(cp.iteration);
    EXPECT_EQ(got_cp, want_cp);
  }
  // Whether the capture was long enough to name anyone (Verdict::too_short); checked when given.
  if (cases::has(expect, "judged")) {
    EXPECT_EQ(!v.too_short(), bool(expect["judged"])) << v.judged_iterations << " steady iterations, "
                                                      << v.needed_iterations << " needed";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, DecideCase, testing::ValuesIn(cases::files_in("decide")),
                         [](const auto& info) { return cases::test_name(info.param); });

}  // namespace
