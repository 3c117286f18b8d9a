// Run directory discovery and rank assignment.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "ranks/discovery.hpp"
#include "ranks/rank_assignment.hpp"

namespace fs = std::filesystem;
using namespace ranks;
using common::printable;
using common::UsageError;
using common::utf8_length;

namespace {
struct Dir {
  fs::path path;
  Dir() {
    path = fs::temp_directory_path() / ("ss-disc-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string touch(const std::string& name) {
    auto p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
    return p.string();
  }
};
}  // namespace

TEST(Discovery, RankFromFileNames) {
  Dir d;
  d.touch("rank_12.sqlite");
  d.touch("job.rank3.sqlite");
  d.touch("RANK-7.sqlite");
  d.touch("report.5.sqlite");
  d.touch("sub/rank_0.sqlite");
  d.touch(".hidden/rank_99.sqlite");
  d.touch("notes.txt");
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 5u);
  std::map<std::string, int> got;
  for (auto& f : disc.files) got[fs::path(f.path).filename()] = f.rank_from_name.value_or(-1);
  EXPECT_EQ(got["rank_12.sqlite"], 12);
  EXPECT_EQ(got["job.rank3.sqlite"], 3);
  EXPECT_EQ(got["RANK-7.sqlite"], 7);
  EXPECT_EQ(got["report.5.sqlite"], 5);
  EXPECT_EQ(got["rank_0.sqlite"], 0);
}

TEST(Discovery, CustomPatternAndErrors) {
  Dir d;
  d.touch("gpu07_profile.sqlite");
  auto disc = discover({d.path.string()}, {R"(gpu(\d+)_)", ""});
  ASSERT_EQ(disc.files.size(), 1u);
  EXPECT_EQ(disc.files[0].rank_from_name.value_or(-1), 7);
  EXPECT_THROW(discover({d.path.string()}, {"(unclosed", ""}), UsageError);
  Dir empty;
  EXPECT_THROW(discover({empty.path.string()}, {}), UsageError);
  EXPECT_THROW(discover({(empty.path / "nope").string()}, {}), UsageError);
}

TEST(Assign, TorchrunFilesByNodeAndDevice) {
  Dir d;
  d.touch("node-01.sqlite");
  d.touch("node-00.sqlite");
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 2u);  // sorted: node-00 then node-01
  std::vector<FoundProcess> found;
  for (size_t f = 0; f < 2; ++f)
    for (int i = 0; i < 4; ++i) found.push_back({f, 100 + i, i, i, 4});
  auto a = assign_ranks(disc, found);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a.rank[size_t(i)], i);
    EXPECT_EQ(a.rank[size_t(4 + i)], 4 + i);
  }
}

// Hosts named by address: ip-10-0-1-1 and ip-10-0-2-1 both end in 1, so the trailing numbers are
// no node indices (taken as such, the second host's ranks collided with the first's and half the
// job was left out): hosts in the names' order, and a warning that says so.
TEST(Assign, HostNamesSharingTheirLastNumberAreOrderedByName) {
  Dir d;
  for (const char* n : {"report-ip-10-0-2-2.sqlite", "report-ip-10-0-1-1.sqlite", "report-ip-10-0-2-1.sqlite", "report-ip-10-0-1-2.sqlite"})
    d.touch(n);
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 4u);
  std::vector<FoundProcess> found;
  for (size_t f = 0; f < 4; ++f)
    for (int i = 0; i < 2; ++i) found.push_back({f, 100 + i, i, i, 2});
  auto a = assign_ranks(disc, found);
  std::map<std::string, std::vector<int>> of_host;
  for (size_t i = 0; i < found.size(); ++i) of_host[fs::path(disc.files[found[i].file].path).filename().string()].push_back(a.rank[i]);
  EXPECT_EQ(of_host["report-ip-10-0-1-1.sqlite"], (std::vector<int>{0, 1}));
  EXPECT_EQ(of_host["report-ip-10-0-1-2.sqlite"], (std::vector<int>{2, 3}));
  EXPECT_EQ(of_host["report-ip-10-0-2-1.sqlite"], (std::vector<int>{4, 5}));
  EXPECT_EQ(of_host["report-ip-10-0-2-2.sqlite"], (std::vector<int>{6, 7}));
  ASSERT_FALSE(a.warnings.empty());
  EXPECT_NE(a.warnings.front().find("share their numbers"), std::string::npos);
}

// nsys's default names count sessions (report1, report2 ...), unrelated to the rank: two hosts'
// files, each of one process whose profile names no rank. Their numbers are no hosts either (two
// files on one host): ranks by host, then by the GPU's index on the host that
// CUDA_VISIBLE_DEVICES gives (every process calls its GPU device 0).
TEST(Assign, NsysCounterNamesOnSharedHostsAreNumberedByHostAndGpu) {
  Dir d;
  for (int k = 1; k <= 4; ++k) d.touch("report" + std::to_string(k) + ".sqlite");
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 4u);  // report1 .. report4
  // report1: host b GPU 1; report2: host a GPU 1; report3: host b GPU 0; report4: host a GPU 0.
  const std::pair<const char*, int> where[] = {{"gpu-b", 1}, {"gpu-a", 1}, {"gpu-b", 0}, {"gpu-a", 0}};
  std::vector<FoundProcess> found;
  for (size_t f = 0; f < 4; ++f) {
    FoundProcess p{f, int64_t(900 - f), 0, 0, 1};
    p.host = where[f].first, p.host_gpu = where[f].second;
    found.push_back(p);
  }
  auto a = assign_ranks(disc, found);
  EXPECT_EQ(a.rank, (std::vector<int>{3, 1, 2, 0}));
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings.front().find("by GPU on each host"), std::string::npos);
  // One file per host (a per-host capture each): the numbers stay host numbers.
  for (size_t f = 0; f < 4; ++f) found[f].host = "gpu-" + std::to_string(f);
  EXPECT_EQ(assign_ranks(disc, found).rank, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Assign, DuplicateRankGoesToFirstFile) {
  Dir d;
  d.touch("a/rank_3.sqlite");
  d.touch("b/rank_3.sqlite");
  auto disc = discover({d.path.string()}, {});
  std::vector<FoundProcess> found = {{0, 1, 0, 0, 1}, {1, 2, 0, 0, 1}};
  auto a = assign_ranks(disc, found);
  EXPECT_EQ(a.rank[0], 3);
  EXPECT_EQ(a.rank[1], -1);
  EXPECT_NE(a.errors[1].find("rank 3 is already claimed by"), std::string::npos);
  EXPECT_NE(a.errors[1].find("a/rank_3.sqlite"), std::string::npos);
}

TEST(Assign, RankMapOverrides) {
  Dir d;
  d.touch("capture.sqlite");
  d.touch("rank_0.sqlite");
  {
    std::ofstream m(d.path / "map.csv");
    m << "file,key,rank\ncapture.sqlite,pid=200,5\ncapture.sqlite,device=0,4\nrank_0.sqlite,,9\n";
  }
  auto disc = discover({d.path.string()}, {"", (d.path / "map.csv").string()});
  std::vector<FoundProcess> found = {{0, 100, 0, 0, 2}, {0, 200, 1, 1, 2}, {1, 7, 0, 0, 1}};
  auto a = assign_ranks(disc, found);
  EXPECT_EQ(a.rank[0], 4);
  EXPECT_EQ(a.rank[1], 5);
  EXPECT_EQ(a.rank[2], 9);
  {
    std::ofstream m(d.path / "bad.csv");
    m << "capture.sqlite,pid=x,1\n";
  }
  EXPECT_THROW(discover({d.path.string()}, {"", (d.path / "bad.csv").string()}), UsageError);
}

TEST(Discovery, PrintableEscapesControlCharacters) {
  EXPECT_EQ(printable("run/r\u00e9sum\u00e9.sqlite"), "run/r\u00e9sum\u00e9.sqlite");  // UTF-8 kept
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable(std::string("x\x01y\x7fz\x1b[31m", 10)), "x\\x01y\\x7fz\\x1b[31m");
  EXPECT_EQ(printable("nel\xc2\x85."), "nel\\u0085.");  // C1 control (NEL) as UTF-8
  EXPECT_EQ(printable(printable("a\nb")), printable("a\nb"));  // idempotent
  // Bytes that are not UTF-8 (an SQLite error quoting a damaged schema: fuzz case
  // summary_invalid_utf8), escaped so messages and the summary JSON stay UTF-8.
  EXPECT_EQ(printable("near \"TAB\xcc" "E\""), "near \"TAB\\xccE\"");
  EXPECT_EQ(printable("\xe9t\xe9"), "\\xe9t\\xe9");         // Latin-1, not UTF-8
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(printable("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");  // U+1F600 kept
  EXPECT_EQ(utf8_length("\xc3\xa9", 0), 2u);
  EXPECT_EQ(utf8_length("\xc0\xaf", 0), 0u);  // overlong
}

TEST(Discovery, ControlCharactersInPathsDoNotBreakTheErrorLine) {
  Dir d;
  try {
    discover({(d.path / "no\nsuch").string()}, {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("no\\nsuch: no such file or directory"), std::string::npos) << what;
  }
  d.touch("0\nc/rank_3.sqlite");  // sorts first: the claimant named in the other's error
  d.touch("a/rank_3.sqlite");
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 2u);
  auto a = assign_ranks(disc, {{0, 1, 0, 0, 1}, {1, 2, 0, 0, 1}});
  EXPECT_EQ(a.errors[1].find('\n'), std::string::npos) << a.errors[1];
  EXPECT_NE(a.errors[1].find("0\\nc/rank_3.sqlite"), std::string::npos) << a.errors[1];
}

TEST(Assign, FileWithoutRankNumberAmongRankFilesIsRejected) {
  Dir d;
  d.touch("rank_0.sqlite");
  d.touch("rank_1.sqlite");
  d.touch("r\u00e9sum\u00e9.sqlite");
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 3u);  // sorted: rank_0, rank_1, résumé
  auto a = assign_ranks(disc, {{0, 10, 0, 0, 1}, {1, 11, 0, 0, 1}, {2, 12, 0, 0, 1}});
  EXPECT_EQ(a.rank[0], 0);
  EXPECT_EQ(a.rank[1], 1);
  EXPECT_EQ(a.rank[2], -1);
  EXPECT_EQ(a.claimed[2], -1);
  EXPECT_EQ(a.errors[2], "no rank number in the file name (use --rank-pattern or --rank-map)");
  // Several processes in such a file: rejected too, not given colliding ranks by position.
  a = assign_ranks(disc, {{0, 10, 0, 0, 1}, {1, 11, 0, 0, 1}, {2, 12, 0, 0, 2}, {2, 13, 1, 1, 2}});
  EXPECT_EQ(a.rank[2], -1);
  EXPECT_EQ(a.rank[3], -1);
  EXPECT_NE(a.errors[2].find("no rank or node number"), std::string::npos) << a.errors[2];
  // A rank map entry gives it a rank.
  {
    std::ofstream m(d.path / "map.csv");
    m << "r\u00e9sum\u00e9.sqlite,,5\n";
  }
  disc = discover({d.path.string()}, {"", (d.path / "map.csv").string()});
  a = assign_ranks(disc, {{0, 10, 0, 0, 1}, {1, 11, 0, 0, 1}, {2, 12, 0, 0, 1}});
  EXPECT_EQ(a.rank[2], 5) << a.errors[2];
}

TEST(Assign, RunWithoutRankNumbersKeepsPositionalRanks) {
  // A lone capture, or one-process-per-node files named without ranks: ranks by position/node.
  Dir d;
  d.touch("capture.sqlite");
  auto disc = discover({d.path.string()}, {});
  auto a = assign_ranks(disc, {{0, 10, 0, 0, 1}});
  EXPECT_EQ(a.rank[0], 0) << a.errors[0];
  Dir n;
  n.touch("host-a.sqlite");
  n.touch("host-b.sqlite");
  disc = discover({n.path.string()}, {});
  a = assign_ranks(disc, {{0, 10, 0, 0, 2}, {0, 11, 1, 1, 2}, {1, 12, 0, 0, 2}, {1, 13, 1, 1, 2}});
  EXPECT_EQ(a.rank, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Assign, DuplicateRankKeepsTheClaimedRank) {
  Dir d;
  d.touch("a/rank_3.sqlite");
  d.touch("b/rank_3.sqlite");
  auto disc = discover({d.path.string()}, {});
  auto a = assign_ranks(disc, {{0, 1, 0, 0, 1}, {1, 2, 0, 0, 1}});
  EXPECT_EQ(a.rank[1], -1);
  EXPECT_EQ(a.claimed[1], 3);  // reported as rank 3 in ranks_failed, not null
  EXPECT_EQ(a.claimed[0], 3);
}

TEST(Discovery, NonRegularEntriesAreSkippedWithAReason) {
  Dir d;
  d.touch("rank_0.sqlite");
  fs::create_directories(d.path / "rank_3.sqlite");
  auto disc = discover({d.path.string()}, {});
  ASSERT_EQ(disc.files.size(), 1u);
  ASSERT_EQ(disc.skipped.size(), 1u);
  EXPECT_EQ(fs::path(disc.skipped[0].path).filename(), "rank_3.sqlite");
  EXPECT_EQ(disc.skipped[0].reason, "not a regular file (a directory)");
  EXPECT_EQ(disc.skipped[0].rank_from_name.value_or(-1), 3);
  // Only such entries: no profile, and the message says what was skipped.
  Dir only;
  fs::create_directories(only.path / "rank_1.sqlite");
  try {
    discover({only.path.string()}, {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank_1.sqlite: not a regular file"), std::string::npos) << e.what();
  }
}

TEST(Discovery, SecondNamesOfOneFileAreSkipped) {
  Dir d;
  d.touch("rank_0.sqlite");
  d.touch("rank_1.sqlite");
  fs::create_symlink("rank_0.sqlite", d.path / "rank_9.sqlite");
  fs::create_hard_link(d.path / "rank_1.sqlite", d.path / "rank_8.sqlite");
  fs::create_symlink("/nonexistent/x.sqlite", d.path / "rank_5.sqlite");  // kept: reading says why
  // The same file also given by another spelling of its path: silently once.
  auto disc = discover({d.path.string(), (d.path / "." / "rank_0.sqlite").string()}, {});
  std::vector<std::string> files, skipped;
  for (auto& f : disc.files) files.push_back(fs::path(f.path).filename());
  for (auto& s : disc.skipped) skipped.push_back(fs::path(s.path).filename().string() + ": " + s.reason);
  EXPECT_EQ(files, (std::vector<std::string>{"rank_0.sqlite", "rank_1.sqlite", "rank_5.sqlite"}));
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].rfind("rank_8.sqlite: same file as ", 0), 0u) << skipped[0];
  EXPECT_NE(skipped[0].find("rank_1.sqlite"), std::string::npos) << skipped[0];
  EXPECT_EQ(skipped[1].rfind("rank_9.sqlite: same file as ", 0), 0u) << skipped[1];
  EXPECT_NE(skipped[1].find("rank_0.sqlite"), std::string::npos) << skipped[1];
  EXPECT_EQ(disc.skipped[1].rank_from_name.value_or(-1), 9);
}

TEST(Discovery, RankPatternMatchingNoFileIsAnError) {
  Dir d;
  d.touch("rank_0.sqlite");
  try {
    discover({d.path.string()}, {R"(gpu(\d+))", ""});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--rank-pattern 'gpu(\\d+)'"), std::string::npos) << e.what();
  }
  // A pattern that matches some files is fine (the others follow the usual rules).
  d.touch("gpu3.sqlite");
  EXPECT_NO_THROW(discover({d.path.string()}, {R"(gpu(\d+))", ""}));
}

// Repro D8: a file named for one rank that holds several rank processes (a torn or corrupted
// export shows phantom ones) is reported, never numbered N, N+1 into the next file's rank.
TEST(Assign, RankNamedFileWithSeveralProcessesIsReportedNotRenumbered) {
  Dir d;
  d.touch("rank_0.sqlite");
  d.touch("rank_1.sqlite");
  auto disc = discover({d.path.string()}, {});
  const std::vector<FoundProcess> found = {{0, 0, 0, 0, 2}, {0, 1000, 0, 1, 2}, {1, 1001, 0, 0, 1}};
  auto a = assign_ranks(disc, found);
  EXPECT_EQ(a.rank, (std::vector<int>{-1, -1, 1}));
  for (size_t i : {0u, 1u}) {
    EXPECT_EQ(a.errors[i], "named for rank 0 but holds 2 rank processes (pids 0, 1000); use --rank-map");
    EXPECT_EQ(a.claimed[i], 0);  // listed as rank 0's failure
  }
  EXPECT_EQ(a.errors[2], "");
  // The rank map decides which process is the rank; the unmapped one stays an error.
  {
    std::ofstream m(d.path / "map.csv");
    m << "rank_0.sqlite,pid=1000,0\n";
  }
  disc = discover({d.path.string()}, {"", (d.path / "map.csv").string()});
  a = assign_ranks(disc, found);
  EXPECT_EQ(a.rank, (std::vector<int>{-1, 0, 1}));
  EXPECT_NE(a.errors[0].find("holds 2 rank processes"), std::string::npos) << a.errors[0];
  // Many phantom pids: the line stays short.
  std::vector<FoundProcess> many;
  for (int i = 0; i < 300; ++i) many.push_back({0, 5000 + i, 0, i, 300});
  a = assign_ranks(disc, many);
  EXPECT_NE(a.errors[0].find("(pids 5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007 and 292 more)"), std::string::npos)
      << a.errors[0];
}
