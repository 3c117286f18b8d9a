#include "nsys_writer.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "ddl.hpp"
#include "gpu_info.hpp"
#include "crash_timing.hpp"
#include "payloads.hpp"
#include "rng.hpp"
#include "sqlite_insert.hpp"

namespace sim {
namespace {

constexpr int64_t kVmBits = int64_t(1) << 48;  // real exports set VM id 1 above the pid bits

struct KernelInfo {
  const char* short_name;
  const char* demangled;
  int regs, grid_x, grid_y, block_x, static_smem, dyn_smem, smem_exec, cluster_x, max_cluster, max_active;
};

// Names follow NCCL >= 2.19 and current PyTorch / cuBLAS / FlashAttention builds.
const KernelInfo kKernels[kKernelTotal] = {
    {"layer_norm_fwd_kernel", "void layer_norm_fwd_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
     40, 16384, 1, 256, 0, 0, 32768, 0, 0, 0},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     168, 132, 1, 384, 0, 213196, 233472, 0, 0, 0},
    {"flash_fwd_kernel", "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(Flash_fwd_params)",
     255, 16, 64, 128, 0, 65536, 233472, 0, 0, 0},
    {"vectorized_elementwise_kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
     32, 46800, 1, 128, 0, 0, 32768, 0, 0, 0},
    {"cunn_SoftMaxForward", "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
     40, 8192, 1, 1024, 0, 0, 32768, 0, 0, 0},
    {"multi_tensor_apply_kernel", "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, float, float, float, float, float, float, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, float, float, float, float, float, float, bool, float*, float*)",
     96, 320, 1, 512, 0, 0, 32768, 0, 0, 0},
    {"layer_norm_grad_input_kernel", "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
     48, 16384, 1, 256, 0, 0, 32768, 0, 0, 0},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     168, 132, 1, 384, 0, 213196, 233472, 0, 0, 0},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     168, 132, 1, 384, 0, 213196, 233472, 0, 0, 0},
    {"flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, false, false, false, false, false>(Flash_bwd_params)",
     255, 32, 64, 256, 0, 98304, 233472, 0, 0, 0},
    {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     96, 16, 1, 512, 21568, 82240, 135168, 4, 8, 30},
    {"ncclDevKernel_SendRecv", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     96, 32, 1, 640, 21568, 82240, 135168, 4, 8, 30},
    // small_kernels: a tiny unvectorised elementwise op (a scalar add on a small tensor).
    {"elementwise_kernel", "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctorOnSelf_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctorOnSelf_add<float> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctorOnSelf_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctorOnSelf_add<float> const&)::{lambda(int)#1})",
     20, 2, 1, 128, 0, 0, 32768, 0, 0, 0},
};
// NCCL <= 2.18 naming for --schema 3.0 (an old capture).
const char* const kOldNccl[2][2] = {
    {"ncclKernel_AllReduce_RING_LL_Sum_bf16", "ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclDevComm*, unsigned long, ncclWork*)"},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"}};

// Strings after kThreadMain are written only when used (random conventions, crash runs), so
// the fixed output stays as it was.
enum Str : int {
  kApiLaunch = 2 * kKernelCount, kApiLaunchEx, kApiMemcpy, kApiSync, kNvAllReduce, kNvGroupStart, kNvGroupEnd,
  kNvSend, kNvRecv, kThreadMain, kApiGraphLaunch, kNvCommAbort, kThreadWatchdog, kStrCount
};
const char* const kOtherStrings[] = {"cudaLaunchKernel_v7000", "cuLaunchKernelEx", "cudaMemcpyAsync_v3020",
                                     "cudaStreamSynchronize_v3020", "ncclAllReduce", "ncclGroupStart",
                                     "ncclGroupEnd", "ncclSend", "ncclRecv", "python3", "cudaGraphLaunch_v10000",
                                     "ncclCommAbort", "pt_nccl_watchdg"};
int64_t str_id(int s) { return s + 1; }
// Kernels past kKernelCount (fault-only) are named after every other string.
int64_t short_id(int k) { return str_id(k < kKernelCount ? 2 * k : kStrCount + 2 * (k - kKernelCount)); }
int64_t demangled_id(int k) { return short_id(k) + 1; }
bool small_kernels_run(const Simulation& sim) {
  for (const Fault& f : sim.opt.faults)
    if (f.kind == FaultKind::SmallKernels) return true;
  return false;
}

std::string utc_string(int64_t ns) {
  const std::time_t s = std::time_t(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

void exec(sqlite3* db, const std::string& sql) { check_sqlite(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), db, sql); }

struct Ctx {
  const Simulation& sim;
  const Conventions& cv;
  bool v30;
  double drift = 0;  // this file's host clock runs (1 + drift) fast from the capture start
  int64_t lead = kCaptureLead;  // true time 0 is this long after the capture start
  int r0 = 0;                   // the file's first rank (capture-wide conventions)
  int64_t to_file(int64_t t) const {
    const int64_t f = t + lead;
    return drift == 0 ? f : f + int64_t(std::llround(double(f) * drift));
  }
};

void write_export_meta(sqlite3* db, const Ctx& c, const FileSpec& f, int64_t& rows) {
  const bool v30 = c.v30;
  const std::string base = f.path.substr(f.path.find_last_of('/') + 1);
  const std::string stem = base.substr(0, base.rfind('.'));
  Insert meta(db, v30 ? "EXPORT_META_DATA" : "META_DATA_EXPORT", {{"name", ":n"}, {"value", ":v"}});
  std::vector<std::pair<std::string, std::string>> kv = {
      {"EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"},
      {"EXPORT_PRODUCT_VERSION", v30 ? "2022.4.2.1" : "2026.2.1.210"},
      {"EXPORT_SCHEMA_VERSION", v30 ? "3.0.0" : "3.25.0"},
      {"EXPORT_SCHEMA_VERSION_MAJOR", "3"},
      {"EXPORT_SCHEMA_VERSION_MINOR", v30 ? "0" : "25"},
      {"EXPORT_SCHEMA_VERSION_MICRO", "0"},
      {"EXPORT_PLATFORM", "linux-desktop"},
      {"EXPORT_ARCH", "x64"},
      {"EXPORT_PARAM_EXPORT_TYPE", "SQLite"},
      {"EXPORT_PARAM_INPUT_FILE", stem + ".nsys-rep"},
      {"EXPORT_PARAM_OUTPUT_FILE", base},
      {"EXPORT_PARAM_LAZY", "true"},
      {"EXPORT_PARAM_TIME_NORMALIZE", "false"},
      {"EXPORT_PARAM_TIME_SHIFT", "0"},
      {"EXPORT_CONFIG_TIME_SHIFT", "0"}};
  if (!v30) {
    kv.insert(kv.begin() + 12, {"EXPORT_PARAM_INCLUDE_JSON", "false"});
    kv.insert(kv.begin() + 13, {"EXPORT_PARAM_INCLUDE_BLOBS", "false"});
  }
  const int n = meta.p(":n"), v = meta.p(":v");
  for (auto& [k, val] : kv) {
    meta.t(n, k);
    meta.t(v, val);
    meta.run();
  }
  rows += meta.rows;
}

// Session start, environment and capture window of the host that wrote the file.
void write_target_info(sqlite3* db, const Ctx& c, const FileSpec& f, int64_t stop, int64_t& rows) {
  // Capture start on this host's (NTP-skewed) clock: utcEpochNs + t_file = true time + e_h.
  const int64_t utc = kT0 - c.lead + c.sim.host_offset_ns[f.host];
  const int64_t sys_clock = c.cv.system_clock_ns[c.r0];
  Insert start(db, "TARGET_INFO_SESSION_START_TIME", {{"utcEpochNs", ":u"}, {"utcTime", ":s"}, {"localTime", ":s"},
                                                       {"systemClockNs", std::to_string(sys_clock)}});
  start.i(start.p(":u"), utc);
  start.t(start.p(":s"), utc_string(utc));
  start.run();

  Insert env(db, "TARGET_INFO_SYSTEM_ENV", {{"globalVid", std::to_string(kVmBits)}, {"devStateName", "'Local (CLI)'"},
                                            {"name", ":n"}, {"nameEnum", ":e"}, {"value", ":v"}});
  // The environment carries a fake secret: analysers must never copy it into their output.
  const std::vector<std::tuple<const char*, int, std::string>> envs = {
      {"CpuCores", 1, "64"}, {"NvDriverVersion", 205, "580.95.05"}, {"OsDescription", 605, "Ubuntu 22.04.5 LTS"},
      {"DeviceEnvironment", 610, "WANDB_API_KEY=sim-secret-do-not-copy;PATH=/usr/bin;NCCL_DEBUG=WARN"},
      {"CudaDriverVersion", 611, "13000"}, {"Hostname", 619, topology::host_name(f.host)},
      {"HasNvtxEvents", 809, "1"}, {"HasCudaEvents", 812, "1"}};
  for (auto& [name, e, val] : envs) {
    env.t(env.p(":n"), name);
    env.i(env.p(":e"), e);
    env.t(env.p(":v"), val);
    env.run();
  }

  // nsys 2026.x puts startTime on the system clock while the events stay capture-relative;
  // duration is the capture length either way.
  const int64_t start_time = c.cv.system_clock_start ? sys_clock : 0;
  Insert ad(db, "ANALYSIS_DETAILS", {{"globalVid", std::to_string(kVmBits)}, {"duration", ":d"},
                                     {"startTime", std::to_string(start_time)}, {"stopTime", ":e"}});
  ad.i(ad.p(":d"), stop);
  ad.i(ad.p(":e"), start_time + stop);
  ad.run();
  rows += start.rows + env.rows + ad.rows;
}

void write_strings(sqlite3* db, const Ctx& c, int64_t& rows) {
  Insert s(db, "StringIds", {{"id", ":i"}, {"value", ":v"}});
  for (int k = 0; k < kKernelCount; ++k) {
    const bool old = c.v30 && (k == kNcclAllReduce || k == kNcclSendRecv);
    const int o = k == kNcclSendRecv;
    s.i(s.p(":i"), short_id(k));
    s.t(s.p(":v"), old ? kOldNccl[o][0] : kKernels[k].short_name);
    s.run();
    s.i(s.p(":i"), demangled_id(k));
    s.t(s.p(":v"), old ? kOldNccl[o][1] : kKernels[k].demangled);
    s.run();
  }
  for (int k = kApiLaunch; k < (c.cv.extra_strings ? kStrCount : kThreadMain + 1); ++k) {
    s.i(s.p(":i"), str_id(k));
    s.t(s.p(":v"), kOtherStrings[k - kApiLaunch]);
    s.run();
  }
  for (int k = kKernelCount; k < kKernelTotal && small_kernels_run(c.sim); ++k) {
    s.i(s.p(":i"), short_id(k));
    s.t(s.p(":v"), kKernels[k].short_name);
    s.run();
    s.i(s.p(":i"), demangled_id(k));
    s.t(s.p(":v"), kKernels[k].demangled);
    s.run();
  }
  rows += s.rows;
}

void write_metadata(sqlite3* db, const Ctx& c, const FileSpec& f, int64_t stop, int64_t& rows) {
  write_export_meta(db, c, f, rows);
  write_target_info(db, c, f, stop, rows);
  if (!c.sim.opt.gpu_name.empty() && c.sim.opt.schema30) {
    std::vector<std::pair<int, int>> devices;
    for (int r : f.ranks) devices.push_back({c.cv.device[r], local_rank_of(c.sim, r)});
    write_gpu_info(db, devices, c.sim.opt.gpu_name, rows);
  }
  write_strings(db, c, rows);
}

// Kernel rows; per-kernel constants are rebound only when the kernel changes.
struct KernelRows {
  BatchInsert b;
  int s, e, st, k, dn, sn, regs, gx, gy, bx, ssm, dsm, gid, sme, cx, cy, mpc, mac, gn, gr;
  int last = -1;
  KernelRows(sqlite3* db, const std::vector<std::pair<std::string, std::string>>& cols)
      : b(db, "CUPTI_ACTIVITY_KIND_KERNEL", cols), s(b.p(":s")), e(b.p(":e")), st(b.p(":st")), k(b.p(":k")),
        dn(b.p(":dn")), sn(b.p(":sn")), regs(b.p(":regs")), gx(b.p(":gx")), gy(b.p(":gy")), bx(b.p(":bx")),
        ssm(b.p(":ssm")), dsm(b.p(":dsm")), gid(b.p(":gid")), sme(b.p(":sme")), cx(b.p(":cx")), cy(b.p(":cy")),
        mpc(b.p(":mpc")), mac(b.p(":mac")), gn(b.p(":gn")), gr(b.p(":gr")) {}
  void row(int64_t start, int64_t end, int64_t stream, int64_t corr, int64_t grid_id, int kernel) {
    b.set(s, start);
    b.set(e, end);
    b.set(st, stream);
    b.set(k, corr);
    b.set(gid, grid_id);
    if (kernel == last) return;
    const KernelInfo& ki = kKernels[kernel];
    last = kernel;
    b.set(dn, demangled_id(kernel));
    b.set(sn, short_id(kernel));
    b.set(regs, ki.regs);
    b.set(gx, ki.grid_x);
    b.set(gy, ki.grid_y);
    b.set(bx, ki.block_x);
    b.set(ssm, ki.static_smem);
    b.set(dsm, ki.dyn_smem);
    b.set(sme, ki.smem_exec);
    b.set(cx, ki.cluster_x);
    b.set(cy, ki.cluster_x ? 1 : 0);
    b.set(mpc, ki.max_cluster);
    b.set(mac, ki.max_active);
  }
  void graph(int64_t node, int64_t graph) {
    b.set(gn, node);
    b.set(gr, graph);
  }
};

// One rank process as its tables see it.
struct Proc {
  const Ctx& c;
  int rank;
  const RankTrace& tr;
  int64_t pid, dev, gpid, gtid;
  const std::array<int, kStreamSlots>& stream_id;
  std::string compute_stream;
  // CUDA graphs: one cudaGraphLaunch row launches a run of compute kernels, which share its correlationId.
  std::vector<int32_t> head;
  Proc(const Ctx& ctx, int r)
      : c(ctx), rank(r), tr(ctx.sim.ranks[r]), pid(ctx.cv.pid[r]), dev(ctx.cv.device[r]),
        gpid(kVmBits | (pid << 24)), gtid(gpid | pid), stream_id(ctx.cv.stream[r]),
        compute_stream(std::to_string(stream_id[kCompute])), head(graph_heads(tr, ctx.cv.graph_from[r])) {}
  int64_t corr(size_t i) const { return c.cv.corr(rank, i); }  // unique per process, in CPU order
};

void write_runtime(sqlite3* db, const Proc& p, int64_t& rows) {
  const Ctx& c = p.c;
  const RankTrace& tr = p.tr;
  const auto& head = p.head;
  const int64_t gtid = p.gtid;
  auto corr = [&](size_t i) { return p.corr(i); };
  BatchInsert rt(db, "CUPTI_ACTIVITY_KIND_RUNTIME", {{"start", ":s"}, {"end", ":e"}, {"eventClass", ":c"},
            {"globalTid", std::to_string(gtid)}, {"correlationId", ":k"}, {"nameId", ":n"}, {"returnValue", "0"}});
  const int rs = rt.p(":s"), re = rt.p(":e"), rc = rt.p(":c"), rk = rt.p(":k"), rn = rt.p(":n");
  for (size_t i = 0; i < tr.ops.size(); ++i) {
    const Op& op = tr.ops[i];
    int64_t s = op.cpu_start, e = op.cpu_end, cls = 0, name = 0;
    switch (op.type) {
      case OpType::IterBegin: case OpType::Stall: continue;
      case OpType::H2D: case OpType::D2H: name = kApiMemcpy; break;
      case OpType::Compute:
        if (head[i] >= 0 && head[i] != int32_t(i)) continue;  // inside a graph launched earlier
        name = head[i] >= 0 ? kApiGraphLaunch : kApiLaunch;
        break;
      case OpType::Coll: s = coll_launch_start(op); e = coll_launch_end(op); cls = 1; name = kApiLaunchEx; break;
      case OpType::Sync: name = kApiSync; break;
    }
    rt.set(rs, c.to_file(s));
    rt.set(re, c.to_file(e));
    rt.set(rc, cls);
    rt.set(rk, corr(i));
    rt.set(rn, str_id(int(name)));
    rt.run();
  }
  rt.flush();
  rows += rt.rows;
}

void write_kernels(sqlite3* db, const Proc& p, int64_t& rows) {
  const Ctx& c = p.c;
  const RankTrace& tr = p.tr;
  const auto& head = p.head;
  const auto& stream_id = p.stream_id;
  const int64_t dev = p.dev, gpid = p.gpid;
  auto corr = [&](size_t i) { return p.corr(i); };
  // Per-kernel constants are set only when the kernel changes (bindings persist across rows).
  std::vector<std::pair<std::string, std::string>> kcols = {
      {"start", ":s"}, {"end", ":e"}, {"deviceId", std::to_string(dev)}, {"contextId", "1"},
      {"greenContextId", "0"}, {"streamId", ":st"}, {"correlationId", ":k"}, {"globalPid", std::to_string(gpid)},
      {"demangledName", ":dn"}, {"shortName", ":sn"}, {"launchType", "1"}, {"cacheConfig", "1"},
      {"registersPerThread", ":regs"}, {"gridX", ":gx"}, {"gridY", ":gy"}, {"gridZ", "1"}, {"blockX", ":bx"},
      {"blockY", "1"}, {"blockZ", "1"}, {"staticSharedMemory", ":ssm"}, {"dynamicSharedMemory", ":dsm"},
      {"localMemoryPerThread", "0"}, {"localMemoryTotal", "250871808"}, {"gridId", ":gid"},
      {"sharedMemoryExecuted", ":sme"}, {"sharedMemoryLimitConfig", "0"}, {"clusterX", ":cx"},
      {"clusterY", ":cy"}, {"clusterZ", ":cy"}, {"clusterSchedulingPolicy", "1"},
      {"maxPotentialClusterSize", ":mpc"}, {"maxActiveClusters", ":mac"}, {"tensorSizeMinusOneElements", "'[]'"}};
  KernelRows k(db, kcols);
  kcols.push_back({"graphNodeId", ":gn"});
  kcols.push_back({"graphId", ":gr"});
  KernelRows kg(db, kcols);  // kernels launched as CUDA graph nodes
  int graph_iter = -1;
  int64_t graph_id = 0;
  for (size_t i = 0; i < tr.ops.size(); ++i) {
    const Op& op = tr.ops[i];
    if ((op.type != OpType::Compute && op.type != OpType::Coll) || op.pending) continue;
    const bool node = head[i] >= 0;
    if (node && head[i] == int32_t(i)) {  // graphs numbered by their place in the iteration
      if (op.iter != graph_iter) graph_iter = op.iter, graph_id = 0;
      ++graph_id;
    }
    KernelRows& out = node ? kg : k;
    out.row(c.to_file(op.start), c.to_file(op.end), stream_id[op.stream], corr(node ? size_t(head[i]) : i),
            100000 + int64_t(i), op.kernel);
    if (node) out.graph(graph_id * 1000 + int64_t(i) - head[i], graph_id);
    out.b.run();
  }
  k.b.flush();
  kg.b.flush();
  rows += k.b.rows + kg.b.rows;
}

void write_copies_and_syncs(sqlite3* db, const Proc& p, int64_t& rows) {
  const Ctx& c = p.c;
  const RankTrace& tr = p.tr;
  const int64_t dev = p.dev, gpid = p.gpid;
  const std::string& compute_stream = p.compute_stream;
  auto corr = [&](size_t i) { return p.corr(i); };
  Insert m(db, "CUPTI_ACTIVITY_KIND_MEMCPY",
           {{"start", ":s"}, {"end", ":e"}, {"deviceId", std::to_string(dev)}, {"contextId", "1"},
            {"greenContextId", "0"}, {"streamId", compute_stream}, {"correlationId", ":k"}, {"globalPid", std::to_string(gpid)},
            {"bytes", ":b"}, {"copyKind", ":ck"}, {"srcKind", ":sk"}, {"dstKind", ":dk"}, {"copyCount", "1"}});
  Insert sy(db, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
            {{"start", ":s"}, {"end", ":e"}, {"deviceId", std::to_string(dev)}, {"contextId", "1"},
             {"streamId", compute_stream}, {"correlationId", ":k"}, {"globalPid", std::to_string(gpid)}, {"syncType", "3"},
             {"eventId", "4294967295"}, {"eventSyncId", "0"}});
  for (size_t i = 0; i < tr.ops.size(); ++i) {
    const Op& op = tr.ops[i];
    if ((op.type == OpType::H2D || op.type == OpType::D2H) && !op.pending) {  // pending: queued, never ran
      const bool h2d = op.type == OpType::H2D;
      m.i(m.p(":s"), c.to_file(op.start));
      m.i(m.p(":e"), c.to_file(op.end));
      m.i(m.p(":k"), corr(i));
      m.i(m.p(":b"), op.bytes);
      m.i(m.p(":ck"), h2d ? 1 : 2);       // HtoD / DtoH
      m.i(m.p(":sk"), h2d ? 1 : 2);       // pinned host / device
      m.i(m.p(":dk"), h2d ? 2 : 0);       // device / pageable host
      m.run();
    } else if (op.type == OpType::Sync) {
      sy.i(sy.p(":s"), c.to_file(op.cpu_start));
      sy.i(sy.p(":e"), c.to_file(op.cpu_end));
      sy.i(sy.p(":k"), corr(i));
      sy.run();
    }
  }
  rows += m.rows + sy.rows;
}

void write_nvtx(sqlite3* db, const Proc& p, int64_t& rows) {
  const Ctx& c = p.c;
  const Simulation& sim = c.sim;
  const Conventions& cv = c.cv;
  const RankTrace& tr = p.tr;
  const int rank = p.rank;
  const int64_t pid = p.pid, gpid = p.gpid, gtid = p.gtid;
  Insert nv(db, "NVTX_EVENTS", {{"start", ":s"}, {"end", ":e"}, {"eventType", ":t"}, {"text", ":x"},
                                {"globalTid", std::to_string(gtid)}, {"domainId", ":d"}});
  const int ns = nv.p(":s"), ne = nv.p(":e"), nt = nv.p(":t"), nx = nv.p(":x"), nd = nv.p(":d");
  if (sim.opt.nccl_domain_create) {
    nv.i(ns, c.to_file(-100'000'000));
    nv.null(ne);
    nv.i(nt, 75);
    nv.t(nx, "NCCL");
    nv.i(nd, 1);
    nv.run();
  }
  // NCCL API push/pop ranges: registered strings (text NULL, textId set) in domain 1.
  BatchInsert nb(db, "NVTX_EVENTS", {{"start", ":s"}, {"end", ":e"}, {"eventType", "59"},
                                     {"globalTid", std::to_string(gtid)}, {"textId", ":id"}, {"domainId", "1"}});
  const int bs = nb.p(":s"), be = nb.p(":e"), bid = nb.p(":id");
  // --payloads: the collective's ranges carry NCCL's binary payload (payloads.hpp).
  Insert pl(db, "NVTX_EVENTS", {{"start", ":s"}, {"end", ":e"}, {"eventType", "59"}, {"globalTid", std::to_string(gtid)},
                                {"textId", ":id"}, {"domainId", "1"}, {"binaryData", ":bd"}});
  const Op* cur = nullptr;
  auto range = [&](int64_t s, int64_t e, int text_id) {
    if (sim.opt.payloads && text_id != kNvGroupStart && text_id != kNvGroupEnd) {
      const CollKey& k = sim.keys[size_t(cur->key)];
      const int peer = k.members[0] == rank ? k.members.back() : k.members[0];
      const int64_t schema = text_id == kNvAllReduce ? kSchemaAllReduce : text_id == kNvSend ? kSchemaSend : kSchemaRecv;
      pl.i(pl.p(":s"), c.to_file(s)), pl.i(pl.p(":e"), c.to_file(e)), pl.i(pl.p(":id"), str_id(text_id));
      pl.blob(pl.p(":bd"), nccl_payload(schema, comm_hash(sim, cur->key), k.bytes, text_id == kNvAllReduce ? 0 : peer));
      return pl.run();
    }
    nb.set(bs, c.to_file(s));
    nb.set(be, c.to_file(e));
    nb.set(bid, str_id(text_id));
    nb.run();
  };
  for (const Op& op : tr.ops) {
    if (op.type != OpType::Coll) continue;
    const int64_t s = op.cpu_start, e = c.cv.launch_after_range ? coll_launch_start(op) : op.cpu_end;
    cur = &op;
    if (op.api == Api::AllReduce) {
      range(s, e, kNvAllReduce);
      continue;
    }
    range(s, s + 600, kNvGroupStart);
    int64_t t = s + 900;
    if (op.api != Api::Recv) range(t, t + 1500, kNvSend), t += 1800;
    if (op.api != Api::Send) range(t, t + 1500, kNvRecv), t += 1800;
    range(t, e, kNvGroupEnd);  // the kernel launch happens inside ncclGroupEnd (or right after it)
  }
  // Crash runs: the NCCL watchdog times out on the blocked launch and aborts the communicators.
  if (const int64_t w = watchdog_at(sim, rank); w >= 0) {
    BatchInsert wd(db, "NVTX_EVENTS", {{"start", ":s"}, {"end", ":e"}, {"eventType", "59"},
                                       {"globalTid", std::to_string(gpid | (pid + kWatchdogTid))},
                                       {"textId", std::to_string(str_id(kNvCommAbort))}, {"domainId", "1"}});
    for (int a = 0; a < watchdog_aborts(sim, cv, rank); ++a) {
      wd.set(wd.p(":s"), c.to_file(w + a * kAbortNs));
      wd.set(wd.p(":e"), c.to_file(w + a * kAbortNs + kAbortNs - 1'000'000));
      wd.run();
    }
    wd.flush();
    rows += wd.rows;
  }
  nb.flush();
  nv.i(nt, 59);
  nv.i(nd, 0);
  for (size_t it = 0; cv.iteration_markers && it < tr.iter_cpu.size(); ++it) {  // PyTorch profiler step markers
    nv.i(ns, c.to_file(tr.iter_cpu[it].first));
    nv.i(ne, c.to_file(tr.iter_cpu[it].second));
    nv.t(nx, fmt::format("ProfilerStep#{}", it));
    nv.run();
  }
  rows += nv.rows + nb.rows + pl.rows;
}

// All rows of one rank process; table by table so each table's pages stay together.
void write_process(sqlite3* db, const Ctx& c, int rank, int64_t& rows) {
  const Proc p(c, rank);
  write_runtime(db, p, rows);
  write_kernels(db, p, rows);
  write_copies_and_syncs(db, p, rows);
  write_nvtx(db, p, rows);
}

}  // namespace

int64_t write_nsys_file(const Simulation& sim, const Conventions& cv, const FileSpec& f) {
  std::remove(f.path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(f.path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error("straggler-sim: cannot create " + f.path + ": " + msg);
  }
  int64_t rows = 0;
  try {
    exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
             "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536");
    exec(db, "BEGIN");
    const Ctx c{sim, cv, sim.opt.schema30, sim.host_drift_ppm[size_t(f.host)] * 1e-6, cv.capture_lead[f.ranks[0]],
                f.ranks[0]};
    for (const char* ddl : c.v30 ? kDdl30 : kDdl325) exec(db, ddl);
    if (sim.opt.payloads && !c.v30) write_payload_schemas(db, int(f.ranks.size()), rows);
    // One capture session for the whole job (nsys --duration, or the job killed on a hang): every
    // file's window ends together, also for a rank that stopped working early.
    int64_t stop = 0;
    for (const RankTrace& tr : sim.ranks)
      for (const Op& op : tr.ops) stop = std::max({stop, op.pending ? op.cpu_end : op.end, op.cpu_end});
    int64_t file_stop = c.to_file(stop) + 2'000'000'000;  // the session ran on 2 s
    if (crash_run(sim)) {  // each capture ends with its process; the job is killed after the watchdogs
      int64_t kill = stop + 2'000'000'000;
      for (int r = 0; r < sim.world; ++r) kill = std::max(kill, rank_stop(sim, cv, r));
      file_stop = 0;
      for (int r : f.ranks) {
        const int64_t t = rank_stop(sim, cv, r);
        file_stop = std::max(file_stop, c.to_file(t < 0 ? kill : t));
      }
    }
    write_metadata(db, c, f, file_stop, rows);

    Insert proc(db, "PROCESSES", {{"globalPid", ":g"}, {"pid", ":p"}, {"name", ":n"}});
    Insert tn(db, "ThreadNames", {{"nameId", ":n"}, {"priority", "20"}, {"globalTid", ":g"}});
    Insert cs(db, "TARGET_INFO_CUDA_STREAM", {{"streamId", ":s"}, {"hwId", "0"}, {"vmId", "1"}, {"processId", ":p"},
                                               {"contextId", "1"}, {"priority", "0"}, {"flag", "2"}});
    if (f.per_host) {  // the launcher a torchrun capture also records (it has no kernels)
      const int64_t lp = cv.launcher_pid[f.host];
      proc.i(proc.p(":g"), kVmBits | (lp << 24));
      proc.i(proc.p(":p"), lp);
      proc.t(proc.p(":n"), "torchrun");
      proc.run();
    }
    for (int r : f.ranks) {
      const int64_t pid = cv.pid[r], gpid = kVmBits | (pid << 24);
      proc.i(proc.p(":g"), gpid);
      proc.i(proc.p(":p"), pid);
      proc.t(proc.p(":n"), "python3");
      proc.run();
      tn.i(tn.p(":n"), str_id(kThreadMain));
      tn.i(tn.p(":g"), gpid | pid);
      tn.run();
      if (watchdog_at(sim, r) >= 0) {
        tn.i(tn.p(":n"), str_id(kThreadWatchdog));
        tn.i(tn.p(":g"), gpid | (pid + kWatchdogTid));
        tn.run();
      }
      for (uint8_t s : cv.created[r]) {
        cs.i(cs.p(":s"), cv.stream[r][s]);
        cs.i(cs.p(":p"), pid);
        cs.run();
      }
    }
    rows += proc.rows + tn.rows + cs.rows;
    for (int r : f.ranks) write_process(db, c, r, rows);
    if (cv.random) shuffle_rows(db, hash4(conventions_seed(sim.opt), 0x5AFF, uint64_t(f.host), f.ranks[0]));
    exec(db, "COMMIT");
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  sqlite3_close(db);
  return rows;
}

KernelDesc kernel_desc(int k, bool old_nccl) {
  const KernelInfo& ki = kKernels[k];
  const bool old = old_nccl && (k == kNcclAllReduce || k == kNcclSendRecv);
  return {old ? kOldNccl[k == kNcclSendRecv][0] : ki.short_name, old ? kOldNccl[k == kNcclSendRecv][1] : ki.demangled,
          ki.regs, ki.grid_x, ki.grid_y, ki.block_x, ki.static_smem + ki.dyn_smem};
}

}  // namespace sim
