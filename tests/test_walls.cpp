// Which wall (docs/walls.md): kernel names of real exports and of the generator by class, the
// exclusive split of a hand-written timeline, and on a generated run with a slow GPU the physical
// consequence: the slow rank computes most and waits least (its peers' exposed communication is
// its own compute).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "h5_read.hpp"
#include "ranks/kernel_class.hpp"
#include "shell.hpp"
#include "timeline_builder.hpp"

namespace fs = std::filesystem;
using ranks::classify_kernel;
using ranks::KernelClass;

TEST(KernelClass, RealAndGeneratedNamesByClass) {
  // nsys-ai H100 capture, nvFuser capture, the generator's catalogue.
  EXPECT_EQ(classify_kernel("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("flash_fwd_kernel"), KernelClass::Attention);
  EXPECT_EQ(classify_kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"), KernelClass::Attention);
  EXPECT_EQ(classify_kernel("vectorized_elementwise_kernel"), KernelClass::Elementwise);
  EXPECT_EQ(classify_kernel("distribution_elementwise_grid_stride_kernel"), KernelClass::Elementwise);
  EXPECT_EQ(classify_kernel("multi_tensor_apply_kernel"), KernelClass::Elementwise);
  EXPECT_EQ(classify_kernel("layer_norm_grad_input_kernel"), KernelClass::Norm);
  EXPECT_EQ(classify_kernel("cunn_SoftMaxForward"), KernelClass::Reduction);
  EXPECT_EQ(classify_kernel("softmax_warp_forward"), KernelClass::Reduction);
  EXPECT_EQ(classify_kernel("reduce_kernel"), KernelClass::Reduction);
  EXPECT_EQ(classify_kernel("CatArrayBatchedCopy_vectorized"), KernelClass::Copy);
  EXPECT_EQ(classify_kernel("triton_poi_fused_add_mul_0"), KernelClass::Elementwise);
  EXPECT_EQ(classify_kernel("triton_red_fused_sum_1"), KernelClass::Reduction);
  EXPECT_EQ(classify_kernel("triton_poi_fused_convert_element_type_0"), KernelClass::Elementwise);  // not "conv"
  EXPECT_EQ(classify_kernel("triton_tem_fused_mm_0"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("cudnn::detail::implicit_convolve_sgemm"), KernelClass::Gemm);
  // Unknown names are their own class, never guessed.
  EXPECT_EQ(classify_kernel("nvfuser_none_f0_c0_r0_g0"), KernelClass::Other);
  EXPECT_EQ(classify_kernel("my_custom_kernel"), KernelClass::Other);
}

TEST(Walls, ExclusiveSplitAddsUpToTheWindow) {
  ranks::TimelineBuilder b;
  b.kernel(0, 10, "sm90_xmma_gemm_bf16", false);                // compute 0-10
  b.kernel(5, 20, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", true, 9);  // exposed 10-20
  b.kernel(25, 30, "vectorized_elementwise_kernel", false);     // memory 25-30
  b.kernel(28, 33, "CatArrayBatchedCopy", false, 8);            // memory 30-33
  b.copy(32, 36, 1024, ranks::CopyKind::HtoD);                  // copy 33-36
  b.kernel(36, 38, "my_custom_kernel", false);                  // other 36-38
  const auto w = ranks::wall_times(b.tl, 0, 40);
  EXPECT_EQ(w.window_ns, 40);
  EXPECT_DOUBLE_EQ(w.wall_ns[int(ranks::Wall::Compute)], 10);
  EXPECT_DOUBLE_EQ(w.wall_ns[int(ranks::Wall::Communication)], 10);
  EXPECT_DOUBLE_EQ(w.wall_ns[int(ranks::Wall::Memory)], 8);
  EXPECT_DOUBLE_EQ(w.wall_ns[int(ranks::Wall::Copy)], 3);
  EXPECT_DOUBLE_EQ(w.wall_ns[int(ranks::Wall::Other)], 2);
  EXPECT_DOUBLE_EQ(w.wall_ns[int(ranks::Wall::Idle)], 7);  // 20-25, 38-40
  EXPECT_DOUBLE_EQ(w.class_ns[int(KernelClass::Communication)], 15);
  EXPECT_DOUBLE_EQ(w.class_ns[int(KernelClass::Copy)], 5);
  EXPECT_DOUBLE_EQ(w.copy_ns, 4);
  // A window cuts what crosses it.
  const auto part = ranks::wall_times(b.tl, 8, 12);
  EXPECT_DOUBLE_EQ(part.wall_ns[int(ranks::Wall::Compute)], 2);
  EXPECT_DOUBLE_EQ(part.wall_ns[int(ranks::Wall::Communication)], 2);
}

TEST(Walls, TheSlowRankComputesMostAndWaitsLeast) {
  const fs::path d = fs::temp_directory_path() / ("ss-walls-" + std::to_string(::getpid()));
  fs::remove_all(d);
  int st = 0;
  auto out = testsh::sh(std::string(SS_SIM_BIN) + " " + (d / "run").string() +
                            " --layout 2x2x4 --hosts 4 --iterations 10 --fault slow_gpu:5:1:1.6 --conventions random --seed 4", &st);
  ASSERT_EQ(st, 0) << out;
  out = testsh::sh(std::string(SS_SCAN_BIN) + " " + (d / "run").string() + " -o " + (d / "o.h5").string() + " --summary " +
                       (d / "o.json").string(), &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(out.find("the step hits the "), std::string::npos) << out;
  // Per rank from /walls: the slow rank has the largest compute share and the smallest exposed
  // communication (its peers wait in their collectives for it).
  const auto ranks_col = h5read::numbers<int32_t>((d / "o.h5").string(), "/walls/rank");
  const auto [ms, width] = h5read::matrix<double>((d / "o.h5").string(), "/walls/wall_ms");
  ASSERT_EQ(width, size_t(ranks::kWalls));
  ASSERT_EQ(ranks_col.size(), 16u);
  size_t most_compute = 0, least_comm = 0;
  auto share = [&](size_t r, ranks::Wall w) {
    double t = 0;
    for (size_t i = 0; i < width; ++i) t += ms[r * width + i];
    return ms[r * width + size_t(w)] / t;
  };
  for (size_t r = 0; r < ranks_col.size(); ++r) {
    double t = 0;
    for (size_t i = 0; i < width; ++i) t += ms[r * width + i];
    EXPECT_GT(t, 0);
    if (share(r, ranks::Wall::Compute) > share(most_compute, ranks::Wall::Compute)) most_compute = r;
    if (share(r, ranks::Wall::Communication) < share(least_comm, ranks::Wall::Communication)) least_comm = r;
  }
  EXPECT_EQ(ranks_col[most_compute], 5);
  EXPECT_EQ(ranks_col[least_comm], 5);
  simdjson::dom::parser p;
  simdjson::dom::element s;
  ASSERT_EQ(p.load((d / "o.json").string()).get(s), simdjson::SUCCESS);
  double total = 0;
  for (auto [k, v] : simdjson::dom::object(s["walls"]["shares"])) total += double(v);
  EXPECT_NEAR(total, 1.0, 1e-5);  // six digits each in the summary
  fs::remove_all(d);
}

// Issue 37: with one slow GPU, its peers' NCCL time is waiting for it, not an interconnect wall.
// The report names the wait and the rank it is for; the waiting is charged to the slow rank's row.
TEST(Walls, OneSlowGpuIsItsPeersWaitNotTheCommunicationWall) {
  const fs::path d = fs::temp_directory_path() / ("ss-walls-wait-" + std::to_string(::getpid()));
  fs::remove_all(d);
  int st = 0;
  auto out = testsh::sh(std::string(SS_SIM_BIN) + " " + (d / "run").string() +
                            " --layout 2x2x4 --hosts 4 --iterations 10 --fault slow_gpu:5:1:1.3 --seed 4", &st);
  ASSERT_EQ(st, 0) << out;
  out = testsh::sh(std::string(SS_SCAN_BIN) + " " + (d / "run").string() + " -o " + (d / "o.h5").string() + " --summary " +
                       (d / "o.json").string(), &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_EQ(out.find("communication-bound"), std::string::npos) << out;
  EXPECT_NE(out.find("in collectives for rank 5 ("), std::string::npos) << out;
  // Per rank: the slow rank waits least and is charged the most waiting.
  const auto rank = h5read::numbers<int32_t>((d / "o.h5").string(), "/walls/rank");
  const auto waiting = h5read::numbers<double>((d / "o.h5").string(), "/walls/waiting_ms");
  const auto caused = h5read::numbers<double>((d / "o.h5").string(), "/walls/caused_wait_ms");
  ASSERT_EQ(rank.size(), 16u);
  const size_t most_caused = size_t(std::max_element(caused.begin(), caused.end()) - caused.begin());
  const size_t least_waiting = size_t(std::min_element(waiting.begin(), waiting.end()) - waiting.begin());
  EXPECT_EQ(rank[most_caused], 5);
  EXPECT_EQ(rank[least_waiting], 5);
  simdjson::dom::parser p;
  simdjson::dom::element s;
  ASSERT_EQ(p.load((d / "o.json").string()).get(s), simdjson::SUCCESS);
  EXPECT_NE(std::string_view(s["walls"]["wall"]), "communication") << out;
  EXPECT_EQ(int64_t(s["walls"]["waiting_for"].at(0)["rank"]), 5) << out;
  double total = 0;
  for (auto [k, v] : simdjson::dom::object(s["walls"]["shares"])) total += double(v);
  EXPECT_NEAR(total, 1.0, 1e-5);
  fs::remove_all(d);
}
