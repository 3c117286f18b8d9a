// Device identity (issue 37): a CUDA ordinal is per process, so "two ranks on one GPU" is said only
// from a PCI bus id, or from ordinals where a host's ranks show they are host-wide.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include <unistd.h>

#include "nsys_fixture.hpp"
#include "ranks/belonging.hpp"
#include "ranks/nsys_reader.hpp"

namespace fs = std::filesystem;
using namespace ranks;
using testing_fixture::NsysFixture;

namespace {

struct Dir {
  fs::path path = fs::temp_directory_path() / ("ss_gpuid_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  static inline int counter = 0;
};

// One rank per file (rank_N.sqlite), each process with this host, ordinal and bus id.
struct Job {
  Dir d;
  Discovery disc;
  std::vector<FoundProcess> found;
  std::vector<int> rank;
  Job(const std::vector<std::tuple<std::string, int, std::string>>& ranks_) {
    for (size_t r = 0; r < ranks_.size(); ++r) std::ofstream(d.path / ("rank_" + std::to_string(r) + ".sqlite")) << "x";
    disc = discover({d.path.string()}, {});
    for (size_t r = 0; r < ranks_.size(); ++r) {
      FoundProcess p{r, int64_t(1000 + r), std::get<1>(ranks_[r]), 0, 1};
      p.host = std::get<0>(ranks_[r]), p.gpu_bus = std::get<2>(ranks_[r]);
      found.push_back(p), rank.push_back(int(r));
    }
  }
  std::vector<std::string> problems() const { return belonging_problems(disc, found, rank); }
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

}  // namespace

// Slurm --gpus-per-task: every rank's GPU is device 0, each on its own bus: one job, no warning.
TEST(GpuIdentity, DeviceZeroWithDistinctBusIdsIsNoSharedGpu) {
  Job j({{"n0", 0, "0000:18:00.0"}, {"n0", 0, "0000:28:00.0"}, {"n1", 0, "0000:18:00.0"}, {"n1", 0, "0000:28:00.0"}});
  EXPECT_TRUE(j.problems().empty()) << joined(j.problems());
}

// The same bus on one host is one GPU, whatever the ordinals say.
TEST(GpuIdentity, SameBusOnOneHostIsSharedGpu) {
  Job j({{"n0", 0, "0000:18:00.0"}, {"n0", 1, "0000:18:00.0"}, {"n1", 0, "0000:18:00.0"}});
  const auto p = j.problems();
  ASSERT_EQ(p.size(), 1u) << joined(p);
  EXPECT_NE(p[0].find("both hold a rank on host n0 GPU 1 (PCI bus 0000:18:00.0) (ranks 0 and 1)"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("sharing a GPU"), std::string::npos) << p[0];
}

// Device 0 everywhere without bus ids (data/foreign/crash_blocked): the ordinal is per process, so
// nothing can be said.
TEST(GpuIdentity, DeviceZeroWithoutBusIdsSaysNothing) {
  Job j({{"n0", 0, ""}, {"n0", 0, ""}, {"n0", 0, ""}, {"n1", 0, ""}, {"n1", 0, ""}});
  EXPECT_TRUE(j.problems().empty()) << joined(j.problems());
}

// Processes that see every GPU of their host (ordinals 0..3 on one host): there an ordinal is a
// GPU, and two ranks on device 1 collide (two runs in one folder, data/real before + after).
TEST(GpuIdentity, HostWideOrdinalsStillCollide) {
  Job j({{"n0", 0, ""}, {"n0", 1, ""}, {"n0", 1, ""}, {"n0", 3, ""}, {"n1", 0, ""}, {"n1", 0, ""}});
  const auto p = j.problems();
  ASSERT_EQ(p.size(), 1u) << joined(p);  // n1 shows one ordinal only: no claim there
  EXPECT_NE(p[0].find("both hold a rank on host n0 GPU 1 (ranks 1 and 2)"), std::string::npos) << p[0];
}

namespace {

// A one-process capture on `dev` with TARGET_INFO_GPU rows (id, cuDevice, busLocation).
fs::path capture(const Dir& d, const std::string& name, int dev,
                 const std::vector<std::tuple<int, int, std::string>>& gpus, bool cuda_device_table = false) {
  const fs::path p = d.path / name;
  NsysFixture f(p.string());
  f.exec("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,"
         " uuid TEXT, cuDevice INTEGER)");
  for (const auto& [id, cu, bus] : gpus)
    f.exec("INSERT INTO TARGET_INFO_GPU VALUES (0," + std::to_string(id) + ",'NVIDIA H100','" + bus + "',''," +
           std::to_string(cu) + ")");
  if (cuda_device_table) {  // 2026.1: process 77's ordinal `dev` is GPU id 2
    f.exec("CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL,"
           " uuid TEXT, numMultiprocessors INTEGER)");
    f.exec("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (2," + std::to_string(dev) + ",77,'',132)");
  }
  f.kernel(77, dev, 7, 100, 200, "gemm", 1);
  return p;
}

}  // namespace

TEST(GpuIdentity, ReaderTakesTheBusOnlyWhereTheExportSaysWhichGpu) {
  Dir d;
  // The only GPU the capture saw.
  EXPECT_EQ(read_nsys(capture(d, "one.sqlite", 0, {{5, 0, "0000:9a:00.0"}}).string()).front().gpu_bus, "0000:9a:00.0");
  // Every GPU of the host listed, the rank on device 0: which one is not written down.
  const std::vector<std::tuple<int, int, std::string>> all = {
      {0, 0, "0000:18:00.0"}, {1, 1, "0000:28:00.0"}, {2, 2, "0000:38:00.0"}};
  EXPECT_EQ(read_nsys(capture(d, "all.sqlite", 0, all).string()).front().gpu_bus, "");
  // TARGET_INFO_CUDA_DEVICE maps the process's ordinal to its GPU.
  EXPECT_EQ(read_nsys(capture(d, "map.sqlite", 0, all, true).string()).front().gpu_bus, "0000:38:00.0");
}

// Real exports with a TARGET_INFO_GPU (and, for 2026.1, TARGET_INFO_CUDA_DEVICE).
TEST(GpuIdentity, RealExportsBusLocation) {
  const fs::path real = fs::path(SS_SHARED_DIR) / "data" / "real";
  if (!fs::exists(real / "nsysai_mock_1gpu.sqlite")) GTEST_SKIP() << "no " << real;
  EXPECT_EQ(read_nsys((real / "nsysai_mock_1gpu.sqlite").string()).front().gpu_bus, "0000:01:00.0");
  EXPECT_EQ(read_nsys((real / "nvfuser_report1_1gpu.sqlite").string()).front().gpu_bus, "0000:45:00.0");
  EXPECT_EQ(read_nsys((real / "nsysai_h100_2gpu_1s.sqlite").string()).front().gpu_bus, "");  // no table
}
