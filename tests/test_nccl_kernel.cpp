// NCCL kernel and API name classification on names seen in real profiles (nsys exports and
// PyTorch traces in ../shared/data/real, ../shared/docs/nsys-export-notes.md section 4 and 6),
// NCCL's own sources for the >= 2.19 scheme, and garbage.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "collectives/nccl_kernel.hpp"

using namespace collectives;
using namespace std::string_literals;

namespace {
struct Case {
  const char* name;
  CollectiveType type;
  NcclAlgo algo;
  NcclDtype dtype;
  bool dev_scheme;
};

using C = CollectiveType;
using A = NcclAlgo;
using D = NcclDtype;

const Case kCases[] = {
    // NCCL >= 2.19 (nsys 2026.2 samples, NCCL src/device/generate.py)
    {"ncclDevKernel_SendRecv", C::SendRecv, A::Unknown, D::Unknown, true},
    {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", C::SendRecv, A::Unknown, D::Unknown,
     true},
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", C::AllReduce, A::Ring, D::F32, true},
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", C::AllReduce, A::Ring,
     D::F32, true},
    {"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", C::AllReduce, A::Tree, D::BF16, true},
    {"ncclDevKernel_AllReduce_Sum_i8_RING_LL", C::AllReduce, A::Ring, D::I8, true},
    {"ncclDevKernel_AllReduce_Sum_u8_RING_LL", C::AllReduce, A::Ring, D::U8, true},
    {"ncclDevKernel_AllReduce_Sum_i32_TREE_LL", C::AllReduce, A::Tree, D::I32, true},
    {"ncclDevKernel_AllReduce_Sum_u32_RING_LL", C::AllReduce, A::Ring, D::U32, true},
    {"ncclDevKernel_AllReduce_Sum_i64_RING_LL", C::AllReduce, A::Ring, D::I64, true},
    {"ncclDevKernel_AllReduce_Sum_f64_RING_LL", C::AllReduce, A::Ring, D::F64, true},
    {"ncclDevKernel_AllReduce_Sum_f8e5m2_RING_LL", C::AllReduce, A::Ring, D::F8E5M2, true},
    {"ncclDevKernel_ReduceScatter_Sum_f16_RING_LL", C::ReduceScatter, A::Ring, D::F16, true},
    {"ncclDevKernel_Reduce_Sum_u64_RING_LL", C::Reduce, A::Ring, D::U64, true},
    {"ncclDevKernel_AllGather_RING_LL", C::AllGather, A::Ring, D::Unknown, true},
    {"ncclDevKernel_AllGatherV_RING_LL", C::AllGather, A::Ring, D::Unknown, true},
    {"ncclDevKernel_Broadcast_RING_LL", C::Broadcast, A::Ring, D::Unknown, true},
    {"ncclDevKernel_Generic", C::Generic, A::Unknown, D::Unknown, true},
    {"ncclDevKernel_Generic_4", C::Generic, A::Unknown, D::Unknown, true},
    // Other algorithms / protocols (not emitted by best_kernel() today, but the shape allows them)
    {"ncclDevKernel_AllReduce_Sum_f8e4m3_NVLS_TREE_SIMPLE", C::AllReduce, A::NvlsTree, D::F8E4M3, true},
    {"ncclDevKernel_AllReduce_Sum_f32_NVLS_SIMPLE", C::AllReduce, A::Nvls, D::F32, true},
    {"ncclDevKernel_AllReduce_Sum_f32_COLLNET_DIRECT_SIMPLE", C::AllReduce, A::CollNet, D::F32, true},
    {"ncclDevKernel_AllReduce_Sum_f32_COLLNET_CHAIN_LL128", C::AllReduce, A::CollNet, D::F32, true},
    {"ncclDevKernel_ReduceScatter_Sum_bf16_PAT_SIMPLE", C::ReduceScatter, A::Pat, D::BF16, true},
    {"ncclDevKernel_AllGather_PAT_SIMPLE", C::AllGather, A::Pat, D::Unknown, true},
    {"ncclDevKernel_AllReduce_MinMax_f32_RING_LL", C::AllReduce, A::Unknown, D::Unknown, true},  // odd RedOp
    {"ncclDevKernel_AllReduce_Max_f32_RING_LL", C::AllReduce, A::Ring, D::F32, true},
    {"ncclDevKernel_AllReduce_f32_RING_LL", C::AllReduce, A::Ring, D::F32, true},  // no RedOp
    {"ncclDevKernel_AllReduce_RING_LL", C::AllReduce, A::Ring, D::Unknown, true},  // neither
    {"ncclDevKernel_AllReduce_Sum_f32_RING", C::AllReduce, A::Ring, D::F32, true},  // no protocol
    // NCCL 2.8 .. 2.18 (Kineto samples: DLRM, HTA; NCCL_KERN_NAME v2.18.6-1)
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", C::AllReduce, A::Ring,
     D::F32, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_float", C::AllReduce, A::Ring, D::F32, false},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", C::SendRecv, A::Ring,
     D::Unknown, false},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", C::SendRecv, A::Ring, D::Unknown, false},
    {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", C::Broadcast, A::Ring,
     D::Unknown, false},
    {"ncclKernel_AllGather_RING_LL_Sum_int8_t", C::AllGather, A::Ring, D::Unknown, false},
    {"ncclKernel_ReduceScatter_RING_LL_Sum_half", C::ReduceScatter, A::Ring, D::F16, false},
    {"ncclKernel_Reduce_RING_LL_Sum_double", C::Reduce, A::Ring, D::F64, false},
    {"ncclKernel_AllReduce_TREE_LL128_Sum_bfloat16", C::AllReduce, A::Tree, D::BF16, false},
    {"ncclKernel_AllReduce_TREE_LL_Sum___nv_bfloat16", C::AllReduce, A::Tree, D::BF16, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_int8_t", C::AllReduce, A::Ring, D::I8, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_uint8_t", C::AllReduce, A::Ring, D::U8, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_int32_t", C::AllReduce, A::Ring, D::I32, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_uint32_t", C::AllReduce, A::Ring, D::U32, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_int64_t", C::AllReduce, A::Ring, D::I64, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_uint64_t", C::AllReduce, A::Ring, D::U64, false},
    {"ncclKernel_AllReduce_RING_LL_Prod_float", C::AllReduce, A::Ring, D::F32, false},
    {"ncclKernel_AllReduce_RING_LL_Min_half", C::AllReduce, A::Ring, D::F16, false},
    {"ncclKernel_AllReduce_RING_LL_Max_double", C::AllReduce, A::Ring, D::F64, false},
    {"ncclKernel_AllReduce_RING_LL_PreMulSum_float", C::AllReduce, A::Ring, D::F32, false},
    {"ncclKernel_AllReduce_RING_LL_SumPostDiv_uint32_t", C::AllReduce, A::Ring, D::U32, false},
    {"ncclKernel_AllReduce_COLLNET_DIRECT_SIMPLE_Sum_float", C::AllReduce, A::CollNet, D::F32, false},
    {"ncclKernel_AllReduce_COLLNET_LL_Sum_float", C::AllReduce, A::CollNet, D::F32, false},
    {"ncclKernel_AllReduce_NVLS_TREE_SIMPLE_Sum_float", C::AllReduce, A::NvlsTree, D::F32, false},
    {"ncclKernel_AllReduce_NVLS_SIMPLE_Sum_float", C::AllReduce, A::Nvls, D::F32, false},
    {"ncclKernel_AllReduce_RING_LL_Sum_quad", C::AllReduce, A::Ring, D::Unknown, false},  // unknown type
    // NCCL <= 2.7
    {"ncclAllReduceRingLLKernel_sum_f32(ncclColl)", C::AllReduce, A::Ring, D::F32, false},
    {"ncclAllReduceRingLLKernel_sum_f16", C::AllReduce, A::Ring, D::F16, false},
    {"ncclAllReduceTreeLL128Kernel_sum_bf16", C::AllReduce, A::Tree, D::BF16, false},
    {"ncclReduceScatterRingKernel_max_f64", C::ReduceScatter, A::Ring, D::F64, false},
    {"ncclBroadcastRingLLKernel_copy_i8", C::Broadcast, A::Ring, D::Unknown, false},
    {"ncclAllGatherRingLLKernel_copy_i8(ncclColl)", C::AllGather, A::Ring, D::Unknown, false},
    {"ncclSendRecvKernel_copy_i8(ncclColl)", C::SendRecv, A::Unknown, D::Unknown, false},
    {"ncclAllReduceKernel_sum_f32", C::AllReduce, A::Unknown, D::F32, false},
};
}  // namespace

TEST(NcclKernel, RealNames) {
  for (const auto& c : kCases) {
    auto info = classify_nccl_kernel(c.name);
    ASSERT_TRUE(info.has_value()) << c.name;
    EXPECT_EQ(info->type, c.type) << c.name << " -> " << collective_name(info->type);
    EXPECT_EQ(info->algo, c.algo) << c.name << " -> " << algo_name(info->algo);
    EXPECT_EQ(info->dtype, c.dtype) << c.name << " -> " << dtype_name(info->dtype);
    EXPECT_EQ(info->dev_kernel_scheme, c.dev_scheme) << c.name;
    EXPECT_TRUE(is_nccl_kernel(c.name)) << c.name;
  }
}

TEST(NcclKernel, NotNccl) {
  for (const char* n : {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64warpgroupsize1x1x1_execute",
                        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
                        "flash_fwd_kernel", "", "NCCL", "Nccl", "ncc", "cutlass_nccl_like", " ncclDevKernel_SendRecv",
                        "void ncclKernel_AllReduce_RING_LL_Sum_float", "cross_device_reduce_1stage<__nv_bfloat16, 8>",
                        "Memcpy DtoD (Device -> Device)"}) {
    EXPECT_FALSE(is_nccl_kernel(n)) << n;
    EXPECT_FALSE(classify_nccl_kernel(n).has_value()) << n;
  }
}

// Decision: the "nccl" prefix (case-sensitive) means NCCL communication, as nsys's `LIKE 'nccl%'`
// and HTA's `^nccl` do. Forks (NCCLX "ncclx...") and kernels of no known scheme are communication
// of Unknown type rather than compute.
TEST(NcclKernel, UnknownNcclKernelsAreCommunication) {
  for (const char* n : {"ncclx", "ncclxKernel_AllReduce", "ncclFooKernel", "ncclReduceFooKernel_sum_f32",
                        "ncclKernel_Frobnicate_RING_LL_Sum_float", "ncclDevKernel_Frobnicate_RING_LL"}) {
    auto info = classify_nccl_kernel(n);
    ASSERT_TRUE(info.has_value()) << n;
    EXPECT_EQ(info->type, CollectiveType::Unknown) << n;
    EXPECT_EQ(info->dtype, NcclDtype::Unknown) << n;
    EXPECT_TRUE(is_nccl_kernel(n)) << n;
  }
}

TEST(NcclKernel, GarbageNeverCrashes) {
  std::string huge_us = "ncclDevKernel_" + std::string(100000, '_') + "AllReduce";
  std::string huge_tok = "ncclKernel_AllReduce_" + std::string(100000, 'X');
  std::string huge_old = "ncclKernel_AllReduce_" + std::string(50000, 'X') + "_LL_Sum_" + std::string(50000, 'f');
  std::string huge_paren = "ncclDevKernel_AllReduce_Sum_f32_RING_LL" + std::string(100000, '(');
  std::string huge_pre = "ncclAllReduce" + std::string(100000, 'K') + "Kernel_";
  std::string all_bytes = "nccl";
  for (int c = 0; c < 256; ++c) all_bytes.push_back(char(c));
  const std::string cases[] = {
      "nccl", "ncclKernel_", "ncclDevKernel_", "ncclDevKernel__", "ncclDevKernel___", "ncclKernel__",
      "ncclKernel_AllReduce", "ncclKernel_AllReduce_", "ncclKernel_AllReduce_RING", "ncclKernel_AllReduce_RING_LL",
      "ncclKernel_AllReduce_RING_LL_", "ncclKernel_AllReduce_RING_LL_Sum", "ncclKernel_AllReduce_RING_LL_Sum_",
      "ncclKernel_AllReduce_LL_Sum_float", "ncclKernel_AllReduce__LL_Sum_float", "ncclDevKernel_AllReduce_Sum",
      "ncclDevKernel_AllReduce_Sum_", "ncclDevKernel_AllReduce_Sum_f32", "ncclDevKernel_AllReduce_Sum_f32_",
      "ncclDevKernel_AllReduce_Sum_f32__LL", "ncclDevKernel_AllReduce_Sum_f32_LL", "ncclDevKernel_(",
      "ncclDevKernel_AllReduce(", "nccl(", "ncclKernel_(ncclDevComm*)", "ncclKernel", "ncclKernel_ ", "nccl_",
      "ncclAllReduceKernel_", "ncclAllReduceKernel", "ncclKernel_Kernel_Kernel_", "nccl\0"s, "nccl\0\0\0"s,
      "ncclDevKernel_AllReduce_Max_f32_RING_LL\0junk"s, "ncclDevKernel_\0AllReduce"s, "ncclKernel_\0"s,
      "ncclKernel_AllReduce_RING_LL_Sum_float\0(ncclDevComm*)"s, "ncclDevKernel_AllReduce_Sum_f32_RING_\0LL"s,
      "nccl\xff\xfe\x80", "ncclDevKernel_\xff", huge_us, huge_tok, huge_old, huge_paren, huge_pre, all_bytes,
  };
  for (const std::string& n : cases) {
    auto info = classify_nccl_kernel(n);
    ASSERT_TRUE(info.has_value()) << n.substr(0, 60);
    // Whatever was read, the enums are in range and their names usable.
    EXPECT_NE(collective_name(info->type), nullptr);
    EXPECT_NE(algo_name(info->algo), nullptr);
    EXPECT_NE(dtype_name(info->dtype), nullptr);
    (void)classify_nccl_api(n);
    (void)classify_torch_nccl_range(n);
  }
  // Embedded NUL: the string_view length counts, not the C string.
  auto nul = classify_nccl_kernel("ncclDevKernel_AllReduce_Max_f32_RING_LL\0junk"s);
  EXPECT_EQ(nul->type, CollectiveType::AllReduce);
  EXPECT_EQ(nul->dtype, NcclDtype::F32);
  EXPECT_EQ(nul->algo, NcclAlgo::Unknown);  // the protocol token "LL\0junk" is not a protocol
  EXPECT_EQ(classify_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float\0(ncclDevComm*)"s)->dtype,
            NcclDtype::Unknown);
  // Truncated names keep what they have.
  EXPECT_EQ(classify_nccl_kernel("ncclDevKernel_AllReduce_Sum")->type, CollectiveType::AllReduce);
  EXPECT_EQ(classify_nccl_kernel("ncclKernel_AllReduce_RING")->algo, NcclAlgo::Ring);
  EXPECT_EQ(classify_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum")->dtype, NcclDtype::Unknown);
  EXPECT_EQ(classify_nccl_kernel(huge_us)->type, CollectiveType::Unknown);
  EXPECT_EQ(classify_nccl_kernel(huge_paren)->dtype, NcclDtype::F32);
  // A prefix of the input is never read past its length.
  std::string_view cut = std::string_view("ncclDevKernel_AllReduce_Sum_f32_RING_LL").substr(0, 27);
  EXPECT_EQ(classify_nccl_kernel(cut)->dtype, NcclDtype::Unknown);  // "..._Sum" only
}

TEST(NcclKernel, NamesAndSizes) {
  EXPECT_STREQ(collective_name(CollectiveType::ReduceScatter), "ReduceScatter");
  EXPECT_STREQ(collective_name(CollectiveType::Generic), "Generic");
  EXPECT_STREQ(collective_name(CollectiveType::Unknown), "Unknown");
  EXPECT_STREQ(algo_name(NcclAlgo::NvlsTree), "NVLS_TREE");
  EXPECT_STREQ(algo_name(NcclAlgo::Unknown), "");
  EXPECT_STREQ(dtype_name(NcclDtype::F32), "f32");
  EXPECT_STREQ(dtype_name(NcclDtype::F8E5M2), "f8e5m2");
  EXPECT_STREQ(dtype_name(NcclDtype::Unknown), "");
  EXPECT_EQ(dtype_bytes(NcclDtype::Unknown), 0);
  EXPECT_EQ(dtype_bytes(NcclDtype::I8), 1);
  EXPECT_EQ(dtype_bytes(NcclDtype::F8E4M3), 1);
  EXPECT_EQ(dtype_bytes(NcclDtype::BF16), 2);
  EXPECT_EQ(dtype_bytes(NcclDtype::F16), 2);
  EXPECT_EQ(dtype_bytes(NcclDtype::U32), 4);
  EXPECT_EQ(dtype_bytes(NcclDtype::F64), 8);
  EXPECT_EQ(dtype_bytes(NcclDtype::I64), 8);
}

TEST(NcclApi, RangesOfNcclDomain) {
  struct ApiCase {
    const char* name;
    NcclApi api;
    CollectiveType coll;
  };
  const ApiCase cases[] = {
      {"ncclAllReduce", NcclApi::AllReduce, CollectiveType::AllReduce},
      {"ncclAllGather", NcclApi::AllGather, CollectiveType::AllGather},
      {"ncclReduceScatter", NcclApi::ReduceScatter, CollectiveType::ReduceScatter},
      {"ncclBroadcast", NcclApi::Broadcast, CollectiveType::Broadcast},
      {"ncclBcast", NcclApi::Broadcast, CollectiveType::Broadcast},
      {"ncclReduce", NcclApi::Reduce, CollectiveType::Reduce},
      {"ncclSend", NcclApi::Send, CollectiveType::SendRecv},
      {"ncclRecv", NcclApi::Recv, CollectiveType::SendRecv},
      {"ncclAllToAll", NcclApi::AllToAll, CollectiveType::AllToAll},
      {"ncclAlltoAll", NcclApi::AllToAll, CollectiveType::AllToAll},
      {"ncclGather", NcclApi::Gather, CollectiveType::Gather},
      {"ncclScatter", NcclApi::Scatter, CollectiveType::Scatter},
      {"ncclGroupStart", NcclApi::GroupStart, CollectiveType::Unknown},
      {"ncclGroupEnd", NcclApi::GroupEnd, CollectiveType::Unknown},
      {"ncclCommInitRank", NcclApi::CommInit, CollectiveType::Unknown},
      {"ncclCommInitRankConfig", NcclApi::CommInit, CollectiveType::Unknown},
      {"ncclCommInitRankScalable", NcclApi::CommInit, CollectiveType::Unknown},
      {"ncclCommInitAll", NcclApi::CommInit, CollectiveType::Unknown},
      {"ncclCommSplit", NcclApi::CommSplit, CollectiveType::Unknown},
      {"ncclCommDestroy", NcclApi::CommDestroy, CollectiveType::Unknown},
      {"ncclCommAbort", NcclApi::CommDestroy, CollectiveType::Unknown},
      {"ncclCommCount", NcclApi::CommOther, CollectiveType::Unknown},
      {"ncclCommFinalize", NcclApi::CommOther, CollectiveType::Unknown},
      {"ncclCommUserRank", NcclApi::CommOther, CollectiveType::Unknown},
      {"ncclMemAlloc", NcclApi::CommOther, CollectiveType::Unknown},
      {"ncclCommShrink", NcclApi::CommOther, CollectiveType::Unknown},
      // Not NCCL API ranges
      {"ProfilerStep#3", NcclApi::None, CollectiveType::Unknown},
      {"", NcclApi::None, CollectiveType::Unknown},
      {"nccl", NcclApi::None, CollectiveType::Unknown},
      {"ncclx", NcclApi::None, CollectiveType::Unknown},
      {"nccl:all_reduce", NcclApi::None, CollectiveType::Unknown},
      {"nccl:all_to_all, op_id = 12", NcclApi::None, CollectiveType::Unknown},
      {"ncclAllReduce ", NcclApi::None, CollectiveType::Unknown},
      {"ncclAllReducex", NcclApi::CommOther, CollectiveType::Unknown},  // an unknown API-shaped name
      {"NCCL", NcclApi::None, CollectiveType::Unknown},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", NcclApi::None,
       CollectiveType::Unknown},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(classify_nccl_api(c.name), c.api) << c.name;
    EXPECT_EQ(collective_of_api(classify_nccl_api(c.name)), c.coll) << c.name;
  }
  EXPECT_EQ(classify_nccl_api("ncclSend\0junk"s), NcclApi::None);
  EXPECT_EQ(classify_nccl_api("ncclSend"s + std::string(100000, 'x')), NcclApi::CommOther);
  // nccl_api_name round-trips for the specific APIs.
  for (NcclApi a : {NcclApi::AllReduce, NcclApi::AllGather, NcclApi::ReduceScatter, NcclApi::Broadcast,
                    NcclApi::Reduce, NcclApi::Send, NcclApi::Recv, NcclApi::AllToAll, NcclApi::Gather,
                    NcclApi::Scatter, NcclApi::GroupStart, NcclApi::GroupEnd, NcclApi::CommInit, NcclApi::CommSplit,
                    NcclApi::CommDestroy})
    EXPECT_EQ(classify_nccl_api(nccl_api_name(a)), a) << nccl_api_name(a);
  EXPECT_STREQ(nccl_api_name(NcclApi::None), "");
}

TEST(NcclApi, PyTorchRanges) {
  struct TorchCase {
    const char* name;
    CollectiveType coll;
  };
  const TorchCase cases[] = {
      {"nccl:all_reduce", CollectiveType::AllReduce},
      {"nccl:all_reduce_barrier", CollectiveType::AllReduce},
      {"nccl:allreduce_coalesced", CollectiveType::AllReduce},
      {"nccl:all_to_all", CollectiveType::AllToAll},
      {"nccl:all_to_all, op_id = 12", CollectiveType::AllToAll},
      {"nccl:alltoall_base", CollectiveType::AllToAll},
      {"nccl:_all_gather_base", CollectiveType::AllGather},
      {"nccl:_allgather_base", CollectiveType::AllGather},
      {"nccl:all_gather", CollectiveType::AllGather},
      {"nccl:all_gather_into_tensor_coalesced", CollectiveType::AllGather},
      {"nccl:_reduce_scatter_base", CollectiveType::ReduceScatter},
      {"nccl:reduce_scatter", CollectiveType::ReduceScatter},
      {"nccl:reduce_scatter_tensor_coalesced", CollectiveType::ReduceScatter},
      {"nccl:broadcast", CollectiveType::Broadcast},
      {"nccl:reduce", CollectiveType::Reduce},
      {"nccl:send 1->2", CollectiveType::SendRecv},
      {"nccl:recv 2->1", CollectiveType::SendRecv},
      {"nccl:gather", CollectiveType::Gather},
      {"nccl:scatter", CollectiveType::Scatter},
      {"nccl:barrier", CollectiveType::Unknown},
      {"nccl:", CollectiveType::Unknown},
      {"nccl:___", CollectiveType::Unknown},
  };
  for (const auto& c : cases) {
    auto t = classify_torch_nccl_range(c.name);
    ASSERT_TRUE(t.has_value()) << c.name;
    EXPECT_EQ(*t, c.coll) << c.name;
  }
  for (const char* n : {"aten::mm", "", "nccl", "ncclAllReduce", "NCCL:all_reduce", "gloo:all_reduce",
                        "record_param_comms", "c10d::allreduce_", "nccl :all_reduce"})
    EXPECT_FALSE(classify_torch_nccl_range(n).has_value()) << n;
  EXPECT_EQ(classify_torch_nccl_range("nccl:" + std::string(100000, '_')), CollectiveType::Unknown);
}

// The protocol where the kernel name carries it (all three naming schemes); the cost model's
// latency and bandwidth depend on it.
TEST(NcclKernel, ProtocolFromTheName) {
  const struct {
    const char* name;
    NcclProto proto;
  } cases[] = {
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", NcclProto::LL},
      {"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128", NcclProto::LL128},
      {"ncclDevKernel_AllGather_RING_SIMPLE", NcclProto::Simple},
      {"ncclDevKernel_ReduceScatter_Sum_f32_NVLS_TREE_SIMPLE", NcclProto::Simple},
      {"ncclDevKernel_SendRecv", NcclProto::Unknown},
      {"ncclDevKernel_Generic", NcclProto::Unknown},
      {"ncclKernel_AllReduce_RING_LL128_Sum_float", NcclProto::LL128},
      {"ncclKernel_AllReduce_COLLNET_DIRECT_SIMPLE_Sum_half", NcclProto::Simple},
      {"ncclAllReduceRingLLKernel_sum_f32(ncclColl)", NcclProto::LL},
      {"ncclAllReduceRingKernel_sum_f32(ncclColl)", NcclProto::Simple},
  };
  for (const auto& c : cases) {
    auto info = classify_nccl_kernel(c.name);
    ASSERT_TRUE(info.has_value()) << c.name;
    EXPECT_EQ(info->proto, c.proto) << c.name << ": " << proto_name(info->proto);
  }
  EXPECT_STREQ(proto_name(NcclProto::LL128), "LL128");
}
