// Pipeline bubble against the schedule's promise (docs/pipeline.md), on generated runs whose true
// bubble the generator computes from its own GPU timeline (truth.json "pipeline"), with the same
// run without its fault as the counterfactual. Each case also runs under random export
// conventions (stream and device ids, markers, files, row order), seeded.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "shell.hpp"
#include "topology/pipeline_theory.hpp"

namespace fs = std::filesystem;
using simdjson::dom::element;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;

struct ScanRun {
  simdjson::dom::parser p1, p2;
  element summary, truth, pipe, want;  // want: truth's "pipeline"
  std::string report, summary_text, reported_again, summary_again;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Generates `sim_args`, scans it (with `scan_args`), and reads the summary back from the saved scan
// with `straggler-scan report`.
void run(ScanRun& r, const std::string& sim_args, const std::string& scan_args = "") {
  static int n = 0;
  const fs::path dir = fs::temp_directory_path() / ("ss-pipeline-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  fs::remove_all(dir);
  int st = 0;
  auto out = testsh::sh(kSim + " " + (dir / "run").string() + " " + sim_args, &st);
  ASSERT_EQ(st, 0) << out;
  r.report = testsh::sh(kScan + " " + (dir / "run").string() + " -o " + (dir / "out.h5").string() + " --summary " +
                            (dir / "out.json").string() + " " + scan_args, &st);
  ASSERT_EQ(st, 0) << r.report;
  r.reported_again = testsh::sh(kScan + " report " + (dir / "out.h5").string() + " --summary " + (dir / "again.json").string(), &st);
  ASSERT_EQ(st, 0) << r.reported_again;
  r.summary_text = slurp(dir / "out.json"), r.summary_again = slurp(dir / "again.json");
  ASSERT_EQ(r.p1.load((dir / "out.json").string()).get(r.summary), simdjson::SUCCESS);
  ASSERT_EQ(r.p2.load((dir / "run" / "truth.json").string()).get(r.truth), simdjson::SUCCESS);
  r.want = r.truth["expected"]["pipeline"];
  ASSERT_FALSE(r.summary["pipeline"].is_null()) << r.report;
  r.pipe = r.summary["pipeline"];
  fs::remove_all(dir);
}

// The report's pipeline section (from "\npipeline:" to the next line that does not start with a space).
std::string section(const std::string& report) {
  const size_t a = report.find("\npipeline:\n");
  if (a == std::string::npos) return "";
  size_t b = a + 11;
  while (b < report.size() && report[b] == ' ') {
    const size_t eol = report.find('\n', b);
    b = eol == std::string::npos ? report.size() : eol + 1;
  }
  return report.substr(a, b - a);
}

bool has(element list, std::string_view v) {
  for (element e : simdjson::dom::array(list))
    if (std::string_view(e) == v) return true;
  return false;
}

// What every case must get exactly: the schedule facts, the bubble as the generator measured it on
// its own timeline, parts that add up to the excess, and the same summary from the saved scan.
void expect_measured(const ScanRun& r, const std::string& what) {
  const element p = r.pipe, t = r.want;
  EXPECT_EQ(int64_t(p["pp"]), int64_t(t["pp"])) << what;
  EXPECT_EQ(int64_t(p["microbatches"]), int64_t(t["microbatches"])) << what << "\n" << r.report;
  EXPECT_EQ(int64_t(p["virtual_stages"]), int64_t(t["virtual_stages"])) << what << "\n" << r.report;
  EXPECT_EQ(std::string_view(p["schedule"]), std::string_view(t["schedule"])) << what << "\n" << r.report;
  EXPECT_NEAR(double(p["bubble_theoretical"]), double(t["bubble_theoretical"]), 1e-6) << what;
  EXPECT_NEAR(double(p["bubble_measured"]), double(t["bubble_measured"]), 0.01) << what << "\n" << r.report;
  const auto stages = simdjson::dom::array(p["per_stage"]), truth_stages = simdjson::dom::array(t["per_stage"]);
  ASSERT_EQ(stages.size(), truth_stages.size()) << what;
  for (size_t s = 0; s < stages.size(); ++s)
    EXPECT_NEAR(double(stages.at(s)["bubble"]), double(truth_stages.at(s)), 0.015) << what << " stage " << s << "\n" << r.report;
  double parts = 0;
  for (auto [k, v] : simdjson::dom::object(p["parts"])) parts += double(v);
  EXPECT_NEAR(parts, double(p["bubble_measured"]) - double(p["bubble_theoretical"]), 1e-6) << what;
  EXPECT_NEAR(double(p["inflation"]), double(p["bubble_measured"]) / double(p["bubble_theoretical"]), 1e-4) << what;
  EXPECT_EQ(r.summary_again, r.summary_text) << what << ": `report` on the saved scan";
  EXPECT_EQ(section(r.reported_again), section(r.report)) << what << ": `report` on the saved scan";
  EXPECT_NE(section(r.report), "") << r.report;
}

// The fault's share of the bubble from the counterfactual run: what fixing it buys.
double counterfactual_excess(const ScanRun& r) {
  return double(r.want["bubble_measured"]) - double(r.want["bubble_without_faults"]);
}

const char* kConventions[] = {"", "--conventions random --seed 7", "--conventions random --seed 23"};

struct Case {
  const char* name;
  const char* sim;
};

// Balanced PP=4, m=8 in each schedule (one 8-GPU host), m, v and the schedule inferred: the
// bubble is (p-1)/(v m) within 2 points, and nothing is blamed.
class Balanced : public ::testing::TestWithParam<Case> {};
TEST_P(Balanced, BubbleIsTheFormula) {
  for (const char* cv : kConventions) {
    ScanRun r;
    const std::string what = std::string(GetParam().name) + " " + cv;
    ASSERT_NO_FATAL_FAILURE(run(r, std::string(GetParam().sim) + " " + cv));
    expect_measured(r, what);
    EXPECT_NEAR(double(r.pipe["bubble_measured"]), double(r.pipe["bubble_theoretical"]), 0.02) << what << "\n" << r.report;
    EXPECT_EQ(simdjson::dom::array(r.pipe["causes"]).size(), 0u) << what << "\n" << r.report;
    EXPECT_TRUE(r.pipe["bottleneck_stage"].is_null()) << what;
    EXPECT_EQ(simdjson::dom::array(r.summary["stragglers"]).size(), 0u) << what << "\n" << r.report;
  }
}
INSTANTIATE_TEST_SUITE_P(
    Schedules, Balanced,
    ::testing::Values(Case{"1f1b", "--layout 1x4x2 --hosts 1 --iterations 6 --microbatches 8 --layers 8 --schedule 1f1b"},
                      Case{"gpipe", "--layout 1x4x2 --hosts 1 --iterations 6 --microbatches 8 --layers 8 --schedule gpipe"},
                      Case{"interleaved", "--layout 1x4x2 --hosts 1 --iterations 6 --microbatches 8 --layers 8 "
                                          "--schedule interleaved --virtual-stages 2"}),
    [](const auto& i) { return std::string(i.param.name); });

// The last stage 35% heavier: it is the bottleneck, the excess is stage imbalance (within 15% of
// what the balanced counterfactual run saves: the model's imbalance ignores that a waiting stage
// hides some of the p2p overhead a balanced pipeline pays), and none of its ranks is a straggler.
TEST(Pipeline, HeavyLastStageIsTheBottleneck) {
  for (const char* cv : kConventions) {
    ScanRun r;
    ASSERT_NO_FATAL_FAILURE(run(r, std::string("--layout 2x4x2 --hosts 2 --iterations 6 --microbatches 8 --layers 4 "
                                               "--fault stage_imbalance:3:1.35 ") + cv));
    expect_measured(r, cv);
    EXPECT_EQ(int64_t(r.pipe["bottleneck_stage"]), 3) << cv << "\n" << r.report;
    ASSERT_GE(simdjson::dom::array(r.pipe["causes"]).size(), 1u) << r.report;
    EXPECT_EQ(std::string_view(r.pipe["causes"].at(0)), "stage_imbalance") << cv << "\n" << r.report;
    const double part = double(r.pipe["parts"]["stage_imbalance"]), excess = counterfactual_excess(r);
    EXPECT_NEAR(part, excess, 0.15 * excess) << cv << "\n" << r.report;
    for (element s : simdjson::dom::array(r.summary["stragglers"])) EXPECT_LT(int64_t(s["rank"]), 12) << cv << "\n" << r.report;
    EXPECT_NE(r.report.find("bottleneck: stage 3 does 1.3"), std::string::npos) << r.report;
  }
}

// A slow GPU in one data-parallel replica of a PP=4 run: the excess is that straggler's, named;
// not stage imbalance (its stage peers in the other replica are as fast as ever).
TEST(Pipeline, SlowGpuInOneReplicaIsAStraggler) {
  for (const char* cv : kConventions) {
    ScanRun r;
    ASSERT_NO_FATAL_FAILURE(run(r, std::string("--layout 2x4x2 --hosts 2 --iterations 6 --microbatches 8 --layers 4 "
                                               "--fault slow_gpu:9:0:1.3 ") + cv));
    expect_measured(r, cv);
    EXPECT_TRUE(has(r.pipe["causes"], "straggler")) << cv << "\n" << r.report;
    EXPECT_FALSE(has(r.pipe["causes"], "stage_imbalance")) << cv << "\n" << r.report;
    ASSERT_EQ(simdjson::dom::array(r.pipe["straggler_ranks"]).size(), 1u) << r.report;
    EXPECT_EQ(int64_t(r.pipe["straggler_ranks"].at(0)), 9) << cv << "\n" << r.report;
    EXPECT_TRUE(r.pipe["bottleneck_stage"].is_null()) << cv;
    const double part = double(r.pipe["parts"]["straggler"]), excess = counterfactual_excess(r);
    EXPECT_NEAR(part, excess, 0.25 * excess) << cv << "\n" << r.report;
  }
}

// Every p2p transfer 10x slower: the excess is p2p transfer.
TEST(Pipeline, SlowP2pIsTransfer) {
  for (const char* cv : kConventions) {
    ScanRun r;
    ASSERT_NO_FATAL_FAILURE(run(r, std::string("--layout 1x4x2 --hosts 1 --iterations 6 --microbatches 8 --layers 4 "
                                               "--fault slow_p2p:10 ") + cv));
    expect_measured(r, cv);
    ASSERT_GE(simdjson::dom::array(r.pipe["causes"]).size(), 1u) << r.report;
    EXPECT_EQ(std::string_view(r.pipe["causes"].at(0)), "p2p_transfer") << cv << "\n" << r.report;
    EXPECT_EQ(simdjson::dom::array(r.summary["stragglers"]).size(), 0u) << cv << "\n" << r.report;
  }
}

// The seed case: PP=8, 32 microbatches, (8-1)/32 = 21.9% promised; one stage 24% heavier makes it
// about 1.9x, and the report names the mechanism with its numbers.
TEST(Pipeline, SeedCaseNamesTheMechanism) {
  ScanRun r;
  ASSERT_NO_FATAL_FAILURE(run(r, "--layout 1x8x2 --hosts 2 --iterations 5 --microbatches 32 --layers 2 "
                                 "--fault stage_imbalance:5:1.24"));
  expect_measured(r, "seed case");
  EXPECT_NEAR(double(r.pipe["bubble_theoretical"]), 7.0 / 32, 1e-9);
  EXPECT_GT(double(r.pipe["inflation"]), 1.8) << r.report;
  EXPECT_LT(double(r.pipe["inflation"]), 2.05) << r.report;
  EXPECT_EQ(std::string_view(r.pipe["causes"].at(0)), "stage_imbalance") << r.report;
  EXPECT_EQ(int64_t(r.pipe["bottleneck_stage"]), 5) << r.report;
  EXPECT_NE(r.report.find("the schedule promises 21.9% ((p-1)/m = 7/32)"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("bottleneck: stage 5 does 1.2"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("verdict: stage_imbalance"), std::string::npos) << r.report;
}

// --microbatches and --virtual-stages override the inference, and say so.
TEST(Pipeline, GivenScheduleFactsAreSaidGiven) {
  ScanRun r;
  ASSERT_NO_FATAL_FAILURE(run(r, "--layout 1x4x2 --hosts 1 --iterations 6 --microbatches 8 --schedule interleaved --virtual-stages 2",
                              "--microbatches 8 --virtual-stages 2"));
  expect_measured(r, "given");
  EXPECT_FALSE(has(r.pipe["inferred"], "microbatches"));
  EXPECT_FALSE(has(r.pipe["inferred"], "virtual_stages"));
  EXPECT_NE(r.report.find("8 microbatches (given), 2 model chunks per stage (given)"), std::string::npos) << r.report;
}

// No pipeline parallelism: the contract's null.
TEST(Pipeline, NoPipelineIsNull) {
  const fs::path dir = fs::temp_directory_path() / ("ss-pipeline-none-" + std::to_string(::getpid()));
  int st = 0;
  testsh::sh(kSim + " " + (dir / "run").string() + " --layout 2x1x4 --hosts 1 --iterations 4", &st);
  ASSERT_EQ(st, 0);
  const auto out = testsh::sh(kScan + " " + (dir / "run").string() + " -o " + (dir / "o.h5").string() + " --summary " + (dir / "s.json").string(), &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(slurp(dir / "s.json").find("\"pipeline\": null"), std::string::npos);
  fs::remove_all(dir);
}

// The theory itself (docs/pipeline.md's worked example).
TEST(PipelineTheory, FormulaAndImbalanceExcess) {
  EXPECT_DOUBLE_EQ(topology::theoretical_bubble(8, 32, 1), 7.0 / 32);
  EXPECT_DOUBLE_EQ(topology::theoretical_bubble(4, 8, 2), 3.0 / 16);
  EXPECT_DOUBLE_EQ(topology::theoretical_bubble(1, 8, 1), 0.0);
  EXPECT_DOUBLE_EQ(topology::imbalance_excess({2, 2, 2, 2}, 8), 0.0);
  // u = (1, 1, 1, 1.35), n = 8: span = 4.35 + 7 * 1.35 = 13.8; 4 * 13.8 - 11 * 4.35 = 7.35.
  EXPECT_NEAR(topology::imbalance_excess({1, 1, 1, 1.35}, 8), 7.35, 1e-12);
}

}  // namespace
