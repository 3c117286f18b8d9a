// MFU (docs/mfu.md): the GPU table, the per-iteration and per-phase arithmetic, and generated runs
// whose GPU name (TARGET_INFO_GPU, schema 3.0) and FLOPs per step the generator plants, with its
// own per-iteration job step (truth.json "mfu") as the truth; a slow GPU from iteration 8 makes a
// change point whose before/after MFU must match the planted steps of the same iterations.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "analyses/mfu.hpp"
#include "shell.hpp"
#include "topology/gpu_specs.hpp"

namespace fs = std::filesystem;
using straggler::analyses::compute_mfu;
using straggler::analyses::MfuInput;

TEST(GpuSpecs, DriverNamesMapToTheirDensePeaks) {
  auto peak = [](const char* name) {
    const auto g = topology::find_gpu(name);
    return g ? topology::peak_tflops(*g, topology::Precision::BF16) : -1.0;
  };
  EXPECT_DOUBLE_EQ(peak("NVIDIA H100 80GB HBM3"), 989.5);  // SXM
  EXPECT_DOUBLE_EQ(peak("NVIDIA H100 PCIe"), 756.5);
  EXPECT_DOUBLE_EQ(peak("NVIDIA H100 NVL"), 835.5);
  EXPECT_DOUBLE_EQ(peak("NVIDIA H200"), 989.5);
  EXPECT_DOUBLE_EQ(peak("NVIDIA A100-SXM4-80GB"), 312);
  EXPECT_DOUBLE_EQ(peak("NVIDIA A100 80GB PCIe"), 312);
  EXPECT_DOUBLE_EQ(peak("NVIDIA B200"), 2250);
  EXPECT_DOUBLE_EQ(peak("NVIDIA L40S"), 362.05);
  EXPECT_DOUBLE_EQ(peak("NVIDIA L4"), 121);
  EXPECT_EQ(peak("Tesla T4"), -1.0);  // unknown: no guess
  EXPECT_EQ(topology::peak_tflops(*topology::find_gpu("A100-SXM4-40GB"), topology::Precision::FP8), 0.0);
  EXPECT_DOUBLE_EQ(topology::peak_tflops(*topology::find_gpu("H100 SXM5"), topology::Precision::FP8), 1979);
}

TEST(Mfu, PerIterationAndBetweenChangePoints) {
  MfuInput in;
  in.gpus = 8, in.peak_tflops = 1000;
  in.flops_per_step = 0.5 * 0.1 * 8 * 1000e12;  // 50% at 100 ms
  for (int i = 1; i <= 10; ++i) in.iteration.push_back(i), in.step_ms.push_back(i <= 5 ? 100 : 200);
  in.change_points = {6};
  const auto r = compute_mfu(in);
  ASSERT_EQ(r.phases.size(), 2u);
  EXPECT_EQ(r.phases[0].from_iteration, 1);
  EXPECT_EQ(r.phases[0].to_iteration, 5);
  EXPECT_NEAR(r.phases[0].mfu, 0.5, 1e-12);
  EXPECT_EQ(r.phases[1].from_iteration, 6);
  EXPECT_EQ(r.phases[1].to_iteration, 10);
  EXPECT_NEAR(r.phases[1].mfu, 0.25, 1e-12);
  EXPECT_NEAR(r.phases[1].step_ms, 200, 1e-9);
  EXPECT_NEAR(r.mfu, 0.5 * 100 / 150, 1e-12);
  EXPECT_NEAR(r.iterations[9].mfu, 0.25, 1e-12);
  in.peak_tflops = 0;  // unknown GPU: nothing computed
  EXPECT_TRUE(std::isnan(compute_mfu(in).mfu));
}

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;

fs::path dir_of(const std::string& name) {
  return fs::temp_directory_path() / ("ss-mfu-" + std::to_string(::getpid()) + "-" + name);
}

struct ScanRun {
  simdjson::dom::parser p1, p2;
  simdjson::dom::element summary, truth;
  std::string report;
};

void run(ScanRun& r, const std::string& name, const std::string& sim_args, const std::string& scan_args) {
  const fs::path d = dir_of(name);
  fs::remove_all(d);
  int st = 0;
  auto out = testsh::sh(kSim + " " + (d / "run").string() + " " + sim_args, &st);
  ASSERT_EQ(st, 0) << out;
  r.report = testsh::sh(kScan + " " + (d / "run").string() + " -o " + (d / "out.h5").string() + " --summary " +
                            (d / "out.json").string() + " " + scan_args, &st);
  ASSERT_EQ(st, 0) << r.report;
  const std::string again = testsh::sh(kScan + " report " + (d / "out.h5").string() + " --summary " + (d / "again.json").string(), &st);
  ASSERT_EQ(st, 0) << again;
  EXPECT_EQ(testsh::slurp((d / "out.json").string()), testsh::slurp((d / "again.json").string()));  // survives `report`
  ASSERT_EQ(r.p1.load((d / "out.json").string()).get(r.summary), simdjson::SUCCESS);
  ASSERT_EQ(r.p2.load((d / "run" / "truth.json").string()).get(r.truth), simdjson::SUCCESS);
  fs::remove_all(d);
}

// The planted MFU over iterations [from, to]: FLOPs x n / (sum of the generator's job steps x GPUs x peak).
double planted(const ScanRun& r, int64_t from, int64_t to, double peak_tflops) {
  const auto t = r.truth["expected"]["mfu"];
  double ms = 0;
  int n = 0;
  for (auto it : simdjson::dom::array(t["iterations"])) {
    const int64_t i = int64_t(it["iteration"]);
    if (i >= from && i <= to) ms += double(it["step_ms"]), ++n;
  }
  return double(t["model_flops_per_step"]) * n / (ms / 1e3 * double(int64_t(t["gpus"])) * peak_tflops * 1e12);
}

const std::string kFlops = "3e14";

}  // namespace

// The GPU named by the export (schema 3.0 TARGET_INFO_GPU): MFU within 1% of the planted.
TEST(MfuRuns, GpuFromTheExportAndPlantedFlops) {
  ScanRun r;
  run(r, "export", "--layout 2x2x4 --hosts 4 --iterations 12 --schema 3.0 --gpu-name 'NVIDIA H100 80GB HBM3' --model-flops-per-step " + kFlops,
      "--model-flops-per-step " + kFlops);
  const auto m = r.summary["mfu"];
  ASSERT_FALSE(m.is_null()) << r.report;
  EXPECT_EQ(std::string_view(m["gpu"]), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(std::string_view(m["gpu_source"]), "export");
  EXPECT_DOUBLE_EQ(double(m["peak_tflops"]), 989.5);
  auto phases = simdjson::dom::array(m["phases"]);
  ASSERT_EQ(phases.size(), 1u) << r.report;
  const auto ph = phases.at(0);
  const double want = planted(r, int64_t(ph["from_iteration"]), int64_t(ph["to_iteration"]), 989.5);
  EXPECT_NEAR(double(ph["mfu"]) / want, 1.0, 0.01) << double(ph["mfu"]) << " vs planted " << want << "\n" << r.report;
  EXPECT_EQ(int64_t(ph["from_iteration"]), 1);  // the warm-up iteration left out
  EXPECT_NE(r.report.find("MFU "), std::string::npos) << r.report;
}

// No GPU in the export (schema 3.25): no MFU and the report says why; --gpu gives it; 6 N T FLOPs.
TEST(MfuRuns, NoGpuInTheExportNeedsGpuGiven) {
  ScanRun r;
  run(r, "nogpu", "--layout 2x1x4 --hosts 2 --iterations 8 --model-flops-per-step 2e14", "--model-flops-per-step 2e14");
  EXPECT_TRUE(r.summary["mfu"].is_null());
  EXPECT_NE(r.report.find("the export names no GPU"), std::string::npos) << r.report;
  ScanRun g;
  run(g, "given", "--layout 2x1x4 --hosts 2 --iterations 8 --model-flops-per-step 2e14",
      "--gpu 'H100 PCIe' --tokens-per-step 1e4 --params 3333333333.3333333");
  const auto m = g.summary["mfu"];
  ASSERT_FALSE(m.is_null()) << g.report;
  EXPECT_EQ(std::string_view(m["gpu_source"]), "given");
  EXPECT_DOUBLE_EQ(double(m["peak_tflops"]), 756.5);
  const auto ph = simdjson::dom::array(m["phases"]).at(0);
  EXPECT_NEAR(double(m["model_flops_per_step"]), 2e14, 1e3);
  const double want = planted(g, int64_t(ph["from_iteration"]), int64_t(ph["to_iteration"]), 756.5);
  EXPECT_NEAR(double(ph["mfu"]) / want, 1.0, 0.01);
}

// A slow GPU from iteration 8: the change point's before and after MFU within 2% of the planted.
TEST(MfuRuns, ChangePointBeforeAndAfter) {
  ScanRun r;
  run(r, "cp", "--layout 2x2x4 --hosts 4 --iterations 16 --schema 3.0 --gpu-name 'NVIDIA A100-SXM4-80GB' --model-flops-per-step " +
                   kFlops + " --fault slow_gpu:5:8:1.6",
      "--model-flops-per-step " + kFlops);
  const auto m = r.summary["mfu"];
  ASSERT_FALSE(m.is_null()) << r.report;
  auto phases = simdjson::dom::array(m["phases"]);
  ASSERT_EQ(phases.size(), 2u) << r.report;
  double before = 0, after = 0;
  for (size_t i = 0; i < 2; ++i) {
    const auto ph = phases.at(i);
    const double want = planted(r, int64_t(ph["from_iteration"]), int64_t(ph["to_iteration"]), 312);
    EXPECT_NEAR(double(ph["mfu"]) / want, 1.0, 0.02) << i << "\n" << r.report;
    (i ? after : before) = double(ph["mfu"]);
  }
  EXPECT_EQ(int64_t(phases.at(1)["from_iteration"]), 8) << r.report;
  EXPECT_LT(after, 0.85 * before);
}

// Real exports: the GPU name from TARGET_INFO_GPU (nsys 2024.6, an H200), and a GPU the table does
// not list (nsys 2026.1, an RTX 3080): named, no peak, no MFU, and the report says why.
TEST(MfuRuns, RealExportsNameTheirGpu) {
  const fs::path h200 = fs::path(SS_SHARED_DIR) / "data/real/nvfuser_report1_1gpu.sqlite",
                 rtx = fs::path(SS_SHARED_DIR) / "data/real/nsysai_mock_1gpu.sqlite";
  if (!fs::exists(h200) || !fs::exists(rtx)) GTEST_SKIP() << "real profiles absent (../shared/data/real)";
  const fs::path d = dir_of("real");
  fs::create_directories(d);
  int st = 0;
  auto out = testsh::sh(kScan + " " + h200.string() + " -o " + (d / "a.h5").string() + " --model-flops-per-step 1e12", &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(out.find("GPU: NVIDIA H200 (from the export), bf16 dense peak 989.5 TFLOPS; 1 GPU\n"), std::string::npos) << out;
  out = testsh::sh(kScan + " " + rtx.string() + " -o " + (d / "b.h5").string() + " --model-flops-per-step 1e12", &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(out.find("not computed: no bf16 peak known for NVIDIA GeForce RTX 3080 (give --peak-tflops)"), std::string::npos) << out;
  fs::remove_all(d);
}
