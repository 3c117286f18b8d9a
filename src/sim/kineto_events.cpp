// The trace events of one rank's ops (kineto_events.hpp): which CPU ranges PyTorch records around
// each launch, copy and sync, and what runs on the GPU, with the ids that link them.
#include "kineto_events.hpp"

#include <algorithm>
#include <string_view>

namespace sim::kineto {

const AtenOp kAten[] = {
    {"aten::native_layer_norm", "[[4096, 4, 8192], [], [8192], [8192], []]",
     R"(["c10::BFloat16", "", "c10::BFloat16", "c10::BFloat16", "Scalar"])"},
    {"aten::mm", "[[16384, 8192], [8192, 3072]]", R"(["c10::BFloat16", "c10::BFloat16"])"},
    {"aten::_flash_attention_forward", "[[4, 4096, 32, 128], [4, 4096, 32, 128], [4, 4096, 32, 128], [], [], [], [], [], []]",
     R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "", "", "Scalar", "Scalar"])"},
    {"aten::gelu", "[[4096, 4, 12288], []]", R"(["c10::BFloat16", ""])"},
    {"aten::_log_softmax", "[[16384, 50304], [], []]", R"(["c10::BFloat16", "Scalar", "Scalar"])"},
    {"aten::_fused_adam_", "[[], [], [], [], [], [], [], [], [], [], [], [], [], []]",
     R"(["TensorList", "TensorList", "TensorList", "TensorList", "TensorList", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""])"},
    {"aten::native_layer_norm_backward", "[[4096, 4, 8192], [4096, 4, 8192], [], [4096, 4, 1], [4096, 4, 1], [8192], [8192], []]",
     R"(["c10::BFloat16", "c10::BFloat16", "", "float", "float", "c10::BFloat16", "c10::BFloat16", ""])"},
    {"aten::_flash_attention_backward",
     "[[4, 4096, 32, 128], [4, 4096, 32, 128], [4, 4096, 32, 128], [4, 4096, 32, 128], [4, 4096, 32, 128], [4, 32, 4096], [], [], [], [], [], [], [], [], []]",
     R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "", "", "", "", "Scalar", "Scalar", "", "", ""])"},
    {"aten::add_", "[[1024], [], []]", R"(["float", "Scalar", "Scalar"])"},
    {"aten::copy_", nullptr, nullptr},
    {"aten::item", "[[]]", R"(["float"])"},
    {"aten::_local_scalar_dense", "[[]]", R"(["float"])"},
    {"CompiledFunction", "[[4096, 4, 8192]]", R"(["c10::BFloat16"])"},
    {"CompiledFunctionBackward", "[[4096, 4, 8192]]", R"(["c10::BFloat16"])"},
};

const CollName kColl[] = {{"c10d::allreduce_", "allreduce", "nccl:all_reduce", R"(["TensorList", "", "", "Scalar"])"},
                          {"c10d::send", "send", "nccl:send", R"(["TensorList", "", "Scalar", "Scalar"])"},
                          {"c10d::recv_", "recv", "nccl:recv", R"(["TensorList", "", "Scalar", "Scalar"])"},
                          {"", "coalesced", "nccl:coalesced", "[]"}};

namespace {

// Per Kernel (schedule.hpp): the op that launches it (NCCL kernels: not launched by an ATen op).
const uint8_t kAtenOf[kKernelTotal] = {kALnF, kAMm, kAFlashF, kAGelu, kALogSoftmax, kAAdam, kALnB, kAMm, kAMm, kAFlashB,
                                       0, 0, kAAdd};
bool backward_kernel(int k) { return k == kLnBwd || k == kGemmDgrad || k == kGemmWgrad || k == kFlashBwd; }

// The collective's CPU side: ProcessGroupNCCL's c10d op > record_param_comms > nccl:* range > the
// launch (the kernel links to record_param_comms, as in the 2024 sample). A batched send/recv
// pair (one SendRecv kernel) records each op, then launches inside nccl:coalesced at the group
// end, with no CPU op of its own around it: it links to the nccl:coalesced range.
template <class Add>
int64_t coll_cpu(const RankCtx& rc, size_t i, Add& add) {
  const Op& op = rc.ops[i];
  const int64_t s = op.cpu_start, e = op.cpu_end, ls = coll_launch_start(op);
  if (op.api == Api::SendRecv) {  // the call takes 18-24 us, the launch its last 5.3
    add(W::C10d, kCpuOp, s, s + 3 * kUsNs, kCSend);
    add(W::Rpc, kCpuOp, s + kUsNs / 2, s + 5 * kUsNs / 2, kCSend);
    add(W::C10d, kCpuOp, s + 4 * kUsNs, s + 7 * kUsNs, kCRecv);
    add(W::Rpc, kCpuOp, s + 9 * kUsNs / 2, s + 13 * kUsNs / 2, kCRecv);
    return add(W::NcclAnnot, kAnnot, s + 8 * kUsNs, e - 300, kCCoalesced).ext;
  }
  const int32_t c = coll_index(op);
  add(W::C10d, kCpuOp, s - rc.lead(i) / 2, e + rc.tail(i) / 2, c);
  const int64_t link = add(W::Rpc, kCpuOp, s, e, c).ext;
  add(W::NcclAnnot, kAnnot, (s + ls) / 2, e - 300, c);
  return link;
}

}  // namespace

int32_t coll_index(const Op& op) {
  switch (op.api) {
    case Api::AllReduce: return kCAllReduce;
    case Api::Send: return kCSend;
    case Api::Recv: return kCRecv;
    case Api::SendRecv: return kCCoalesced;
  }
  return kCAllReduce;
}

RankCtx::RankCtx(const Simulation& s, const Conventions& c, const KinetoConventions& k, int r)
    : sim(s), cv(c), kc(k), rank(r), ops(s.ranks[r].ops), pid(c.pid[r]), tid(k.tid[size_t(r)]), dev(c.device[r]), stream(c.stream[r]),
      old_nccl(s.opt.schema30), head(graph_heads(s.ranks[r], c.graph_from[r])), base(k.base_ns[size_t(r)]) {
  const std::string_view launch = kineto_nccl_launch(old_nccl, kc.relative_time);
  nccl_call = launch == "cuLaunchKernelEx" ? kCallLaunchEx : launch == "cudaLaunchKernelExC" ? kCallLaunchExC : kCallLaunch;
  // External ids count the CPU events in CPU order; the prefix per op lets every pass derive them.
  ext_first.assign(ops.size(), 0);
  link.assign(ops.size(), 0);
  std::vector<Ev> evs;
  uint32_t n = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    ext_first[i] = n;
    cpu_events(*this, i, evs);
    for (const Ev& e : evs) {
      n += (e.kind & (kCpuOp | kAnnot)) != 0;
      if (e.what == W::Runtime) link[i] = uint32_t(e.ext);
    }
  }
}

int64_t RankCtx::lead(size_t i) const {
  return i == 0 ? 2 * kUsNs : std::clamp((ops[i].cpu_start - ops[i - 1].cpu_end) / 2, int64_t(0), 2 * kUsNs);
}
int64_t RankCtx::tail(size_t i) const {
  return i + 1 >= ops.size() ? 2 * kUsNs : std::clamp((ops[i + 1].cpu_start - ops[i].cpu_end) / 2, int64_t(0), 2 * kUsNs);
}
bool RankCtx::gpu_work(size_t i) const {
  const OpType t = ops[i].type;
  return !ops[i].pending && (t == OpType::Compute || t == OpType::Coll || t == OpType::H2D || t == OpType::D2H);
}
bool RankCtx::first_optimizer(size_t i) const {
  if (ops[i].type != OpType::Compute || ops[i].kernel != kOptimizer || head[i] >= 0) return false;
  size_t j = i;
  while (j > 0 && ops[j - 1].type == OpType::Stall) --j;
  return j == 0 || ops[j - 1].type != OpType::Compute || ops[j - 1].kernel != kOptimizer;
}
size_t RankCtx::last_optimizer(size_t i) const {
  size_t last = i;
  for (size_t j = i + 1; j < ops.size(); ++j) {
    const bool opt = ops[j].type == OpType::Compute && ops[j].kernel == kOptimizer && head[j] < 0;
    if (!opt && ops[j].type != OpType::Stall) break;
    if (opt) last = j;
  }
  return last;
}
int64_t RankCtx::step_end(size_t it) const {
  const auto& ic = sim.ranks[rank].iter_cpu;  // prof.step() at the next iteration's start, ~1 us before
  return it + 1 < ic.size() ? ic[it + 1].first - kUsNs : ic[it].second;
}

void cpu_events(const RankCtx& rc, size_t i, std::vector<Ev>& out) {
  out.clear();
  const Op& op = rc.ops[i];
  const KinetoConventions& kc = rc.kc;
  uint32_t next = rc.ext_first[i];
  auto add = [&](W w, uint16_t kind, int64_t ts, int64_t end, int32_t aux) -> Ev& {
    const bool own = kind & (kCpuOp | kAnnot);
    out.push_back({ts, end, own ? kc.ext_base + next : 0, uint32_t(i), aux, w, kind});
    next += own;
    return out.back();
  };
  const int64_t s = op.cpu_start, e = op.cpu_end, ld = rc.lead(i), tl = rc.tail(i);
  int64_t link = 0;  // the innermost CPU op around the API call
  int32_t call = kCallLaunch;
  int64_t cs = s, ce = e;  // the call
  switch (op.type) {
    case OpType::Stall: return;  // GC pauses, compilation: nothing Kineto records
    case OpType::IterBegin: {
      if (kc.markers && size_t(op.iter) < rc.sim.ranks[rc.rank].iter_cpu.size())
        add(W::Step, kAnnot, s, rc.step_end(size_t(op.iter)), kc.step_offset + op.iter);
      if (kc.annotations && e - s >= kUsNs) add(W::Loader, kAnnot, s, e, 0);  // the dataloader's next()
      return;
    }
    case OpType::H2D: link = add(W::Aten, kCpuOp, s - ld / 2, e + tl / 2, kACopy).ext, call = kCallMemcpy; break;
    case OpType::D2H:
      if (i + 1 < rc.ops.size() && rc.ops[i + 1].type == OpType::Sync && !rc.ops[i + 1].mid_iter) {
        const int64_t end = rc.ops[i + 1].cpu_end, t2 = rc.tail(i + 1);  // loss.item(): the copy, then the sync
        add(W::Aten, kCpuOp, s - ld / 2, end + t2 / 2, kAItem);
        link = add(W::Aten, kCpuOp, s - ld / 4, end + t2 / 4, kADense).ext;
      } else {
        link = add(W::Aten, kCpuOp, s - ld / 2, e + tl / 2, kACopy).ext;
      }
      call = kCallMemcpy;
      break;
    case OpType::Sync:
      if (i > 0 && rc.ops[i - 1].type == OpType::D2H && !op.mid_iter) {
        link = rc.link[i - 1];  // inside the item() the copy opened
      } else {  // .item() inside the loop (the sync pattern)
        add(W::Aten, kCpuOp, s - ld / 2, e + tl / 2, kAItem);
        link = add(W::Aten, kCpuOp, s - ld / 4, e + tl / 4, kADense).ext;
      }
      call = kCallSync;
      break;
    case OpType::Compute:
      if (rc.head[i] >= 0 && rc.head[i] != int32_t(i)) return;  // a node of a graph launched earlier
      if (rc.head[i] >= 0) {  // a torch.compile'd region replayed as a CUDA graph
        link = add(W::Aten, kCpuOp, s - ld / 2, e + tl / 2, backward_kernel(op.kernel) ? kACompiledBwd : kACompiled).ext;
        call = kCallGraph;
        break;
      }
      if (kc.annotations && rc.first_optimizer(i)) {
        const size_t last = rc.last_optimizer(i);
        add(W::OptStep, kAnnot, s - ld, rc.ops[last].cpu_end + rc.tail(last), 0);
      }
      link = add(W::Aten, kCpuOp, s - ld / 2, e + tl / 2, kAtenOf[op.kernel]).ext;
      break;
    case OpType::Coll:
      link = coll_cpu(rc, i, add);
      call = rc.nccl_call, cs = coll_launch_start(op), ce = coll_launch_end(op);
      break;
  }
  Ev& r = add(W::Runtime, kRuntime, cs, ce, call);
  r.ext = link;
  // ac2g: a call with GPU work starts a flow its activity ends; Kineto ends one at any other call.
  if (kc.flows) add(rc.gpu_work(i) ? W::FlowS : W::FlowF, kFlowCpu, cs, cs, 0);
}

void gpu_events(const RankCtx& rc, size_t i, int slot, std::vector<Ev>& out) {
  out.clear();
  const Op& op = rc.ops[i];
  if (!rc.gpu_work(i) || op.stream != slot) return;
  const int64_t ext = rc.link[size_t(rc.head[i] >= 0 ? rc.head[i] : int32_t(i))];
  // 2024 builds project user annotations onto the stream their kernels ran on.
  if (rc.kc.annotations && rc.kc.relative_time && rc.first_optimizer(i)) {
    const size_t last = rc.last_optimizer(i);
    bool ran = true;
    for (size_t j = i; j <= last; ++j) ran &= rc.ops[j].type != OpType::Compute || !rc.ops[j].pending;
    if (ran)
      out.push_back({op.start, rc.ops[last].end, rc.kc.ext_base + rc.ext_first[i], uint32_t(i), 0, W::GpuAnnot, kGpuAnnot});
  }
  const bool copy = op.type == OpType::H2D || op.type == OpType::D2H;
  out.push_back({op.start, op.end, ext, uint32_t(i), 0, copy ? W::Memcpy : W::Kernel, uint16_t(copy ? kMemcpy : kKernel)});
  if (rc.kc.flows) out.push_back({op.start, op.start, ext, uint32_t(i), 0, W::GpuFlow, kFlowGpu});
}

}  // namespace sim::kineto
