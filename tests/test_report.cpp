// `straggler-scan report SCAN.h5` (src/scan_load.hpp): the report and the summary of a saved scan,
// read back from its HDF5 alone, are those the scan printed and wrote: byte for byte, for 1 and 3
// processes, over generated runs of every kind of verdict and the real captures (skipped where
// ../shared/data/real is absent). A file that is not a scan, or of another format version, is one
// line and exit 2.
#include <gtest/gtest.h>

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shell.hpp"

namespace fs = std::filesystem;
using testsh::sh;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN, kShared = SS_SHARED_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The output up to its last line, "wrote FILES", which names what each command wrote.
std::string report_only(const std::string& out) {
  const size_t at = out.rfind("\nwrote ");
  return at == std::string::npos ? out : out.substr(0, at);
}

struct Case {
  std::string name, sim_args;  // sim_args empty: a real capture folder (name under data/real)
};

// Each verdict the report can say: healthy, stragglers of every cause, slow link, hang, crash,
// too short, no markers, per-host files, overlap.
const std::vector<Case> kCases = {
    {"healthy", "--layout 2x2x2 --hosts 2 --iterations 6 --seed 11"},
    {"slow_gpu", "--layout 2x2x2 --iterations 8 --seed 3 --fault slow_gpu:5:2:1.4"},
    {"host_delay_no_markers", "--layout 2x2x4 --iterations 10 --seed 7 --conventions random --fault host_delay:9:3:12"},
    {"slow_link", "--layout 2x1x4 --hosts 4 --iterations 8 --seed 5 --fault slow_link:1:2:3"},
    {"hang", "--layout 2x2x2 --iterations 6 --seed 9 --fault hang:6:3"},
    {"crash_overlap", "--layout 2x2x4 --iterations 8 --seed 13 --dp-overlap --fault crash:3:4"},
    {"gc_per_host", "--layout 2x2x2 --hosts 2 --iterations 10 --seed 17 --per-host-files --fault gc_pause:2:2:15"},
    {"short", "--layout 2x2x2 --iterations 2 --seed 19"},
    // as scripts/demo.sh generates it
    {"demo", "--layout 2x2x8 --hosts 4 --iterations 20 --seed 1 --clock-offset-ms 3 --fault slow_gpu:13:8:1.4"},
};

class Report : public ::testing::TestWithParam<int> {
 protected:
  static fs::path root;
  static void SetUpTestSuite() {
    root = fs::temp_directory_path() / ("ss-report-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  static void TearDownTestSuite() { fs::remove_all(root); }

  // Scans `input` with `procs` processes, then reports its HDF5 with `procs` processes: the
  // same stdout, stderr and summary bytes.
  void same_report(const std::string& input, const std::string& tag, int procs) {
    const std::string mpi = procs > 1 ? "mpirun -n " + std::to_string(procs) + " --oversubscribe " : "";
    const fs::path h5 = root / (tag + ".h5"), a = root / (tag + ".a.json"), b = root / (tag + ".b.json");
    auto scan = sh(mpi + kScan + " " + input + " -o " + h5.string() + " --summary " + a.string());
    ASSERT_EQ(scan.status, 0) << scan.out;
    auto report = sh(mpi + kScan + " report " + h5.string() + " --summary " + b.string());
    ASSERT_EQ(report.status, 0) << report.out;
    EXPECT_EQ(report_only(report.out), report_only(scan.out)) << tag;
    EXPECT_NE(report.out.find("\nwrote " + b.string() + "\n"), std::string::npos) << report.out;
    const std::string sa = slurp(a), sb = slurp(b);
    ASSERT_FALSE(sa.empty()) << tag;
    EXPECT_EQ(sb, sa) << tag;
  }
};
fs::path Report::root;

}  // namespace

TEST_P(Report, SavedScanPrintsTheSameReportAndSummary) {
  const Case& c = kCases[size_t(GetParam())];
  const fs::path run = root / c.name;
  auto g = sh(kSim + " " + run.string() + " " + c.sim_args);
  ASSERT_EQ(g.status, 0) << g.out;
  same_report(run.string(), c.name + "-n1", 1);
  same_report(run.string(), c.name + "-n3", 3);
}

INSTANTIATE_TEST_SUITE_P(Cases, Report, ::testing::Range(0, int(kCases.size())),
                         [](const auto& info) { return kCases[size_t(info.param)].name; });

TEST(ReportReal, RealCapturesReportTheSame) {
  const fs::path real = fs::path(kShared) / "data" / "real";
  if (!fs::exists(real)) GTEST_SKIP() << real << " is absent: the real captures are not checked here";
  const fs::path root = fs::temp_directory_path() / ("ss-report-real-" + std::to_string(::getpid()));
  fs::create_directories(root);
  int done = 0;
  for (const auto& e : fs::directory_iterator(real)) {
    if (e.path().extension() != ".sqlite") continue;  // the nsys exports (the Kineto traces are not read yet)
    const std::string tag = e.path().stem().string();
    const fs::path h5 = root / (tag + ".h5"), a = root / (tag + ".a.json");
    auto scan = sh(kScan + " " + e.path().string() + " -o " + h5.string() + " --summary " + a.string());
    if (scan.status != 0) continue;  // a folder of no usable profile (e.g. only a README)
    for (const char* mpi : {"", "mpirun -n 3 --oversubscribe "}) {
      const fs::path b = root / (tag + (*mpi ? ".b3.json" : ".b1.json"));
      auto report = sh(mpi + kScan + " report " + h5.string() + " --summary " + b.string());
      ASSERT_EQ(report.status, 0) << tag << ": " << report.out;
      EXPECT_EQ(report_only(report.out), report_only(scan.out)) << tag << " " << mpi;
      EXPECT_EQ(slurp(b), slurp(a)) << tag << " " << mpi;
    }
    ++done;
  }
  fs::remove_all(root);
  EXPECT_GT(done, 0) << "no real capture could be scanned in " << real;
}

TEST(ReportErrors, ForeignOrOlderFilesAreOneLineAndExitTwo) {
  const fs::path root = fs::temp_directory_path() / ("ss-report-bad-" + std::to_string(::getpid()));
  fs::create_directories(root);
  const fs::path text = root / "notes.h5", foreign = root / "foreign.h5", old = root / "old.h5";
  std::ofstream(text) << "not an HDF5 file\n";
  {  // an HDF5 file some other tool wrote
    hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    H5Fclose(f);
  }
  auto g = sh(kSim + " " + (root / "run").string() + " --layout 1x1x2 --hosts 1 --iterations 4 --seed 1");
  ASSERT_EQ(g.status, 0) << g.out;
  auto s = sh(kScan + " " + (root / "run").string() + " -q -o " + old.string());
  ASSERT_EQ(s.status, 0) << s.out;
  {  // as written before format versions: no format_version attribute
    hid_t f = H5Fopen(old.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Adelete(f, "format_version"), 0);
    H5Fclose(f);
  }
  for (const auto& [file, words] : std::vector<std::pair<fs::path, std::string>>{
           {text, "cannot read the scan back"}, {foreign, "not a straggler-scan output"},
           {old, "before scans could be read back"}, {root / "absent.h5", "cannot read the scan back"}}) {
    auto r = sh(kScan + " report " + file.string() + " --summary " + (root / "s.json").string());
    EXPECT_EQ(r.status, 2) << file << ": " << r.out;
    EXPECT_NE(r.out.find(file.filename().string()), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(words), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(fs::exists(root / "s.json")) << file;
  }
  auto none = sh(kScan + " report");
  EXPECT_EQ(none.status, 2) << none.out;
  auto two = sh(kScan + " report " + old.string() + " " + old.string());
  EXPECT_EQ(two.status, 2) << two.out;
  auto self = sh(kScan + " report " + old.string() + " --summary " + old.string());  // never overwrite the scan
  EXPECT_EQ(self.status, 2) << self.out;
  EXPECT_EQ(sh(kScan + " report " + old.string() + " -q").status, 2);  // still the old file
  fs::remove_all(root);
}
