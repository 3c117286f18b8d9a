// End to end: straggler-sim makes runs, straggler-scan analyses them (alone and under mpirun).
// Checks exit codes of the contract, one-line errors, no partial output, no secrets copied, and
// identical HDF5 content whatever the number of processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "h5_read.hpp"
#include "shell.hpp"

namespace fs = std::filesystem;

namespace {

using testsh::sh;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;

class Cli : public ::testing::Test {
 protected:
  static fs::path root;
  static void SetUpTestSuite() {
    root = fs::temp_directory_path() / ("ss-cli-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "out");
    auto r = sh(kSim + " " + (root / "run").string() + " --layout 2x2x2 --hosts 2 --iterations 5 --seed 11");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static void TearDownTestSuite() { fs::remove_all(root); }
  std::string run() const { return (root / "run").string(); }
  std::string out(const std::string& name) const { return (root / "out" / name).string(); }
};
fs::path Cli::root;

}  // namespace

TEST_F(Cli, AnalysesAGeneratedRunAndWritesOutputs) {
  auto r = sh(kScan + " " + run() + " -o " + out("a.h5") + " --summary " + out("a.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("8 ranks from 8 files on 2 hosts"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("most idle"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out("a.h5")));
  const std::string json = slurp(out("a.json"));
  for (const char* key : {"\"tool\"", "\"version\"", "\"ranks\": 8", "\"ranks_failed\": []", "\"iterations\"",
                          "\"step_ms\"", "\"stragglers\"", "\"slow_links\"", "\"desync\"", "\"clock\"", "\"pipeline\"",
                          "\"scaling\"", "\"change_points\"", "\"what_if\""})
    EXPECT_NE(json.find(key), std::string::npos) << key << " missing in " << json;
  // The generator plants a fake API key in DeviceEnvironment: it must never reach any output.
  for (const auto& f : {out("a.h5"), out("a.json")}) {
    const std::string bytes = slurp(f);
    EXPECT_EQ(bytes.find("sim-secret"), std::string::npos) << f;
    EXPECT_EQ(bytes.find("WANDB_API_KEY"), std::string::npos) << f;
  }
  EXPECT_EQ(r.out.find("sim-secret"), std::string::npos);
  // No temporary files left beside the outputs.
  for (const auto& e : fs::directory_iterator(root / "out"))
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
}

// Three processes too: rows of a table go to the process owning their part of the dataset
// (File::to_row_owners), and parts of rows not divisible by the processes must still meet.
TEST_F(Cli, SameHdf5ContentForOneTwoThreeAndFourProcesses) {
  auto r1 = sh("mpirun -n 1 " + kScan + " " + run() + " -q -o " + out("n1.h5"));
  auto r2 = sh("mpirun -n 2 " + kScan + " " + run() + " -q -o " + out("n2.h5"));
  auto r3 = sh("mpirun -n 3 --oversubscribe " + kScan + " " + run() + " -q -o " + out("n3.h5"));
  auto r4 = sh("mpirun -n 4 --oversubscribe " + kScan + " " + run() + " -q -o " + out("n4.h5"));
  auto r0 = sh(kScan + " " + run() + " -q -o " + out("n0.h5"));  // singleton, no mpirun
  ASSERT_EQ(r1.status, 0) << r1.out;
  ASSERT_EQ(r2.status, 0) << r2.out;
  ASSERT_EQ(r3.status, 0) << r3.out;
  ASSERT_EQ(r4.status, 0) << r4.out;
  ASSERT_EQ(r0.status, 0) << r0.out;
  // The command line attribute differs by the output name only; compare datasets and other attributes.
  for (const char* other : {"n2.h5", "n3.h5", "n4.h5", "n0.h5"}) {
    auto d = sh("h5diff -c " + out("n1.h5") + " " + out(other) + " /ranks /ranks");
    EXPECT_EQ(d.status, 0) << other << ": " << d.out;
    for (const char* g : {"/histograms", "/kernels", "/iterations", "/inputs", "/failures"}) {
      auto dg = sh("h5diff " + out("n1.h5") + " " + out(other) + " " + g + " " + g);
      EXPECT_EQ(dg.status, 0) << other << " " << g << ": " << dg.out;
    }
  }
}

TEST_F(Cli, BadProfilesAreReportedAndTheRestAnalysed) {
  const fs::path dir = root / "messy";
  fs::remove_all(dir);
  fs::create_directories(dir / "dup");
  for (int r = 0; r < 8; ++r) fs::copy_file(fs::path(run()) / ("rank_" + std::to_string(r) + ".sqlite"),
                                            dir / ("rank_" + std::to_string(r) + ".sqlite"));
  std::ofstream(dir / "rank_100.sqlite") << "not a database at all\n";
  {
    std::string b = slurp(dir / "rank_1.sqlite");
    std::ofstream(dir / "rank_101.sqlite", std::ios::binary) << b.substr(0, b.size() / 3);
  }
  fs::copy_file(dir / "rank_2.sqlite", dir / "dup" / "rank_2.sqlite");
  fs::create_symlink("/nonexistent/x.sqlite", dir / "rank_102.sqlite");
  for (const char* launcher : {"", "mpirun -n 2 "}) {
    auto r = sh(std::string(launcher) + kScan + " " + dir.string() + " -o " + out("messy.h5") + " --summary " +
                out("messy.json"));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("8 ranks from 8 files"), std::string::npos) << r.out;
    for (const char* f : {"rank_100.sqlite: not a SQLite file", "rank_101.sqlite", "rank_102.sqlite: cannot open",
                          "rank 2 is already claimed by"})
      EXPECT_NE(r.out.find(f), std::string::npos) << f << " not in " << r.out;
    const std::string json = slurp(out("messy.json"));
    EXPECT_NE(json.find("\"ranks\": 8"), std::string::npos) << json;
    EXPECT_NE(json.find("rank_100.sqlite"), std::string::npos) << json;
    // The rejected duplicate's rank is known: not null.
    EXPECT_NE(json.find("{\"rank\": 2, \"file\": \"" + (dir / "rank_2.sqlite").string() + "\""), std::string::npos)
        << json;
  }
  auto strict = sh(kScan + " " + dir.string() + " --strict -o " + out("strict.h5"));
  EXPECT_EQ(strict.status, 2) << strict.out;
  EXPECT_FALSE(fs::exists(out("strict.h5")));
}

TEST_F(Cli, UnusableArgumentsExitTwoAndWriteNothing) {
  const fs::path empty = root / "empty";
  fs::create_directories(empty);
  auto r = sh(kScan + " " + empty.string() + " -o " + out("e.h5"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no profile"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out("e.h5")));

  r = sh(kScan + " " + run() + " -o " + (root / "no-such-dir" / "x.h5").string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("directory does not exist"), std::string::npos) << r.out;
  // -o under a regular file: named for what it is.
  std::ofstream(root / "plain") << "x";
  r = sh(kScan + " " + run() + " -o " + (root / "plain" / "x.h5").string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("x.h5: output directory " + (root / "plain").string() + " is not a directory"),
            std::string::npos) << r.out;

  r = sh(kScan + " " + run() + " -o " + run() + "/inside.h5");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("inside the input directory"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(fs::path(run()) / "inside.h5"));

  const fs::path bad = root / "allbad";
  fs::create_directories(bad);
  std::ofstream(bad / "rank_0.sqlite") << "junk";
  r = sh("mpirun -n 2 " + kScan + " " + bad.string() + " -o " + out("bad.h5"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: not a SQLite file"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out("bad.h5")));

  r = sh(kScan + " " + run() + " --no-such-flag");
  EXPECT_EQ(r.status, 2) << r.out;
}

// Names the reviewer found mishandled: each is reported on one line, naming the file and the problem.
TEST_F(Cli, OddFileNamesAreReportedOneLineEach) {
  const fs::path dir = root / "odd";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r = 0; r < 7; ++r) fs::copy_file(fs::path(run()) / ("rank_" + std::to_string(r) + ".sqlite"),
                                            dir / ("rank_" + std::to_string(r) + ".sqlite"));
  fs::copy_file(fs::path(run()) / "rank_7.sqlite", dir / "rank_40.sqlite");    // a gap: 7-39 missing
  fs::copy_file(fs::path(run()) / "rank_1.sqlite", dir / "r\u00e9sum\u00e9.sqlite");  // no rank number
  fs::create_directories(dir / "rank_20.sqlite");                              // not a regular file
  fs::create_symlink("rank_0.sqlite", dir / "rank_9.sqlite");                  // a second name
  std::ofstream(dir / "rank_50\nbad.sqlite") << "junk";                         // a newline in the name
  for (const char* launcher : {"", "mpirun -n 2 "}) {
    auto r = sh(std::string(launcher) + kScan + " " + dir.string() + " -o " + out("odd.h5") + " --summary " +
                out("odd.json"));
    ASSERT_EQ(r.status, 0) << r.out;
    for (const std::string& line : std::vector<std::string>
         {"r\u00e9sum\u00e9.sqlite: no rank number in the file name (use --rank-pattern or --rank-map)\n",
          "rank_20.sqlite: not a regular file (a directory)\n",
          "rank_9.sqlite: same file as " + (dir / "rank_0.sqlite").string() + " (a second name of it)\n",
          "rank_50\\nbad.sqlite: not a SQLite file", "ranks 0-6, 40: 33 missing (7-39)\n",
          "8 ranks from 8 files on 2 hosts"})
      EXPECT_NE(r.out.find(line), std::string::npos) << line << " not in " << r.out;
    EXPECT_EQ(r.out.find("rank_50\nbad"), std::string::npos) << r.out;  // never the raw newline
    EXPECT_EQ(r.out.find("already claimed"), std::string::npos) << r.out;
    const std::string json = slurp(out("odd.json"));
    EXPECT_NE(json.find("{\"rank\": 9, \"file\": \"" + (dir / "rank_9.sqlite").string() + "\""), std::string::npos)
        << json;
    EXPECT_NE(json.find("{\"rank\": 20, \"file\": \"" + (dir / "rank_20.sqlite").string() + "\""), std::string::npos)
        << json;
  }
}

TEST_F(Cli, LayoutMustMatchTheRanksFound) {
  // Smaller than the 8 ranks found: a usage error, one line, nothing written.
  for (const char* layout : {"2x2x1", "1x1x7"}) {
    auto r = sh(kScan + " " + run() + " --layout " + layout + " -o " + out("lay.h5"));
    EXPECT_EQ(r.status, 2) << layout << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("--layout ") + layout + " covers"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(fs::exists(out("lay.h5")));
  }
  // The highest rank's profile is unreadable: the layout is still right, the analysis runs.
  const fs::path dir = root / "lastbad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r = 0; r < 7; ++r) fs::copy_file(fs::path(run()) / ("rank_" + std::to_string(r) + ".sqlite"),
                                            dir / ("rank_" + std::to_string(r) + ".sqlite"));
  std::ofstream(dir / "rank_7.sqlite") << "junk";
  auto r = sh(kScan + " " + dir.string() + " --layout 2x2x2 -o " + out("lay.h5"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ranks 0-6: 1 missing (7 of --layout 2x2x2)"), std::string::npos) << r.out;
  // Simply absent (only some ranks profiled): analysed, the missing rank named.
  fs::remove(dir / "rank_7.sqlite");
  r = sh(kScan + " " + dir.string() + " --layout 2x2x2 -o " + out("lay2.h5"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 missing (7 of --layout 2x2x2)"), std::string::npos) << r.out;
}

TEST_F(Cli, BadCountsAndPatternsAreUsageErrors) {
  for (const char* arg : {"--top-kernels -5", "--top-kernels 0", "--rank-pattern 'gpu(\\d+)'"}) {
    auto r = sh(kScan + " " + run() + " " + arg + " -o " + out("bad-arg.h5"));
    EXPECT_EQ(r.status, 2) << arg << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(fs::exists(out("bad-arg.h5")));
  }
  auto r = sh(kScan + " " + run() + " --rank-pattern 'gpu(\\d+)' -o " + out("bad-arg.h5"));
  EXPECT_NE(r.out.find("--rank-pattern 'gpu(\\d+)'"), std::string::npos) << r.out;
}

TEST_F(Cli, VerdictLineSaysWhatWasFound) {
  const fs::path dir = root / "slow";
  auto g = sh(kSim + " " + dir.string() + " --layout 2x2x2 --hosts 1 --iterations 6 --seed 3 --fault slow_gpu:3:2:1.5");
  ASSERT_EQ(g.status, 0) << g.out;
  auto r = sh(kScan + " " + dir.string() + " --layout 2x2x2 -o " + out("slow.h5"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("8 ranks from 8 files on 1 host;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nverdict: 1 straggler ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("verdict: ("), std::string::npos) << r.out;
  for (const char* bad : {" 1 hosts", " 1 ranks", " 1 communicators", " 1 files", "(s)"})
    EXPECT_EQ(r.out.find(bad), std::string::npos) << bad << " in " << r.out;
  const fs::path hang = root / "hang";
  g = sh(kSim + " " + hang.string() + " --layout 2x2x2 --hosts 2 --iterations 8 --seed 3 --fault hang:5:4");
  ASSERT_EQ(g.status, 0) << g.out;
  r = sh(kScan + " " + hang.string() + " --layout 2x2x2 -o " + out("hang.h5"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\nverdict: desync of rank 5: it stopped while its capture went on (a hang"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rank(s)"), std::string::npos) << r.out;
  auto healthy = sh(kScan + " " + run() + " -o " + out("healthy.h5"));
  EXPECT_NE(healthy.out.find("\nverdict: healthy"), std::string::npos) << healthy.out;
}

TEST_F(Cli, TorchrunStyleFilesHoldingSeveralRanks) {
  const fs::path dir = root / "perhost";
  auto g = sh(kSim + " " + dir.string() + " --layout 2x1x2 --hosts 2 --iterations 4 --seed 5 --per-host-files");
  ASSERT_EQ(g.status, 0) << g.out;
  auto r = sh(kScan + " " + dir.string() + " -o " + out("ph.h5") + " --summary " + out("ph.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("4 ranks from 2 files on 2 hosts"), std::string::npos) << r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(out("ph.h5"), "/ranks/rank"), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(h5read::numbers<int64_t>(out("ph.h5"), "/ranks/device"), (std::vector<int64_t>{0, 1, 0, 1}));
  const auto hosts = h5read::strings(out("ph.h5"), "/ranks/host");
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0], hosts[1]);  // two ranks per file, one file per host
  EXPECT_EQ(hosts[2], hosts[3]);
  EXPECT_NE(hosts[0], hosts[2]);
}

// docs/hdf5-layout.md stays the truth: every dataset and group the writer makes is named there.
TEST_F(Cli, EveryHdf5ObjectIsDocumented) {
  auto r = sh(kScan + " " + run() + " -q --layout 2x2x2 -o " + out("doc.h5"));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string doc = slurp(fs::path(SS_SOURCE_DIR) / "docs" / "hdf5-layout.md");
  ASSERT_FALSE(doc.empty());
  size_t objects = 0;
  for (const std::string& path : h5read::objects(out("doc.h5"))) {
    const std::string leaf = path.substr(path.rfind('/') + 1);
    ++objects;
    // Named in a code span, alone or after its group: `leaf` or `group/leaf`.
    bool named = false;
    for (size_t at = doc.find(leaf + "`"); at != std::string::npos && !named; at = doc.find(leaf + "`", at + 1))
      named = at > 0 && (doc[at - 1] == '`' || doc[at - 1] == '/');
    EXPECT_TRUE(named) << path << " is not in docs/hdf5-layout.md";
  }
  EXPECT_GT(objects, 80u);
}

// --hang-margin, the one spelling of the hang margin: a member missing an op is a desync only when
// its capture ran that long past the others' arrival (and a launch that never completed counts as
// stuck only when that old). The generated hang leaves the stuck ranks' captures running ~seconds
// on: a desync at the default (1 s), none when the margin is a day.
TEST_F(Cli, HangMarginIsOneOption) {
  const std::string hang = (root / "hang").string();
  auto g = sh(kSim + " " + hang + " --layout 2x2x2 --hosts 2 --iterations 6 --seed 9 --fault hang:6:3");
  ASSERT_EQ(g.status, 0) << g.out;
  auto a = sh(kScan + " " + hang + " -q -o " + out("hang_a.h5") + " --summary " + out("hang_a.json"));
  auto b = sh(kScan + " " + hang + " -q -o " + out("hang_b.h5") + " --summary " + out("hang_b.json") + " --hang-margin 86400");
  ASSERT_EQ(a.status, 0) << a.out;
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_EQ(slurp(out("hang_a.json")).find("\"desync\": []"), std::string::npos) << slurp(out("hang_a.json"));
  EXPECT_NE(slurp(out("hang_b.json")).find("\"desync\": []"), std::string::npos) << slurp(out("hang_b.json"));
  for (const char* bad : {"0", "-1", "nan", "100000"}) {
    auto r = sh(kScan + " " + hang + " -q -o " + out("hang_c.h5") + " --hang-margin " + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--hang-margin"), std::string::npos) << r.out;
  }
}

// The report a reader meets first (issue 23): on the demo's run, the verdict's first lines say
// who, what it costs, since when and why, a line each, before any evidence.
TEST_F(Cli, DemoReportOpensWithWhoCostSinceWhy) {
  const fs::path demo = root / "demo";
  auto g = sh(kSim + " " + demo.string() + " --layout 2x2x8 --hosts 4 --iterations 20 --seed 7 --clock-offset-ms 3 "
              "--fault slow_gpu:13:8:1.4");
  ASSERT_EQ(g.status, 0) << g.out;
  auto r = sh(kScan + " " + demo.string() + " -o " + out("demo.h5"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<std::string> v;
  for (std::string l; std::getline(lines, l);) v.push_back(l);
  ASSERT_GE(v.size(), 7u) << r.out;
  EXPECT_EQ(v[1].rfind("verdict: 1 straggler", 0), 0u) << r.out;
  EXPECT_EQ(v[2], "  STRAGGLER rank 13 (node-01)") << r.out;
  EXPECT_EQ(v[3].rfind("    costs the job: ", 0), 0u) << r.out;
  EXPECT_NE(v[3].find(" ms per step ("), std::string::npos) << r.out;
  EXPECT_NE(v[3].find("% of the step)"), std::string::npos) << r.out;
  EXPECT_EQ(v[4], "    since:         iteration 8") << r.out;
  EXPECT_EQ(v[5].rfind("    why:           slow_gpu: ", 0), 0u) << r.out;
  EXPECT_EQ(v[6], "    evidence:") << r.out;
}

// Captures of different runs in one folder (issue 23): the real before and after captures of one
// 2-GPU job, 80 minutes apart, are named in a warning (an error with --strict), not merged silently.
TEST_F(Cli, CapturesOfDifferentTimesAreNamed) {
  const fs::path real = fs::path(SS_SHARED_DIR) / "data" / "real";
  if (!fs::exists(real / "nsysai_mfu_2gpu_before.sqlite")) GTEST_SKIP() << "no " << real << " (the real captures)";
  const fs::path both = root / "before-after";
  fs::create_directories(both);
  for (const char* f : {"nsysai_mfu_2gpu_before.sqlite", "nsysai_mfu_2gpu_after.sqlite"})
    fs::create_symlink(real / f, both / f);
  auto r = sh(kScan + " " + both.string() + " -q -o " + out("ba.h5"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("warning: profiles captured at 2 different times"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nsysai_mfu_2gpu_before.sqlite (2 profiles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nsysai_mfu_2gpu_after.sqlite (2 profiles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("both hold a rank on host"), std::string::npos) << r.out;
  auto strict = sh(kScan + " " + both.string() + " -q --strict -o " + out("ba2.h5"));
  EXPECT_EQ(strict.status, 2) << strict.out;
  EXPECT_NE(strict.out.find("--strict: profiles captured at 2 different times"), std::string::npos) << strict.out;
  EXPECT_FALSE(fs::exists(out("ba2.h5")));
  // Each capture alone is one run: no warning.
  auto alone = sh(kScan + " " + (real / "nsysai_mfu_2gpu_before.sqlite").string() + " -q -o " + out("b.h5"));
  EXPECT_EQ(alone.out.find("warning: profiles captured"), std::string::npos) << alone.out;
}

// A reused generator folder: a 32-rank run written over a 64-rank one leaves ranks 32-63 stale.
// They share no collective with ranks 0-31 (one job's ranks are tied by its communicators): the
// report says so, naming a file of each group, and no slow link is printed without its hosts.
TEST_F(Cli, StaleFilesOfAnotherRunAreNamed) {
  const fs::path reused = root / "reused";
  ASSERT_EQ(sh(kSim + " " + reused.string() + " --layout 2x2x16 --hosts 8 --iterations 8 --seed 5").status, 0);
  ASSERT_EQ(sh(kSim + " " + reused.string() + " --layout 2x2x8 --hosts 4 --iterations 8 --seed 9").status, 0);
  auto r = sh(kScan + " " + reused.string() + " -o " + out("reused.h5"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("WARNING: these profiles are not one job: 2 groups of ranks share no collective"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks 0-31 (" + (reused / "rank_0.sqlite").string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks 32-63 (" + (reused / "rank_32.sqlite").string()), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SLOW LINK \n"), std::string::npos) << r.out;
  // One run alone: no such warning.
  auto one = sh(kScan + " " + run() + " -o " + out("one.h5"));
  EXPECT_EQ(one.out.find("not one job"), std::string::npos) << one.out;
}

// A report file (.nsys-rep) among the exports, or alone: listed as skipped with the command that
// exports it, never silently ignored (issue 23).
TEST_F(Cli, ReportFilesGetTheExportHint) {
  const fs::path dir = root / "with-rep";
  fs::create_directories(dir);
  fs::copy_file(fs::path(run()) / "rank_0.sqlite", dir / "rank_0.sqlite");
  { std::ofstream(dir / "rank_1.nsys-rep") << "not a sqlite file"; }
  auto r = sh(kScan + " " + dir.string() + " -o " + out("rep.h5"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rank_1.nsys-rep: a report, not its SQLite export: run `nsys export --type sqlite"), std::string::npos) << r.out;
  fs::remove(dir / "rank_0.sqlite");
  auto alone = sh(kScan + " " + dir.string() + " -o " + out("rep2.h5"));
  EXPECT_EQ(alone.status, 2) << alone.out;
  EXPECT_NE(alone.out.find("(skipped " + (dir / "rank_1.nsys-rep").string() + ": a report, not its SQLite export"), std::string::npos) << alone.out;
}
