// straggler-sim public API: options, fault specs and the one-call generator used by main() and the tests.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topology/layout.hpp"

namespace sim {

enum class FaultKind {
  SlowGpu, HostDelay, ExtraWork, SlowLink, StageImbalance, SlowP2P, Hang, Crash,
  SlowKernel,  // one kernel (by model kind) FACTOR x longer on every rank: what `compare` must find
  // Root-cause patterns ("Book of Root Causes"): one rank, or every rank (rank -1, spec word `all`).
  GcPause, Sync, NcclCompute, H2D, SmallKernels, Compile, Hotspot, SlowHost
};
const char* fault_kind_name(FaultKind k);
// The root-cause pattern kinds (GcPause .. SlowHost): the only ones that may name every rank.
inline bool is_pattern(FaultKind k) { return k >= FaultKind::GcPause; }

struct Fault {
  FaultKind kind = FaultKind::SlowGpu;
  int rank = -1;          // slow_gpu, host_delay, extra_work, hang, crash; patterns: -1 = every rank
  int from_iter = 0;      // slow_gpu, host_delay, extra_work; hang, crash: the iteration it stops at
  double factor = 1.0;    // slow_gpu, extra_work, slow_link, stage_imbalance, slow_p2p (every pipeline transfer)
  double ms = 0.0;        // host_delay, gc_pause, sync, compile
  int host_a = -1, host_b = -1;  // slow_link
  int stage = -1;         // stage_imbalance
  double every = 0.0;     // gc_pause: iterations between pauses
  double mib = 0.0;       // h2d: MiB copied before each microbatch
  int count = 0;          // small_kernels: tiny kernels after each microbatch's forward; slow_kernel: the Kernel
  double share = 0.0;     // hotspot: flash-attention backward's share of the microbatch compute
  double us = 0.0;        // slow_host: CPU cost of each compute launch
  // Whether the fault acts on `r` (patterns with rank -1 act on every rank).
  bool on(int r) const { return rank == r || (rank < 0 && is_pattern(kind)); }
};

// Parses "slow_gpu:5:8:1.4", "gc_pause:all:3:40" etc. (see SPEC.md); throws std::invalid_argument.
Fault parse_fault(const std::string& spec);

struct Options {
  std::string out_dir;
  topology::ParallelLayout layout{2, 2, 8};
  int hosts = 4;
  int iterations = 20;
  int microbatches = 4;
  int layers = 4;  // per pipeline stage (interleaved: layers / virtual_stages per model chunk)
  // Pipeline schedule (Megatron): "1f1b" (PipeDream-flush), "gpipe" (all forwards, then all
  // backwards) or "interleaved" (1F1B over virtual_stages model chunks per stage, the last stage's
  // chunk k feeding the first stage's chunk k+1 over a wrap-around link; microbatches a multiple
  // of pp, as Megatron requires).
  std::string schedule = "1f1b";
  int virtual_stages = 1;
  uint64_t seed = 1;
  double jitter = 0.05;
  // Realistic run-to-run noise beside the per-kernel jitter (its own random stream, so 0 leaves
  // the output as before): per rank and steady iteration, with probability hiccup_prob a host
  // hiccup (OS jitter, a page fault storm, a logging flush) of lognormal size (median hiccup_ms,
  // sigma 0.8, at most 8x) at the iteration start or before a random launch; and a per-iteration
  // GPU speed wobble (clocks, thermals) of sd iteration_wobble; and each GPU's own persistent speed,
  // uniform within +-gpu_spread (silicon lottery, power caps).
  double hiccup_prob = 0, hiccup_ms = 0, iteration_wobble = 0, gpu_spread = 0;
  double clock_offset_ms = 0.0;
  double clock_drift_ppm = 0.0;  // max abs per-host clock rate error (host 0 exact)
  bool schema30 = false;  // --schema 3.0 (--format kineto: NCCL <= 2.18 kernel names)
  // --format kineto: PyTorch profiler (Kineto) Chrome-trace JSON, one file per rank, instead of
  // SQLite (kineto_writer.hpp); the run and its truth are the same.
  bool kineto = false;
  bool per_host_files = false;
  bool nccl_domain_create = true;
  // NCCL's NVTX payloads (communicator id, message size, peer) in NVTX_EVENTS.binaryData, with the
  // payload schema tables, as an export with blobs included has them (schema 3.25 only).
  bool payloads = false;
  // Pipeline p2p on one stream per rank for both neighbours (Megatron's batched p2p on the
  // pipeline group's communicator), instead of one stream per link.
  bool p2p_one_stream = false;
  // Data-parallel gradient all-reduces overlap the last microbatch's backward (DDP / Megatron
  // overlap_grad_reduce): bucket b is launched on the DP stream after its layers' backward and the
  // compute stream does not wait for it; the optimizer and the iteration's sync do.
  bool dp_overlap = false;
  // Message size of each data-parallel gradient all-reduce (the TP ones stay 16 MiB).
  int64_t dp_bytes = 25 << 20;
  // The fabric of the scaling scenarios (issue 21; docs in SPEC.md "Fabric"): with fabric_seed or
  // nodes_per_pod set, collective transfer times follow a ring cost over link classes (intra-node,
  // inter-node in a pod, across pods) whose parameters are drawn from fabric_seed; unset, the
  // original two-class model (byte-identical runs).
  std::optional<uint64_t> fabric_seed;
  int nodes_per_pod = 0;  // 0: one pod
  // MFU (issue 22): the driver's GPU name written to TARGET_INFO_GPU (schema 3.0: the 2026.2
  // exports have no such table), and the model's FLOPs per step, for truth.json "mfu".
  std::string gpu_name;
  double model_flops_per_step = 0;
  std::vector<Fault> faults;
  int64_t target_kernels = 0;  // >0: overrides iterations
  int threads = 0;             // writer threads; 0 = hardware concurrency (output does not depend on it)
  // --conventions random: vary what an nsys export does not promise (conventions.hpp). The
  // conventions draw from their own seed (default: seed) so a fault run can keep its timing.
  bool random_conventions = false;
  std::optional<uint64_t> conventions_seed;
  // Random conventions choose these unless the caller pinned them (CLI: gave the option).
  struct Pinned {
    bool hosts = false, schema = false, files = false, domain_create = false, p2p_streams = false, dp_overlap = false;
  } pinned;
};

// Throws std::invalid_argument for inconsistent options (bad ranks, hosts not dividing the world...).
void validate(const Options& opt);

struct RunStats {
  int iterations = 0;
  int files = 0;
  int64_t kernels = 0;  // over all ranks
  int64_t rows = 0;     // all rows written, all tables (--format kineto: trace events)
  double simulate_s = 0, write_s = 0;
};

// Simulates the run and writes OUT_DIR/*.sqlite (or the Kineto traces) and OUT_DIR/truth.json.
RunStats generate(const Options& opt);

}  // namespace sim
