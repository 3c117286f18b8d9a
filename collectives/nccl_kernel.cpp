// NCCL kernel and API names -> collective type, algorithm, datatype.
//
// Names come from profiles and are untrusted: everything here is std::string_view slicing with
// bounds-checked substr/find, no allocation, no indexing past the end, no reliance on NUL
// termination (embedded NULs are ordinary characters). Work is linear in the name length.
//
// Schemes (see the export notes in ../shared/docs, section 4.1):
//  NCCL >= 2.19  ncclDevKernel_<Coll>[_<RedOp>_<ty>]_<ALGO>_<PROTO>   ncclDevKernel_AllReduce_Sum_f32_RING_LL
//  2.8 .. 2.18   ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<ctype>      ncclKernel_AllReduce_RING_LL_Sum_float
//  <= 2.7        nccl<Coll>[<Algo>][<Proto>]Kernel_<op>_<ty>          ncclAllReduceRingLLKernel_sum_f32(ncclColl)
// Any of them may carry a demangled signature "(...)", which is ignored.
#include "collectives/nccl_kernel.hpp"
#include "ranks/timeline.hpp"

namespace collectives {
namespace {

using sv = std::string_view;

constexpr bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }

// Strip a demangled signature "(...)" and anything after.
constexpr sv base_name(sv s) {
  auto p = s.find('(');
  return p == sv::npos ? s : s.substr(0, p);
}

// Next '_'-separated token; advances s past the token and its separator.
constexpr sv token(sv& s) {
  auto p = s.find('_');
  sv t = s.substr(0, p);
  s = p == sv::npos ? sv() : s.substr(p + 1);
  return t;
}

struct CollName {
  sv name;
  CollectiveType type;
};
// Kernel-name spellings (CamelCase). Longer names first where one is a prefix of another: the
// pre-2.8 scheme matches by prefix (ncclAllGatherRing..., ncclReduceScatter... vs ncclReduce...).
constexpr CollName kColls[] = {
    {"AllReduce", CollectiveType::AllReduce},   {"AllGatherV", CollectiveType::AllGather},
    {"AllGather", CollectiveType::AllGather},   {"ReduceScatter", CollectiveType::ReduceScatter},
    {"Broadcast", CollectiveType::Broadcast},   {"Reduce", CollectiveType::Reduce},
    {"SendRecv", CollectiveType::SendRecv},     {"AllToAll", CollectiveType::AllToAll},
    {"AlltoAll", CollectiveType::AllToAll},     {"Gather", CollectiveType::Gather},
    {"Scatter", CollectiveType::Scatter},       {"Generic", CollectiveType::Generic},
};

constexpr CollectiveType coll_of(sv t) {
  for (auto c : kColls)
    if (t == c.name) return c.type;
  return CollectiveType::Unknown;
}

struct AlgoName {
  sv name;
  NcclAlgo algo;
};
// Upper-case spellings of the >= 2.8 schemes (NCCL's algorithm names, with and without '_'),
// CamelCase ones of the pre-2.8 scheme.
constexpr AlgoName kAlgos[] = {
    {"RING", NcclAlgo::Ring},           {"TREE", NcclAlgo::Tree},
    {"COLLNET", NcclAlgo::CollNet},     {"COLLNET_DIRECT", NcclAlgo::CollNet},
    {"COLLNET_CHAIN", NcclAlgo::CollNet}, {"COLLNETDIRECT", NcclAlgo::CollNet},
    {"COLLNETCHAIN", NcclAlgo::CollNet}, {"NVLS", NcclAlgo::Nvls},
    {"NVLS_TREE", NcclAlgo::NvlsTree},  {"NVLSTREE", NcclAlgo::NvlsTree},
    {"PAT", NcclAlgo::Pat},
};
constexpr AlgoName kCamelAlgos[] = {
    {"Ring", NcclAlgo::Ring}, {"Tree", NcclAlgo::Tree}, {"CollNet", NcclAlgo::CollNet},
};

constexpr NcclAlgo algo_of(sv t) {
  for (auto a : kAlgos)
    if (t == a.name) return a.algo;
  return NcclAlgo::Unknown;
}

constexpr bool is_proto(sv t) { return t == "LL" || t == "LL128" || t == "SIMPLE"; }
constexpr NcclProto proto_of(sv t) {
  return t == "LL" ? NcclProto::LL : t == "LL128" ? NcclProto::LL128 : t == "SIMPLE" ? NcclProto::Simple : NcclProto::Unknown;
}

struct TypeName {
  sv name;
  NcclDtype dtype;
};
constexpr TypeName kTypes[] = {
    // NCCL >= 2.19 and <= 2.7 short names
    {"i8", NcclDtype::I8}, {"u8", NcclDtype::U8}, {"i32", NcclDtype::I32}, {"u32", NcclDtype::U32},
    {"i64", NcclDtype::I64}, {"u64", NcclDtype::U64}, {"f16", NcclDtype::F16}, {"f32", NcclDtype::F32},
    {"f64", NcclDtype::F64}, {"bf16", NcclDtype::BF16}, {"f8e4m3", NcclDtype::F8E4M3}, {"f8e5m2", NcclDtype::F8E5M2},
    // NCCL 2.8 .. 2.18 C type names
    {"int8_t", NcclDtype::I8}, {"uint8_t", NcclDtype::U8}, {"int32_t", NcclDtype::I32}, {"uint32_t", NcclDtype::U32},
    {"int64_t", NcclDtype::I64}, {"uint64_t", NcclDtype::U64}, {"half", NcclDtype::F16}, {"float", NcclDtype::F32},
    {"double", NcclDtype::F64}, {"bfloat16", NcclDtype::BF16}, {"__nv_bfloat16", NcclDtype::BF16},
    {"__nv_fp8_e4m3", NcclDtype::F8E4M3}, {"__nv_fp8_e5m2", NcclDtype::F8E5M2},
};

constexpr NcclDtype dtype_of(sv t) {
  for (auto d : kTypes)
    if (t == d.name) return d.dtype;
  return NcclDtype::Unknown;
}

constexpr bool reduces(CollectiveType t) {
  return t == CollectiveType::AllReduce || t == CollectiveType::ReduceScatter || t == CollectiveType::Reduce;
}

constexpr bool is_redop(sv t) {
  return t == "Sum" || t == "Prod" || t == "Min" || t == "Max" || t == "Avg" || t == "PreMulSum" ||
         t == "SumPostDiv";
}

// >= 2.19. s: the part after "ncclDevKernel_".
NcclKernelInfo parse_dev(sv s) {
  NcclKernelInfo info;
  info.dev_kernel_scheme = true;
  info.type = coll_of(token(s));
  if (info.type == CollectiveType::Unknown || info.type == CollectiveType::Generic) return info;
  // Optional <RedOp>_<ty> (only reductions have it; tolerate a bare <ty> too).
  sv rest = s;
  sv t = token(rest);
  if (is_redop(t)) {
    sv ty = token(rest);
    if (reduces(info.type)) info.dtype = dtype_of(ty);
    s = rest;
  } else if (NcclDtype d = dtype_of(t); d != NcclDtype::Unknown) {
    if (reduces(info.type)) info.dtype = d;
    s = rest;
  }
  // Remaining: <ALGO>_<PROTO>, where ALGO may itself contain '_' (NVLS_TREE, COLLNET_DIRECT).
  auto last = s.rfind('_');
  if (last != sv::npos && is_proto(s.substr(last + 1))) info.proto = proto_of(s.substr(last + 1)), s = s.substr(0, last);
  info.algo = algo_of(s);
  return info;
}

// 2.8 .. 2.18. s: the part after "ncclKernel_".
NcclKernelInfo parse_old(sv s) {
  NcclKernelInfo info;
  info.type = coll_of(token(s));
  if (info.type == CollectiveType::Unknown) return info;
  // <ALGO> spans the tokens up to the protocol; locate the protocol token without copying.
  sv algo_part = s;
  size_t algo_len = sv::npos;  // npos: no protocol token found
  size_t pos = 0;
  while (!s.empty()) {
    sv t = token(s);
    if (is_proto(t)) {
      info.proto = proto_of(t);
      algo_len = pos == 0 ? 0 : pos - 1;  // drop the '_' before the protocol
      break;
    }
    pos += t.size() + 1;
  }
  if (algo_len == sv::npos) {  // truncated name: whatever is there may still be an algorithm
    info.algo = algo_of(algo_part);
    return info;
  }
  info.algo = algo_of(algo_part.substr(0, algo_len));
  // <RedOp>_<ctype>; ctype may contain '_' (int8_t, __nv_bfloat16), so it is the whole rest.
  // Non-reduction collectives carry a placeholder Sum_int8_t: their dtype stays Unknown.
  sv op = token(s);
  if (is_redop(op) && reduces(info.type)) info.dtype = dtype_of(s);
  return info;
}

// <= 2.7: nccl<Coll>[Ring|Tree|CollNet][LL|LL128]Kernel_<op>_<ty>. s: the part after "nccl".
// Returns nullopt when s does not have that shape.
std::optional<NcclKernelInfo> parse_pre28(sv s) {
  auto k = s.find("Kernel_");
  if (k == sv::npos) return std::nullopt;
  sv head = s.substr(0, k);
  sv tail = s.substr(k + sizeof("Kernel_") - 1);
  NcclKernelInfo info;
  for (auto c : kColls) {
    if (!starts(head, c.name)) continue;
    sv rest = head.substr(c.name.size());
    info.algo = NcclAlgo::Unknown;
    for (auto a : kCamelAlgos)
      if (starts(rest, a.name)) {
        info.algo = a.algo;
        rest.remove_prefix(a.name.size());
        break;
      }
    if (!(rest.empty() || rest == "LL" || rest == "LL128")) continue;  // e.g. "AllGather" vs "AllGatherV..."
    info.type = c.type;
    info.proto = rest.empty() ? NcclProto::Simple : proto_of(rest);  // no suffix: the Simple kernel
    break;
  }
  if (info.type == CollectiveType::Unknown) return std::nullopt;
  sv op = token(tail);  // sum prod min max premulsum sumpostdiv avg; copy for non-reductions
  if (reduces(info.type) && op != "copy") info.dtype = dtype_of(tail);
  return info;
}

}  // namespace

const char* proto_name(NcclProto p) {
  switch (p) {
    case NcclProto::LL: return "LL";
    case NcclProto::LL128: return "LL128";
    case NcclProto::Simple: return "SIMPLE";
    case NcclProto::Unknown: return "?";
  }
  return "?";
}

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
  switch (d) {
    case NcclDtype::I8: return "i8";
    case NcclDtype::U8: return "u8";
    case NcclDtype::I32: return "i32";
    case NcclDtype::U32: return "u32";
    case NcclDtype::I64: return "i64";
    case NcclDtype::U64: return "u64";
    case NcclDtype::F16: return "f16";
    case NcclDtype::F32: return "f32";
    case NcclDtype::F64: return "f64";
    case NcclDtype::BF16: return "bf16";
    case NcclDtype::F8E4M3: return "f8e4m3";
    case NcclDtype::F8E5M2: return "f8e5m2";
    case NcclDtype::Unknown: return "";
  }
  return "";
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

// Case-sensitive "nccl" prefix, as Nsight Systems' `shortName LIKE 'nccl%'` convention and HTA's `^nccl`
// regex: forks such as NCCLX ("ncclx...") and unknown future kernels count as NCCL communication.
bool is_nccl_kernel(std::string_view name) { return ranks::is_nccl_kernel_name(name); }

std::optional<NcclKernelInfo> classify_nccl_kernel(std::string_view name) {
  if (!is_nccl_kernel(name)) return std::nullopt;
  sv s = base_name(name);
  if (starts(s, "ncclDevKernel_")) return parse_dev(s.substr(sizeof("ncclDevKernel_") - 1));
  if (starts(s, "ncclKernel_")) return parse_old(s.substr(sizeof("ncclKernel_") - 1));
  if (auto old = parse_pre28(s.substr(4))) return old;
  return NcclKernelInfo{};  // another nccl* kernel: communication, type unknown
}

NcclApi classify_nccl_api(std::string_view n) {
  struct ApiName {
    sv name;
    NcclApi api;
  };
  static constexpr ApiName apis[] = {
      {"ncclAllReduce", NcclApi::AllReduce},         {"ncclAllGather", NcclApi::AllGather},
      {"ncclReduceScatter", NcclApi::ReduceScatter}, {"ncclBroadcast", NcclApi::Broadcast},
      {"ncclBcast", NcclApi::Broadcast},             {"ncclReduce", NcclApi::Reduce},
      {"ncclSend", NcclApi::Send},                   {"ncclRecv", NcclApi::Recv},
      {"ncclAllToAll", NcclApi::AllToAll},           {"ncclAlltoAll", NcclApi::AllToAll},
      {"ncclGather", NcclApi::Gather},               {"ncclScatter", NcclApi::Scatter},
      {"ncclGroupStart", NcclApi::GroupStart},       {"ncclGroupEnd", NcclApi::GroupEnd},
      {"ncclCommSplit", NcclApi::CommSplit},         {"ncclCommDestroy", NcclApi::CommDestroy},
      {"ncclCommAbort", NcclApi::CommDestroy},
  };
  for (auto a : apis)
    if (n == a.name) return a.api;
  // Other NCCL API functions are identifiers "nccl" + an upper-case letter + [A-Za-z0-9_]*
  // (ncclCommCount, ncclCommFinalize, ncclMemAlloc, ...). "nccl:all_reduce" (PyTorch's range,
  // see classify_torch_nccl_range), "ncclx", "nccl" and anything with other characters are not.
  if (n.size() < 5 || !starts(n, "nccl") || !(n[4] >= 'A' && n[4] <= 'Z')) return NcclApi::None;
  for (char c : n.substr(5))
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return NcclApi::None;
  if (starts(n, "ncclCommInit")) return NcclApi::CommInit;  // Rank, RankConfig, RankScalable, All
  return NcclApi::CommOther;
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
    case NcclApi::AllToAll: return "ncclAlltoAll";
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

CollectiveType collective_of_name(std::string_view name) {
  for (int code = 0; code <= int(CollectiveType::Unknown); ++code)
    if (name == collective_name(CollectiveType(code))) return CollectiveType(code);
  return CollectiveType::Unknown;
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

// "nccl:<op>[ suffix]" from ProcessGroupNCCL's profiling titles: all_reduce, all_reduce_barrier,
// allreduce_coalesced, _all_gather_base, _allgather_base, all_gather_into_tensor_coalesced,
// _reduce_scatter_base, reduce_scatter_tensor_coalesced, all_to_all, alltoall_base, broadcast,
// reduce, send 1->2, recv 2->1, gather, scatter. Anything else after "nccl:" (barrier, ...) is
// Unknown; names without the prefix are nullopt.
std::optional<CollectiveType> classify_torch_nccl_range(std::string_view n) {
  if (!starts(n, "nccl:")) return std::nullopt;
  n.remove_prefix(5);
  while (!n.empty() && n.front() == '_') n.remove_prefix(1);
  auto has = [&](sv p) { return starts(n, p); };
  if (has("all_reduce") || has("allreduce")) return CollectiveType::AllReduce;
  if (has("all_gather") || has("allgather")) return CollectiveType::AllGather;
  if (has("reduce_scatter") || has("reducescatter")) return CollectiveType::ReduceScatter;
  if (has("all_to_all") || has("alltoall")) return CollectiveType::AllToAll;
  if (has("broadcast")) return CollectiveType::Broadcast;
  if (has("reduce")) return CollectiveType::Reduce;
  if (has("send") || has("recv")) return CollectiveType::SendRecv;
  if (has("gather")) return CollectiveType::Gather;
  if (has("scatter")) return CollectiveType::Scatter;
  return CollectiveType::Unknown;
}

NcclApi classify_call_name(std::string_view n) {
  if (const NcclApi a = classify_nccl_api(n); a != NcclApi::None) return a;
  const auto t = classify_torch_nccl_range(n);
  if (!t) return NcclApi::None;
  switch (*t) {
    case CollectiveType::AllReduce: return NcclApi::AllReduce;
    case CollectiveType::AllGather: return NcclApi::AllGather;
    case CollectiveType::ReduceScatter: return NcclApi::ReduceScatter;
    case CollectiveType::AllToAll: return NcclApi::AllToAll;
    case CollectiveType::Broadcast: return NcclApi::Broadcast;
    case CollectiveType::Reduce: return NcclApi::Reduce;
    case CollectiveType::Gather: return NcclApi::Gather;
    case CollectiveType::Scatter: return NcclApi::Scatter;
    case CollectiveType::SendRecv: {
      sv op = n.substr(5);
      while (!op.empty() && op.front() == '_') op.remove_prefix(1);
      return starts(op, "recv") ? NcclApi::Recv : NcclApi::Send;
    }
    default: return NcclApi::CommOther;
  }
}

}  // namespace collectives
