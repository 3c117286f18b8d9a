// NCCL kernel and API name classification on names seen in real profiles (nsys exports and
// PyTorch traces in ../shared/data/real, NCCL's own sources for the >= 2.19 scheme).
#include <gtest/gtest.h>

#include <string>

#include "collectives/nccl_kernel.hpp"

using namespace collectives;

namespace {
struct Case {
  const char* name;
  CollectiveType type;
  NcclAlgo algo;
  NcclDtype dtype;
  bool dev_scheme;
};

const Case kCases[] = {
    // NCCL >= 2.19 (nsys 2026.2 samples, NCCL generate.py)
    {"ncclDevKernel_SendRecv", CollectiveType::SendRecv, NcclAlgo::Unknown, NcclDtype::Unknown, true},
    {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", CollectiveType::SendRecv,
     NcclAlgo::Unknown, NcclDtype::Unknown, true},
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", CollectiveType::AllReduce, NcclAlgo::Ring, NcclDtype::F32, true},
    {"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", CollectiveType::AllReduce, NcclAlgo::Tree, NcclDtype::BF16, true},
    {"ncclDevKernel_ReduceScatter_Sum_f16_RING_LL", CollectiveType::ReduceScatter, NcclAlgo::Ring, NcclDtype::F16, true},
    {"ncclDevKernel_Reduce_Sum_u64_RING_LL", CollectiveType::Reduce, NcclAlgo::Ring, NcclDtype::U64, true},
    {"ncclDevKernel_AllGather_RING_LL", CollectiveType::AllGather, NcclAlgo::Ring, NcclDtype::Unknown, true},
    {"ncclDevKernel_AllGatherV_RING_LL", CollectiveType::AllGather, NcclAlgo::Ring, NcclDtype::Unknown, true},
    {"ncclDevKernel_Broadcast_RING_LL", CollectiveType::Broadcast, NcclAlgo::Ring, NcclDtype::Unknown, true},
    {"ncclDevKernel_AllReduce_Sum_f8e4m3_NVLS_TREE_SIMPLE", CollectiveType::AllReduce, NcclAlgo::NvlsTree,
     NcclDtype::F8E4M3, true},
    {"ncclDevKernel_Generic", CollectiveType::Generic, NcclAlgo::Unknown, NcclDtype::Unknown, true},
    // NCCL <= 2.18 (Kineto samples: DLRM, HTA)
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", CollectiveType::AllReduce,
     NcclAlgo::Ring, NcclDtype::F32, false},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", CollectiveType::SendRecv,
     NcclAlgo::Ring, NcclDtype::Unknown, false},
    {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", CollectiveType::Broadcast,
     NcclAlgo::Ring, NcclDtype::Unknown, false},
    {"ncclKernel_AllGather_RING_LL_Sum_int8_t", CollectiveType::AllGather, NcclAlgo::Ring, NcclDtype::Unknown, false},
    {"ncclKernel_ReduceScatter_RING_LL_Sum_half", CollectiveType::ReduceScatter, NcclAlgo::Ring, NcclDtype::F16, false},
    {"ncclKernel_AllReduce_TREE_LL128_Sum_bfloat16", CollectiveType::AllReduce, NcclAlgo::Tree, NcclDtype::BF16, false},
};
}  // namespace

TEST(NcclKernel, RealNames) {
  for (const auto& c : kCases) {
    auto info = classify_nccl_kernel(c.name);
    ASSERT_TRUE(info.has_value()) << c.name;
    EXPECT_EQ(info->type, c.type) << c.name;
    EXPECT_EQ(info->algo, c.algo) << c.name;
    EXPECT_EQ(info->dtype, c.dtype) << c.name;
    EXPECT_EQ(info->dev_kernel_scheme, c.dev_scheme) << c.name;
    EXPECT_TRUE(is_nccl_kernel(c.name));
  }
}

TEST(NcclKernel, NotNcclAndGarbage) {
  for (const char* n : {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "flash_fwd_kernel",
                        "vectorized_elementwise_kernel", "", "NCCL", "cutlass_nccl_like"})
    EXPECT_FALSE(classify_nccl_kernel(n).has_value()) << n;
  // nccl-prefixed but malformed: communication of unknown type, never a crash.
  std::string huge = "ncclDevKernel_" + std::string(100000, '_') + "AllReduce";
  for (std::string n : {std::string("nccl"), std::string("ncclKernel_"), std::string("ncclDevKernel__"),
                        std::string("ncclDevKernel_AllReduce_Sum"), std::string("ncclKernel_AllReduce"),
                        std::string("ncclDevKernel_AllReduce_Max_f32_RING_LL\0junk", 45), huge}) {
    auto info = classify_nccl_kernel(n);
    ASSERT_TRUE(info.has_value()) << n.substr(0, 40);
  }
  EXPECT_EQ(classify_nccl_kernel("ncclDevKernel_AllReduce_Sum").value().type, CollectiveType::AllReduce);
  EXPECT_EQ(classify_nccl_kernel("ncclFooKernel").value().type, CollectiveType::Unknown);
  EXPECT_EQ(dtype_bytes(NcclDtype::BF16), 2);
  EXPECT_STREQ(dtype_name(NcclDtype::F32), "f32");
  EXPECT_STREQ(collective_name(CollectiveType::ReduceScatter), "ReduceScatter");
}

TEST(NcclApi, RangesOfNcclsDomain) {
  EXPECT_EQ(classify_nccl_api("ncclAllReduce"), NcclApi::AllReduce);
  EXPECT_EQ(classify_nccl_api("ncclSend"), NcclApi::Send);
  EXPECT_EQ(classify_nccl_api("ncclRecv"), NcclApi::Recv);
  EXPECT_EQ(classify_nccl_api("ncclGroupStart"), NcclApi::GroupStart);
  EXPECT_EQ(classify_nccl_api("ncclGroupEnd"), NcclApi::GroupEnd);
  EXPECT_EQ(classify_nccl_api("ncclCommInitRank"), NcclApi::CommInit);
  EXPECT_EQ(classify_nccl_api("ncclCommInitRankConfig"), NcclApi::CommInit);
  EXPECT_EQ(classify_nccl_api("ncclCommSplit"), NcclApi::CommSplit);
  EXPECT_EQ(classify_nccl_api("ncclCommCount"), NcclApi::CommOther);
  EXPECT_EQ(classify_nccl_api("ncclAlltoAll"), NcclApi::AllToAll);
  EXPECT_EQ(classify_nccl_api("ProfilerStep#3"), NcclApi::None);
  EXPECT_EQ(collective_of_api(NcclApi::Send), CollectiveType::SendRecv);
  EXPECT_EQ(collective_of_api(NcclApi::GroupEnd), CollectiveType::Unknown);
}

TEST(NcclApi, PyTorchRanges) {
  EXPECT_EQ(classify_torch_nccl_range("nccl:all_reduce"), CollectiveType::AllReduce);
  EXPECT_EQ(classify_torch_nccl_range("nccl:all_to_all, op_id = 12"), CollectiveType::AllToAll);
  EXPECT_EQ(classify_torch_nccl_range("nccl:_all_gather_base"), CollectiveType::AllGather);
  EXPECT_EQ(classify_torch_nccl_range("nccl:_reduce_scatter_base"), CollectiveType::ReduceScatter);
  EXPECT_EQ(classify_torch_nccl_range("nccl:reduce_scatter_tensor_coalesced"), CollectiveType::ReduceScatter);
  EXPECT_EQ(classify_torch_nccl_range("nccl:broadcast"), CollectiveType::Broadcast);
  EXPECT_EQ(classify_torch_nccl_range("nccl:send 1->2"), CollectiveType::SendRecv);
  EXPECT_EQ(classify_torch_nccl_range("nccl:recv 2->1"), CollectiveType::SendRecv);
  EXPECT_FALSE(classify_torch_nccl_range("aten::mm").has_value());
}
