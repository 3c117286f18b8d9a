// Run directory discovery and rank assignment.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ranks/discovery.hpp"

namespace fs = std::filesystem;
using namespace ranks;

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
