// A new analysis and a new input format reach the output through the public interfaces alone:
// the toy analysis below is one class plus one registration line (src/analysis.hpp), the toy
// reader one file plus one registration line (tests/toy_reader.hpp). The run finds the analysis's
// table in the HDF5 file with its description and units, and in the generated layout docs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "analysis.hpp"
#include "driver.hpp"
#include "table_read.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "tables/catalog.hpp"
#include "toy_reader.hpp"
#include "transport.hpp"

namespace fs = std::filesystem;
using namespace straggler;

namespace {

// --- the toy analysis: each rank's longest kernel, and the kernels of the whole run ----------------
struct LongestKernel {
  int32_t rank = -1;
  std::string name;
  double duration_us = 0;
  int64_t kernels = 0;
};

const tables::Table<LongestKernel>& longest_kernel_table() {
  using tables::col;
  static const tables::Table<LongestKernel> t{
      "/toy/longest_kernel", "each rank's longest kernel", tables::Distribution::ByRank,
      {col("rank", &LongestKernel::rank, "", "global rank"), col("name", &LongestKernel::name, "", "kernel name"),
       col("duration_us", &LongestKernel::duration_us, "us", "duration of the rank's longest kernel"),
       col("kernels", &LongestKernel::kernels, "", "kernels of the rank")},
      [](const LongestKernel& r) { return r.rank; }};
  return t;
}

class ToyAnalysis : public PerRankAnalysis<LongestKernel> {
 public:
  // The option always has a value (given or the registration's default): parse_options fills it.
  explicit ToyAnalysis(const Options& spec) : long_us_(std::atof(spec.analysis_option("toy-long-us").c_str())) {}
  void finish(Transport& t, const RunResults&) override {  // merged over processes explicitly
    int64_t mine = 0;
    for (const auto& r : rows()) mine += r.kernels;
    total_ = t.reduce(mine, Transport::Op::Sum);
  }
  void tables(const RunResults&, tables::ResultTables& out) const override {
    auto t = longest_kernel_table().materialize(rows());
    t.attributes = {{"run_kernels", total_}, {"long_us", long_us_}};
    out.tables.push_back(std::move(t));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override {
    JsonWriter j;
    j.begin_object().key("run_kernels").value(total_).key("long_ranks").value(int64_t(long_ranks().size())).end_object();
    return {{"toy", j.str()}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput&) const override {
    std::string s = "\ntoy: ranks whose longest kernel exceeds " + std::to_string(int64_t(long_us_)) + " us:";
    for (int32_t r : long_ranks()) s += " " + std::to_string(r);
    return {ReportPart::Measurements, s + "\n"};
  }
  void load(const h5read::File& h5) override {  // what summary() and report() use, from its own table
    set_rows(tables::read_rows(h5, longest_kernel_table()));
    total_ = h5.attribute<int64_t>("/toy/longest_kernel", "run_kernels");
    long_us_ = h5.attribute<double>("/toy/longest_kernel", "long_us");
  }

 protected:
  std::vector<LongestKernel> measure(const RankInput& in) override {
    const auto& k = in.timeline.kernels;
    LongestKernel row;
    row.kernels = int64_t(k.size());
    for (size_t i = 0; i < k.size(); ++i)
      if (double(k.end[i] - k.start[i]) / 1e3 > row.duration_us)
        row.duration_us = double(k.end[i] - k.start[i]) / 1e3, row.name = in.timeline.names.str(k.name[i]);
    return {row};
  }
  void set_rank(LongestKernel& row, int32_t rank) override { row.rank = rank; }

 private:
  std::vector<int32_t> long_ranks() const {
    std::vector<int32_t> out;
    for (const auto& r : rows())
      if (r.duration_us > long_us_) out.push_back(r.rank);
    return out;
  }
  double long_us_ = 0;
  int64_t total_ = 0;
};

const bool kToyAnalysisRegistered =  // the one registration line, with its option
    register_analysis({"toy", "each rank's longest kernel",
                       [](const Options& spec) { return std::make_unique<ToyAnalysis>(spec); },
                       {{"toy-long-us", "a rank's longest kernel over this many us is long", "6050"}}});

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ss-toy-analysis-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path / "run"); }
  ~TempDir() { fs::remove_all(path); }
};

TEST(ToyAnalysis, ItsTableIsInTheOutputDocumented) {
  ASSERT_TRUE(kToyAnalysisRegistered && toy::kToyRegistered);
  TempDir t;
  for (int r = 0; r < 4; ++r) toy::write_toy(t.path / "run" / ("rank_" + std::to_string(r) + ".toytrace"), r);
  // Its option, parsed with the tool's own (the registration declared it), reaches it through the spec.
  const std::string run = (t.path / "run").string(), out = (t.path / "out.h5").string(),
                    json = (t.path / "summary.json").string();
  std::vector<std::string> args = {"straggler-scan", run, "-o", out, "--summary", json, "--toy-long-us", "6150"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  Options opt;
  ASSERT_TRUE(parse_options(int(argv.size()), argv.data(), opt, true));
  EXPECT_EQ(opt.analysis_option("toy-long-us"), "6150");
  auto local = local_transport();
  std::stringstream printed;
  auto* was = std::cout.rdbuf(printed.rdbuf());
  const int status = run_analysis(*local, opt);
  std::cout.rdbuf(was);
  ASSERT_EQ(status, 0) << printed.str();
  std::stringstream summary;
  summary << std::ifstream(opt.summary).rdbuf();
  EXPECT_NE(summary.str().find("\"toy\": {\"run_kernels\": 96, \"long_ranks\": 2}"), std::string::npos) << summary.str();
  // Its report section: ranks 2 and 3 (6200 and 6300 us) are over 6150.
  EXPECT_NE(printed.str().find("\ntoy: ranks whose longest kernel exceeds 6150 us: 2 3\n"), std::string::npos) << printed.str();
  // Contract keys no analysis fills here keep the contract's empty value.
  EXPECT_NE(summary.str().find("\"pipeline\": null"), std::string::npos) << summary.str();
  EXPECT_NE(summary.str().find("\"mfu\": null"), std::string::npos) << summary.str();  // no model FLOPs given

  const std::string f = opt.output;
  EXPECT_EQ(h5read::numbers<int64_t>(f, "/toy/longest_kernel/rank"), (std::vector<int64_t>{0, 1, 2, 3}));
  // The gemm lasts 6 ms + 0.1 ms per rank (toy_reader.hpp).
  EXPECT_EQ(h5read::numbers<double>(f, "/toy/longest_kernel/duration_us"), (std::vector<double>{6000, 6100, 6200, 6300}));
  EXPECT_EQ(h5read::strings(f, "/toy/longest_kernel/name"), std::vector<std::string>(4, "gemm_kernel"));
  EXPECT_EQ(h5read::attribute<int64_t>(f, "/toy/longest_kernel", "run_kernels"), 4 * 24);
  // Documented where users look: each dataset's attributes, and the generated docs/hdf5-layout.md
  // blocks (which also carry the table's description; a group may hold several tables).
  EXPECT_EQ(h5read::string_attribute(f, "/toy/longest_kernel/name", "description"), "kernel name");
  EXPECT_EQ(h5read::string_attribute(f, "/toy/longest_kernel/duration_us", "units"), "us");
  EXPECT_EQ(h5read::string_attribute(f, "/toy/longest_kernel/duration_us", "description"),
            "duration of the rank's longest kernel");
  const std::string md = tables::layout_markdown("/toy");
  EXPECT_NE(md.find("`/toy/longest_kernel`: each rank's longest kernel"), std::string::npos) << md;
  EXPECT_NE(md.find("| `duration_us` | float64 | us | duration of the rank's longest kernel |"), std::string::npos) << md;
  // And the built-in analyses still wrote theirs.
  EXPECT_EQ(h5read::numbers<int64_t>(f, "/ranks/rank"), (std::vector<int64_t>{0, 1, 2, 3}));

  // It survives `straggler-scan report`: the same section and summary key from the saved scan.
  Options again;
  again.command = Options::Command::Report, again.scan_file = f, again.output.clear();
  again.summary = (t.path / "again.json").string();
  std::stringstream reprinted;
  was = std::cout.rdbuf(reprinted.rdbuf());
  const int status2 = run_report(*local, again);
  std::cout.rdbuf(was);
  ASSERT_EQ(status2, 0);
  std::stringstream summary2;
  summary2 << std::ifstream(again.summary).rdbuf();
  EXPECT_EQ(summary2.str(), summary.str());
  EXPECT_NE(reprinted.str().find("\ntoy: ranks whose longest kernel exceeds 6150 us: 2 3\n"), std::string::npos)
      << reprinted.str();
}

TEST(ToyAnalysis, RegisteredAfterTheBuiltinOnes) {
  const auto reg = analysis_registry();
  ASSERT_GE(reg.size(), 2u);
  EXPECT_EQ(reg.front().name, "rank_metrics");
  EXPECT_EQ(reg.back().name, "toy");
}

}  // namespace
