// collectives::infer_communicators as data: each tests/cases/infer/*.json describes a job (ranks,
// hosts and their clock offsets, groups of streams and their pace) from which the stream
// summaries are built, and the communicators and layout NCCL's invariants imply.
//
//   {"about": "...", "rule": "...",
//    "ranks": 8, "gpus_per_host": 4, "host_offset_us": [0, 1700],  // per host (default 0)
//    "iterations": 6, "iteration_ms": 80,
//    "groups": [{"type": "AllReduce", "stream": "tp", "members": [[0, 1], [2, 3]],
//                "at_ms": 0, "every_ms": 1.5, "ops": 12, "pace_us": 50, "jitter_us": 30,
//                "family": "allreduce"}],   // family: streams with equal labels share a type sequence
//    "layout": "2x2x2",                      // optional: given (TPxPPxDP)
//    "expect": {"communicators": [{"members": [0, 1], "p2p": false, "name": "tp-0"}],  // name optional
//               "layout": "2x2x2", "layout_source": "inferred"}}                    // "" for none
//
// Op k of group instance g in iteration i is due at i x iteration + at + k x every + pace, where
// pace (0..12 x pace_us) is drawn per instance and iteration: distinct groups wander apart, as
// their members' jitter differs. Each member arrives within +-jitter_us of it; all members end
// together at the last arrival + 150 us + 0..2 us, recorded on their host's clock. A member's ops
// with the same "stream" label share one stream (Megatron's batched p2p: one stream per rank
// serves both pipeline neighbours). Stream ids are arbitrary per rank, as CUPTI's are.
#include <map>
#include <set>

#include "case_fixture.hpp"
#include "collectives/communicators.hpp"

using namespace collectives;
using cases::element;

namespace {

std::vector<StreamSummary> build_streams(element doc) {
  const int nranks = int(int64_t(doc["ranks"]));
  const int per_host = int(cases::num_or(doc, "gpus_per_host", nranks));
  std::vector<double> host_offset_us;
  if (cases::has(doc, "host_offset_us"))
    for (element x : doc["host_offset_us"].get_array()) host_offset_us.push_back(cases::num(x));
  const int iterations = int(cases::num_or(doc, "iterations", 6));
  const double iteration_ns = cases::num_or(doc, "iteration_ms", 80) * 1e6;
  struct Stream {
    StreamSummary s;
    std::vector<int64_t> ends;
  };
  std::map<std::pair<int, std::string>, Stream> streams;
  uint64_t spec = 0;
  for (element g : doc["groups"].get_array()) {
    ++spec;
    const auto type = cases::collective_type(cases::str_or(g, "type", "AllReduce"));
    const std::string label = cases::str_or(g, "stream", "s");
    const std::string family = cases::str_or(g, "family", cases::str_or(g, "type", "AllReduce"));
    const double at = cases::num_or(g, "at_ms", 0) * 1e6, every = cases::num_or(g, "every_ms", 1) * 1e6;
    const int ops = int(cases::num_or(g, "ops", 4));
    const double pace_ns = cases::num_or(g, "pace_us", 50) * 1e3, jitter_ns = cases::num_or(g, "jitter_us", 20) * 1e3;
    uint64_t fam = 1469598103934665603ull;
    for (char c : family) fam = (fam ^ uint8_t(c)) * 1099511628211ull;
    uint64_t inst = 0;
    for (element m : g["members"].get_array()) {
      const auto members = cases::ints(m);
      ++inst;
      for (int it = 0; it < iterations; ++it) {
        const double pace = double(int((cases::noise(spec, inst, uint64_t(it)) + 1) * 6.5)) * pace_ns;
        for (int k = 0; k < ops; ++k) {
          const double due = it * iteration_ns + at + k * every + pace;
          double last = 0;
          for (size_t x = 0; x < members.size(); ++x)
            last = std::max(last, due + jitter_ns * cases::noise(spec * 1000 + inst, uint64_t(it * 1000 + k), x));
          for (size_t x = 0; x < members.size(); ++x) {
            const int r = members[x], host = r / per_host;
            auto& st = streams[{r, label}];
            if (st.s.rank < 0) {
              st.s.rank = r, st.s.stream = int32_t((r * 7919 + int(label.size()) * 131 + int(label[0])) % 9973);
              st.s.first_type = type, st.s.type_prefix_hash = fam, st.s.clock_domain = uint64_t(host) + 1;
            }
            const double off = size_t(host) < host_offset_us.size() ? host_offset_us[size_t(host)] * 1e3 : 0;
            const double noise = 1000 * (cases::noise(uint64_t(r), spec * 100000 + uint64_t(it * 1000 + k), inst) + 1);
            st.ends.push_back(int64_t(last + 150'000 + noise + off));
            st.s.ops++;
          }
        }
      }
    }
  }
  std::vector<StreamSummary> out;
  for (auto& [key, st] : streams) {
    std::sort(st.ends.begin(), st.ends.end());
    st.ends.resize(std::min(st.ends.size(), StreamSummary::kFingerprint));
    st.s.first_ends = st.ends;
    st.s.ops_per_iteration = st.s.ops / uint32_t(iterations);
    out.push_back(st.s);
  }
  return out;
}

class InferCase : public testing::TestWithParam<std::string> {};

TEST_P(InferCase, CommunicatorsAsExpected) {
  simdjson::dom::parser parser;
  element doc;
  ASSERT_EQ(parser.load(GetParam()).get(doc), simdjson::SUCCESS) << GetParam();
  SCOPED_TRACE(cases::str_or(doc, "about", GetParam()));
  std::optional<topology::ParallelLayout> given;
  if (cases::has(doc, "layout")) given = topology::ParallelLayout::parse(cases::str_or(doc, "layout", ""));
  const auto inf = infer_communicators(build_streams(doc), given);

  element expect = doc["expect"];
  // Communicators: members and kind; names where the case states them.
  std::set<std::tuple<std::vector<int>, bool, std::string>> want, got;
  std::set<std::vector<int>> named;
  for (element c : expect["communicators"].get_array()) {
    const auto members = cases::ints(c["members"]);
    const std::string name = cases::str_or(c, "name", "");
    if (!name.empty()) named.insert(members);
    want.insert({members, bool(c["p2p"]), name});
  }
  for (const auto& c : inf.comms) {
    std::vector<int> members;
    for (const auto& m : c.members) members.push_back(m.rank);
    got.insert({members, c.p2p, named.count(members) ? c.name : ""});
  }
  EXPECT_EQ(got, want);
  const std::string layout = cases::str_or(expect, "layout", "");
  EXPECT_EQ(inf.layout.layout ? inf.layout.layout->to_string() : "", layout);
  EXPECT_EQ(inf.layout.source, cases::str_or(expect, "layout_source", layout.empty() ? "" : "inferred"));
}

INSTANTIATE_TEST_SUITE_P(Cases, InferCase, testing::ValuesIn(cases::files_in("infer")),
                         [](const auto& info) { return cases::test_name(info.param); });

}  // namespace
