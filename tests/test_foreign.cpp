// Issue 37: the runs in ../shared/data/foreign (written by a simulator this project does not
// ship, with its own conventions) give what their README expects. Each tarball is unpacked into a
// temporary folder; an absent folder skips with a message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <simdjson.h>
#include <string>

#include "shell.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kScan = SS_SCAN_BIN, kShared = SS_SHARED_DIR;

struct ForeignRun {
  fs::path dir;
  std::string report;
  int status = -1;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
};

// Unpacks data/foreign/NAME.tar.gz and scans it; false (skip) when the tarball is absent.
bool scan_foreign(const std::string& name, ForeignRun& r) {
  const fs::path tar = fs::path(kShared) / "data/foreign" / (name + ".tar.gz");
  if (!fs::exists(tar)) return false;
  const fs::path root = fs::temp_directory_path() / ("ss-foreign-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(root);
  fs::create_directories(root);
  int st = -1;
  testsh::sh("tar xzf " + tar.string() + " -C " + root.string(), &st);
  EXPECT_EQ(st, 0);
  r.dir = root / name;
  const fs::path json = root / "summary.json";
  r.report = testsh::sh(kScan + " " + r.dir.string() + " --summary " + json.string() + " -o " + (root / "s.h5").string() + " 2>&1",
                &r.status);
  EXPECT_EQ(r.status, 0) << r.report;
  if (r.status == 0) r.summary = r.parser.load(json.string());
  return r.status == 0;
}

#define SCAN_FOREIGN(run, name)                                                                          \
  ForeignRun run;                                                                                             \
  if (!fs::exists(fs::path(kShared) / "data/foreign" / (std::string(name) + ".tar.gz")))                 \
    GTEST_SKIP() << "no " << kShared << "/data/foreign/" << name << ".tar.gz (set SS_SHARED_DIR)";        \
  ASSERT_TRUE(scan_foreign(name, run))

std::set<int64_t> ints(simdjson::dom::element e) {
  std::set<int64_t> out;
  if (e.is_array())
    for (auto v : e.get_array()) out.insert(int64_t(v));
  return out;
}

}  // namespace

// Rank 6 dies 2 ms into iteration 7; the other 15 block in a collective it never joins. The
// blocked kernels have no row (CUPTI writes one on completion); their launch follows NCCL's range.
TEST(Foreign, CrashBlockedNamesTheDeadRankAndItsIteration) {
  SCAN_FOREIGN(run, "crash_blocked");
  EXPECT_NE(run.report.find("verdict: desync of rank 6: it crashed"), std::string::npos) << run.report;
  std::set<int64_t> missing, crashed, blocked, iterations;
  for (auto d : run.summary["desync"].get_array()) {
    for (auto r : ints(d["missing_ranks"])) missing.insert(r);
    for (auto r : ints(d["crashed_ranks"])) crashed.insert(r);
    for (auto r : ints(d["blocked_ranks"])) blocked.insert(r);
    iterations.insert(int64_t(d["iteration"]));
  }
  EXPECT_EQ(missing, std::set<int64_t>{6}) << run.report;
  EXPECT_EQ(crashed, std::set<int64_t>{6}) << run.report;
  EXPECT_EQ(iterations, std::set<int64_t>{7}) << run.report;
  // Every other rank is left waiting: in the op itself or behind a rank that waits in one.
  EXPECT_NE(run.report.find("15 ranks left waiting"), std::string::npos) << run.report;
  EXPECT_EQ(run.summary["stragglers"].get_array().size(), 0u) << run.report;
}

// Interleaved 1F1B (v=2), one kernel per send and per receive, the ring from the last stage to the
// first; no fault, no step markers.
TEST(Foreign, InterleavedRingIsOneInterleavedPipeline) {
  SCAN_FOREIGN(run, "interleaved_ring");
  EXPECT_EQ(run.report.find("share no collective"), std::string::npos) << run.report;
  auto lay = run.summary["layout"];
  ASSERT_TRUE(lay.is_object()) << run.report;
  EXPECT_EQ(int64_t(lay["tp"]), 1);
  EXPECT_EQ(int64_t(lay["pp"]), 4);
  EXPECT_EQ(int64_t(lay["dp"]), 2);
  auto p = run.summary["pipeline"];
  ASSERT_TRUE(p.is_object()) << run.report;
  EXPECT_EQ(std::string(std::string_view(p["schedule"])), "interleaved_1f1b") << run.report;
  EXPECT_EQ(int64_t(p["virtual_stages"]), 2) << run.report;
  EXPECT_NEAR(double(p["bubble_theoretical"]), 0.1875, 1e-3) << run.report;
  EXPECT_NEAR(double(p["bubble_measured"]), 0.26, 0.03) << run.report;
  EXPECT_EQ(run.summary["stragglers"].get_array().size(), 0u) << run.report;
  EXPECT_EQ(run.summary["desync"].get_array().size(), 0u) << run.report;
  EXPECT_FALSE(std::regex_search(run.report, std::regex(R"((^|[ (])-[0-9])"))) << "a negative number in the report:\n" << run.report;
}
