// What every reader must produce (ranks/profile_reader.hpp, ranks/timeline.hpp), checked the same
// way on each: the nsys SQLite reader on generated and real exports, and a toy reader defined in
// the test tree through the public interface only (tests/toy_reader.hpp: one file, one
// registration line), which also runs end to end through the whole analysis into the HDF5 output.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "driver.hpp"
#include "toy_reader.hpp"
#include "ranks/profile_reader.hpp"
#include "transport.hpp"

namespace fs = std::filesystem;
namespace {
using toy::kToyRegistered;
using toy::write_toy;

// --- the contract ---------------------------------------------------------------------------
template <class C>
void expect_sorted(const C& start, const C& end, const char* what) {
  ASSERT_EQ(start.size(), end.size()) << what;
  EXPECT_TRUE(std::is_sorted(start.begin(), start.end())) << what << " not sorted by start";
  for (size_t i = 0; i < start.size(); ++i) {
    ASSERT_GE(end[i], start[i]) << what << " row " << i;
    ASSERT_TRUE(ranks::in_time_range(start[i]) && ranks::in_time_range(end[i])) << what << " row " << i;
  }
}

void expect_conforms(const ranks::RankTimeline& tl, const std::string& format) {
  const auto& k = tl.kernels;
  EXPECT_EQ(tl.source.format, format);
  EXPECT_FALSE(tl.file.empty());
  ASSERT_GT(k.size(), 0u);
  expect_sorted(k.start, k.end, "kernels");
  for (auto* col : {&k.launch_tid, &k.launch_dur}) EXPECT_EQ(col->size(), k.size());
  EXPECT_EQ(k.stream.size(), k.size());
  EXPECT_EQ(k.name.size(), k.size());
  EXPECT_EQ(k.launch.size(), k.size());
  for (size_t n : {k.meta_call.size(), k.meta_bytes.size(), k.meta_comm.size()}) EXPECT_TRUE(n == 0 || n == k.size());
  for (auto c : k.meta_call) ASSERT_TRUE(c == ranks::kNoName || c < tl.names.size());
  for (size_t i = 0; i < k.size(); ++i) ASSERT_LT(k.name[i], tl.names.size());
  expect_sorted(tl.copies.start, tl.copies.end, "copies");
  expect_sorted(tl.api.start, tl.api.end, "api calls");
  expect_sorted(tl.nvtx.start, tl.nvtx.end, "annotation ranges");
  for (auto d : tl.nvtx.domain) ASSERT_TRUE(d == ranks::kNoName || d == ranks::kUnnamedDomain || d < tl.names.size());
  EXPECT_EQ(tl.nvtx.domain.size(), tl.nvtx.size());
  EXPECT_LE(tl.capture_start, k.start.front());
  EXPECT_GE(tl.capture_end, *std::max_element(k.end.begin(), k.end.end()));
  // Meaning is not a reader's business: the annotation columns stay empty until annotate_nccl.
  EXPECT_TRUE(k.is_nccl.empty() && k.nccl_api.empty() && tl.nvtx.nccl_domain.empty());
  EXPECT_TRUE(tl.pending_nccl.empty() && tl.unfinished_launches.empty() && tl.nccl_launch_apis.empty());
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ss-conformance-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// Files of one format, made in `dir` (empty: the format's inputs are absent here).
struct Source {
  std::string format, name;
  std::function<std::vector<std::string>(const fs::path& dir)> make;
};

std::vector<Source> sources() {
  return {
      {"toy-trace", "toy", [](const fs::path& d) {
         write_toy(d / "rank_0.toytrace", 0);
         return std::vector<std::string>{(d / "rank_0.toytrace").string()};
       }},
      {"nsys-sqlite", "generated", [](const fs::path& d) {
         const std::string cmd = std::string(SS_SIM_BIN) + " " + (d / "run").string() +
                                 " --layout 1x2x2 --hosts 2 --iterations 3 --conventions random --seed 7 >/dev/null 2>&1";
         if (std::system(cmd.c_str()) != 0) throw std::runtime_error("straggler-sim failed");
         std::vector<std::string> out;
         for (const auto& e : fs::directory_iterator(d / "run"))
           if (e.path().extension() == ".sqlite") out.push_back(e.path().string());
         return out;
       }},
      {"nsys-sqlite", "real", [](const fs::path&) {
         std::vector<std::string> out;
         const fs::path real = fs::path(SS_SHARED_DIR) / "data" / "real";
         std::error_code ec;
         for (const auto& e : fs::directory_iterator(real, ec))
           if (e.path().extension() == ".sqlite") out.push_back(e.path().string());
         return out;
       }},
      {"kineto-json", "real_kineto", [](const fs::path&) {
         std::vector<std::string> out;  // HTA's sample traces, gzip-compressed as stored
         std::error_code ec;
         for (const char* set : {"trace_filter_sampled", "nccl_parser_config"})
           for (const auto& e : fs::directory_iterator(fs::path(SS_SHARED_DIR) / "data" / "real" / "hta" / set, ec))
             if (e.path().string().size() > 8 && e.path().string().substr(e.path().string().size() - 8) == ".json.gz")
               out.push_back(e.path().string());
         return out;
       }},
  };
}

class Conformance : public ::testing::TestWithParam<Source> {};

TEST_P(Conformance, EveryReaderKeepsTheTimelineContract) {
  TempDir t;
  const auto files = GetParam().make(t.path);
  if (files.empty()) GTEST_SKIP() << "no " << GetParam().name << " inputs here (" << SS_SHARED_DIR << "/data/real absent)";
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const auto tls = ranks::read_profile(f);  // the registry picks the reader from the bytes
    ASSERT_FALSE(tls.empty());
    for (const auto& tl : tls) expect_conforms(tl, GetParam().format);
  }
}

INSTANTIATE_TEST_SUITE_P(Readers, Conformance, ::testing::ValuesIn(sources()),
                         [](const auto& info) { return info.param.name; });

std::vector<int32_t> read_ints(const std::string& file, const char* path) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  const hid_t s = H5Dget_space(d);
  std::vector<int32_t> v(size_t(H5Sget_simple_extent_npoints(s)));
  H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Sclose(s), H5Dclose(d), H5Fclose(f);
  return v;
}

// A new format reaches the output through the registry alone: discovery finds its files by
// extension, the driver reads them through read_profile and annotates them like any other.
TEST(ToyReader, RunsThroughTheWholeAnalysis) {
  ASSERT_TRUE(kToyRegistered);
  TempDir t;
  fs::create_directories(t.path / "run");
  for (int r = 0; r < 4; ++r) write_toy(t.path / "run" / ("rank_" + std::to_string(r) + ".toytrace"), r);
  straggler::Options opt;
  opt.inputs = {(t.path / "run").string()};
  opt.output = (t.path / "out.h5").string();
  opt.quiet = true;
  auto local = straggler::local_transport();
  ASSERT_EQ(straggler::run_analysis(*local, opt), 0);
  EXPECT_EQ(read_ints(opt.output, "/ranks/rank"), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(read_ints(opt.output, "/collectives/communicators/size"), (std::vector<int32_t>{4}));  // NCCL found
}

}  // namespace
