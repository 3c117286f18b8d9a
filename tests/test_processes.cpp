// The transport end to end: alone, straggler-scan never starts MPI; under mpirun, any number of
// processes writes the same file; outputs appear whole or not at all (D5).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "h5_read.hpp"
#include "shell.hpp"

namespace fs = std::filesystem;

namespace {

using testsh::sh;
const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;

class Processes : public ::testing::Test {
 protected:
  static fs::path root;
  static void SetUpTestSuite() {
    root = fs::temp_directory_path() / ("ss-proc-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    // 16 ranks: TP2 x PP2 x DP4 on 4 hosts, one straggler.
    auto r = sh(kSim + " " + (root / "run").string() +
                " --layout 2x2x4 --hosts 4 --iterations 8 --seed 5 --fault slow_gpu:9:3:1.4");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static void TearDownTestSuite() { fs::remove_all(root); }
  std::string run() const { return (root / "run").string(); }
};
fs::path Processes::root;

// Open MPI's MPI_Init fails on an unknown point-to-point layer, so a run that starts MPI cannot
// succeed with this setting.
const std::string kMpiBroken = "env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK OMPI_MCA_pml=no-such-pml ";

}  // namespace

TEST_F(Processes, AloneNeverStartsMpi) {
  for (const char* args : {" --help", " --version", " --no-such-flag"}) {
    auto r = sh(kMpiBroken + kScan + args);
    EXPECT_EQ(r.status, std::string(args) == " --no-such-flag" ? 2 : 0) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("MPI_"), std::string::npos) << args << ": " << r.out;  // no MPI error banner
  }
  const fs::path out = root / "alone.h5";
  auto r = sh(kMpiBroken + kScan + " " + run() + " -q -o " + out.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::exists(out));
  // The canary works: the same setting under mpirun fails the run.
  auto m = sh("OMPI_MCA_pml=no-such-pml mpirun -n 1 " + kScan + " " + run() + " -q -o " + (root / "m.h5").string());
  EXPECT_NE(m.status, 0) << m.out;
}

// Every dataset and attribute equal (h5diff) but exchange_bytes: the command lines are identical
// because each run writes out.h5 in its own folder.
TEST_F(Processes, EightProcessesOnSixteenRanksWriteTheSameFile) {
  for (const char* d : {"n0", "n1", "n8"}) fs::create_directories(root / d);
  const std::string args = " " + kScan + " " + run() + " -q -o out.h5";
  auto in = [&](const char* d, const std::string& cmd) { return sh("sh -c 'cd " + (root / d).string() + " && " + cmd + "'"); };
  auto r0 = in("n0", args);
  auto r1 = in("n1", "mpirun -n 1" + args);
  auto r8 = in("n8", "mpirun -n 8 --oversubscribe" + args);
  ASSERT_EQ(r0.status, 0) << r0.out;
  ASSERT_EQ(r1.status, 0) << r1.out;
  ASSERT_EQ(r8.status, 0) << r8.out;
  // exchange_bytes measures the tool's run (bytes its processes sent each other), not the job: the
  // one attribute that may differ. Compared without it.
  for (const char* d : {"n0", "n1", "n8"}) {
    const std::string f = (root / d / "out.h5").string();
    EXPECT_GT(h5read::attribute<int64_t>(f, "/collectives/communicators", "exchange_bytes"), d == std::string("n8") ? 0 : -1);
    hid_t h = H5Fopen(f.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(h, 0) << f;
    EXPECT_GE(H5Adelete_by_name(h, "/collectives/communicators", "exchange_bytes", H5P_DEFAULT), 0) << f;
    H5Fclose(h);
  }
  for (const char* other : {"n1", "n8"}) {
    auto d = sh("h5diff " + (root / "n0" / "out.h5").string() + " " + (root / other / "out.h5").string());
    EXPECT_EQ(d.status, 0) << other << ": " << d.out;
  }
  // Not vacuous: the per-op tables hold the replay of every communicator.
  EXPECT_GT(h5read::shape((root / "n8" / "out.h5").string(), "/collectives/arrival_ns").at(0), 0u);
}

// D5: a summary that cannot be written fails the run with one line naming it, and the HDF5 file
// (complete by then) is not left behind either; nor are temporary files.
TEST_F(Processes, SummaryOnAFullFileSystemFailsTheWholeRun) {
  const fs::path full = root / "full", outdir = root / "d5";
  fs::create_directories(full), fs::create_directories(outdir);
  if (std::system(("mount -t tmpfs -o size=64k tmpfs '" + full.string() + "' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a 64 KB tmpfs here (needs root): the full-file-system case is untested";
  sh("head -c 1000000 /dev/zero > '" + (full / "filler").string() + "'");  // fills it (the write stops at ENOSPC)
  for (const char* launcher : {"", "mpirun -n 2 "}) {
    auto r = sh(std::string(launcher) + kScan + " " + run() + " -q -o " + (outdir / "x.h5").string() + " --summary " +
                (full / "s.json").string());
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find((full / "s.json").string() + ": cannot write the summary (No space left on device)"),
              std::string::npos)
        << r.out;
    EXPECT_TRUE(fs::is_empty(outdir)) << launcher;
    EXPECT_EQ(std::distance(fs::directory_iterator(full), {}), 1) << launcher;  // the filler only
  }
  EXPECT_EQ(std::system(("umount '" + full.string() + "'").c_str()), 0);
}
