// NCCL kernel and API names -> collective type, algorithm, datatype. Names come from profiles
// (untrusted): string_view parsing only, never indexing past the end.
#include "collectives/nccl_kernel.hpp"

#include <array>
#include <string>
#include <utility>

namespace collectives {
namespace {

using sv = std::string_view;

bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }

// Strip a demangled signature "(...)" and anything after.
sv base_name(sv s) {
  auto p = s.find('(');
  return p == sv::npos ? s : s.substr(0, p);
}

// Next '_'-separated token; advances s.
sv token(sv& s) {
  auto p = s.find('_');
  sv t = s.substr(0, p);
  s = p == sv::npos ? sv() : s.substr(p + 1);
  return t;
}

constexpr std::pair<sv, CollectiveType> kColls[] = {
    {"AllReduce", CollectiveType::AllReduce},         {"AllGatherV", CollectiveType::AllGather},
    {"AllGather", CollectiveType::AllGather},         {"ReduceScatter", CollectiveType::ReduceScatter},
    {"Broadcast", CollectiveType::Broadcast},         {"Reduce", CollectiveType::Reduce},
    {"SendRecv", CollectiveType::SendRecv},           {"AllToAll", CollectiveType::AllToAll},
    {"AlltoAll", CollectiveType::AllToAll},           {"Gather", CollectiveType::Gather},
    {"Scatter", CollectiveType::Scatter},             {"Generic", CollectiveType::Generic},
};

CollectiveType coll_of(sv t) {
  for (auto [n, c] : kColls)
    if (t == n) return c;
  return CollectiveType::Unknown;
}

NcclAlgo algo_of(sv t) {
  if (t == "RING") return NcclAlgo::Ring;
  if (t == "TREE") return NcclAlgo::Tree;
  if (t == "COLLNET" || t == "COLLNETDIRECT" || t == "COLLNETCHAIN") return NcclAlgo::CollNet;
  if (t == "NVLS") return NcclAlgo::Nvls;
  if (t == "NVLSTREE") return NcclAlgo::NvlsTree;
  if (t == "PAT") return NcclAlgo::Pat;
  return NcclAlgo::Unknown;
}

constexpr std::pair<sv, NcclDtype> kTypes[] = {
    // NCCL >= 2.19 short names
    {"i8", NcclDtype::I8}, {"u8", NcclDtype::U8}, {"i32", NcclDtype::I32}, {"u32", NcclDtype::U32},
    {"i64", NcclDtype::I64}, {"u64", NcclDtype::U64}, {"f16", NcclDtype::F16}, {"f32", NcclDtype::F32},
    {"f64", NcclDtype::F64}, {"bf16", NcclDtype::BF16}, {"f8e4m3", NcclDtype::F8E4M3}, {"f8e5m2", NcclDtype::F8E5M2},
    // NCCL <= 2.18 C type names
    {"int8_t", NcclDtype::I8}, {"uint8_t", NcclDtype::U8}, {"int32_t", NcclDtype::I32}, {"uint32_t", NcclDtype::U32},
    {"int64_t", NcclDtype::I64}, {"uint64_t", NcclDtype::U64}, {"half", NcclDtype::F16}, {"float", NcclDtype::F32},
    {"double", NcclDtype::F64}, {"bf16", NcclDtype::BF16}, {"bfloat16", NcclDtype::BF16},
    {"__nv_bfloat16", NcclDtype::BF16}, {"__nv_fp8_e4m3", NcclDtype::F8E4M3}, {"__nv_fp8_e5m2", NcclDtype::F8E5M2},
};

NcclDtype dtype_of(sv t) {
  for (auto [n, d] : kTypes)
    if (t == n) return d;
  return NcclDtype::Unknown;
}

bool reduces(CollectiveType t) {
  return t == CollectiveType::AllReduce || t == CollectiveType::ReduceScatter || t == CollectiveType::Reduce;
}

bool is_redop(sv t) {
  return t == "Sum" || t == "Prod" || t == "Min" || t == "Max" || t == "Avg" || t == "PreMulSum" ||
         t == "SumPostDiv";
}

}  // namespace

const char* collective_name(CollectiveType t) {
  switch (t) {
    case CollectiveType::AllReduce: return "AllReduce";
    case CollectiveType::AllGather: return "AllGather";
    case CollectiveType::ReduceScatter: return "ReduceScatter";
    case CollectiveType::Broadcast: return "Broadcast";
    case CollectiveType::Reduce: return "Reduce";
    case CollectiveType::SendRecv: return "SendRecv";
    case CollectiveType::AllToAll: return "AllToAll";
    case CollectiveType::Gather: return "Gather";
    case CollectiveType::Scatter: return "Scatter";
    case CollectiveType::Generic: return "Generic";
    case CollectiveType::Unknown: return "Unknown";
  }
  return "Unknown";
}

const char* algo_name(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::Ring: return "RING";
    case NcclAlgo::Tree: return "TREE";
    case NcclAlgo::CollNet: return "COLLNET";
    case NcclAlgo::Nvls: return "NVLS";
    case NcclAlgo::NvlsTree: return "NVLS_TREE";
    case NcclAlgo::Pat: return "PAT";
    case NcclAlgo::Unknown: return "";
  }
  return "";
}

const char* dtype_name(NcclDtype d) {
  static constexpr std::array<const char*, 13> names = {"",    "i8",  "u8",  "i32", "u32",    "i64",   "u64",
                                                        "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
  return names[size_t(d)];
}

int dtype_bytes(NcclDtype d) {
  switch (d) {
    case NcclDtype::I8: case NcclDtype::U8: case NcclDtype::F8E4M3: case NcclDtype::F8E5M2: return 1;
    case NcclDtype::F16: case NcclDtype::BF16: return 2;
    case NcclDtype::I32: case NcclDtype::U32: case NcclDtype::F32: return 4;
    case NcclDtype::I64: case NcclDtype::U64: case NcclDtype::F64: return 8;
    case NcclDtype::Unknown: return 0;
  }
  return 0;
}

bool is_nccl_kernel(std::string_view name) { return starts(name, "nccl"); }

std::optional<NcclKernelInfo> classify_nccl_kernel(std::string_view name) {
  if (!is_nccl_kernel(name)) return std::nullopt;
  sv s = base_name(name);
  NcclKernelInfo info;
  if (starts(s, "ncclDevKernel_")) {
    // >= 2.19: ncclDevKernel_<Coll>[_<RedOp>_<ty>]_<ALGO>_<PROTO>; algorithms may contain '_'.
    info.dev_kernel_scheme = true;
    s.remove_prefix(sizeof("ncclDevKernel_") - 1);
    info.type = coll_of(token(s));
    if (!s.empty() && reduces(info.type)) {
      sv op = token(s);
      if (is_redop(op)) info.dtype = dtype_of(token(s));
      else s = sv();  // not the expected shape: keep the collective only
    }
    // Remaining: ALGO[_ALGO2]_PROTO; the protocol is the last token.
    auto last = s.rfind('_');
    if (last != sv::npos) {
      sv algo = s.substr(0, last);
      std::string compact;
      for (char c : algo.substr(0, 32))
        if (c != '_') compact += c;
      info.algo = algo_of(compact);
    }
    return info;
  }
  if (starts(s, "ncclKernel_")) {
    // <= 2.18: ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<type>; send/recv-only kernels carry
    // placeholder Sum_int8_t, so the dtype only means something for reductions.
    s.remove_prefix(sizeof("ncclKernel_") - 1);
    info.type = coll_of(token(s));
    // Algorithm tokens up to the protocol (LL, LL128, SIMPLE).
    std::string algo;
    for (int guard = 0; !s.empty() && guard < 4; ++guard) {
      sv t = token(s);
      if (t == "LL" || t == "LL128" || t == "SIMPLE") break;
      algo += std::string(t);
    }
    info.algo = algo_of(algo);
    if (!s.empty()) {
      sv op = token(s);
      if (is_redop(op) && reduces(info.type)) info.dtype = dtype_of(s);
    }
    return info;
  }
  return info;  // another nccl* kernel: communication, type unknown
}

NcclApi classify_nccl_api(std::string_view n) {
  static constexpr std::pair<sv, NcclApi> apis[] = {
      {"ncclAllReduce", NcclApi::AllReduce},     {"ncclAllGather", NcclApi::AllGather},
      {"ncclReduceScatter", NcclApi::ReduceScatter}, {"ncclBroadcast", NcclApi::Broadcast},
      {"ncclBcast", NcclApi::Broadcast},         {"ncclReduce", NcclApi::Reduce},
      {"ncclSend", NcclApi::Send},               {"ncclRecv", NcclApi::Recv},
      {"ncclAllToAll", NcclApi::AllToAll},       {"ncclAlltoAll", NcclApi::AllToAll},
      {"ncclGather", NcclApi::Gather},           {"ncclScatter", NcclApi::Scatter},
      {"ncclGroupStart", NcclApi::GroupStart},   {"ncclGroupEnd", NcclApi::GroupEnd},
      {"ncclCommSplit", NcclApi::CommSplit},     {"ncclCommDestroy", NcclApi::CommDestroy},
  };
  for (auto [name, api] : apis)
    if (n == name) return api;
  if (starts(n, "ncclCommInit")) return NcclApi::CommInit;
  if (starts(n, "nccl") && n.size() > 4) return NcclApi::CommOther;
  return NcclApi::None;
}

const char* nccl_api_name(NcclApi a) {
  switch (a) {
    case NcclApi::AllReduce: return "ncclAllReduce";
    case NcclApi::AllGather: return "ncclAllGather";
    case NcclApi::ReduceScatter: return "ncclReduceScatter";
    case NcclApi::Broadcast: return "ncclBroadcast";
    case NcclApi::Reduce: return "ncclReduce";
    case NcclApi::Send: return "ncclSend";
    case NcclApi::Recv: return "ncclRecv";
    case NcclApi::AllToAll: return "ncclAllToAll";
    case NcclApi::Gather: return "ncclGather";
    case NcclApi::Scatter: return "ncclScatter";
    case NcclApi::GroupStart: return "ncclGroupStart";
    case NcclApi::GroupEnd: return "ncclGroupEnd";
    case NcclApi::CommInit: return "ncclCommInitRank";
    case NcclApi::CommSplit: return "ncclCommSplit";
    case NcclApi::CommDestroy: return "ncclCommDestroy";
    case NcclApi::CommOther: return "nccl (other)";
    case NcclApi::None: return "";
  }
  return "";
}

CollectiveType collective_of_api(NcclApi a) {
  switch (a) {
    case NcclApi::AllReduce: return CollectiveType::AllReduce;
    case NcclApi::AllGather: return CollectiveType::AllGather;
    case NcclApi::ReduceScatter: return CollectiveType::ReduceScatter;
    case NcclApi::Broadcast: return CollectiveType::Broadcast;
    case NcclApi::Reduce: return CollectiveType::Reduce;
    case NcclApi::Send:
    case NcclApi::Recv: return CollectiveType::SendRecv;
    case NcclApi::AllToAll: return CollectiveType::AllToAll;
    case NcclApi::Gather: return CollectiveType::Gather;
    case NcclApi::Scatter: return CollectiveType::Scatter;
    default: return CollectiveType::Unknown;
  }
}

std::optional<CollectiveType> classify_torch_nccl_range(std::string_view n) {
  if (!starts(n, "nccl:")) return std::nullopt;
  n.remove_prefix(5);
  while (!n.empty() && n.front() == '_') n.remove_prefix(1);
  auto has = [&](sv p) { return starts(n, p); };
  if (has("all_reduce") || has("allreduce")) return CollectiveType::AllReduce;
  if (has("all_gather") || has("allgather")) return CollectiveType::AllGather;
  if (has("reduce_scatter")) return CollectiveType::ReduceScatter;
  if (has("all_to_all") || has("alltoall")) return CollectiveType::AllToAll;
  if (has("broadcast")) return CollectiveType::Broadcast;
  if (has("reduce")) return CollectiveType::Reduce;
  if (has("send") || has("recv") || has("batch_isend_irecv")) return CollectiveType::SendRecv;
  if (has("gather")) return CollectiveType::Gather;
  if (has("scatter")) return CollectiveType::Scatter;
  return CollectiveType::Unknown;
}

}  // namespace collectives
