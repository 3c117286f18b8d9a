// Classification of NCCL kernels and NCCL NVTX API ranges by name.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace collectives {

enum class CollectiveType : uint8_t {
  AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, AllToAll, Gather, Scatter,
  Generic,  // ncclDevKernel_Generic: the collective is not in the name
  Unknown,  // an nccl* kernel whose name we do not recognise
};
const char* collective_name(CollectiveType t);  // "AllReduce", ...
CollectiveType collective_of_name(std::string_view name);  // the inverse (Unknown for any other name)

enum class NcclAlgo : uint8_t { Unknown, Ring, Tree, CollNet, Nvls, NvlsTree, Pat };
const char* algo_name(NcclAlgo a);

// Element type as NCCL names it (both schemes map here).
enum class NcclDtype : uint8_t { Unknown, I8, U8, I32, U32, I64, U64, F16, F32, F64, BF16, F8E4M3, F8E5M2 };
const char* dtype_name(NcclDtype d);  // "i8", "f32", "bf16", ...
int dtype_bytes(NcclDtype d);          // 0 for Unknown

// NCCL's protocol (the cost model's latency and bandwidth depend on it: LL for small messages,
// LL128, Simple for large ones); from the kernel name where NCCL puts it there.
enum class NcclProto : uint8_t { Unknown, LL, LL128, Simple };
const char* proto_name(NcclProto p);  // "LL", "LL128", "SIMPLE", "?"

struct NcclKernelInfo {
  CollectiveType type = CollectiveType::Unknown;
  NcclAlgo algo = NcclAlgo::Unknown;
  NcclProto proto = NcclProto::Unknown;
  NcclDtype dtype = NcclDtype::Unknown;
  // NCCL >= 2.19 (ncclDevKernel_*) names; false for the <= 2.18 ncclKernel_* scheme.
  bool dev_kernel_scheme = false;
};

// True for any NCCL kernel (shortName or demangled name starting with "nccl").
bool is_nccl_kernel(std::string_view name);

// Parses both naming schemes, tolerating a demangled signature suffix "(...)":
//  <= 2.18: ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<type>   e.g. ncclKernel_AllReduce_RING_LL_Sum_float
//  >= 2.19: ncclDevKernel_<Coll>[_<RedOp>_<ty>]_<ALGO>_<PROTO>  e.g. ncclDevKernel_AllReduce_Sum_f32_RING_LL,
//           ncclDevKernel_SendRecv, ncclDevKernel_Generic, ncclDevKernel_AllGather_RING_LL
// Returns nullopt when the name is not an NCCL kernel. In the old scheme, send/recv-only
// reductions use _Sum_int8_t placeholders: the dtype of non-reduction collectives is Unknown.
std::optional<NcclKernelInfo> classify_nccl_kernel(std::string_view name);

// NCCL's NVTX API ranges (domain "NCCL"): "ncclAllReduce", "ncclSend", "ncclGroupEnd", ...
enum class NcclApi : uint8_t {
  None, AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send, Recv, AllToAll, Gather, Scatter,
  GroupStart, GroupEnd, CommInit, CommSplit, CommDestroy, CommOther,
};
NcclApi classify_nccl_api(std::string_view range_name);
const char* nccl_api_name(NcclApi a);
// The collective an API call issues (Send/Recv -> SendRecv); Unknown for group/comm calls.
CollectiveType collective_of_api(NcclApi a);

// PyTorch's framework ranges "nccl:all_reduce", "nccl:all_to_all, op_id = 7", "nccl:_all_gather_base".
std::optional<CollectiveType> classify_torch_nccl_range(std::string_view range_name);

// The call that issued an NCCL kernel, named by NCCL (its NVTX range: classify_nccl_api) or by
// PyTorch (its "nccl:<op>" range or the kernel's "Collective name", prefixed "nccl:"): send and
// recv map to Send / Recv, PyTorch's other names (barrier, ...) to CommOther, anything else None.
NcclApi classify_call_name(std::string_view name);

}  // namespace collectives
