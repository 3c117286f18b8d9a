// --format kineto: the simulated run written as PyTorch profiler (Kineto) Chrome-trace JSON, one
// file per rank, with what real traces contain (shared/docs/nsys-export-notes.md section 6 and
// the real samples under shared/data/real/{param,hta}); SPEC.md "Kineto output" lists the events.
// The run (timing, faults, truth) is the nsys writer's; only the container differs. What Kineto
// does not promise varies under --conventions random (KinetoConventions, recorded in truth.json).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "conventions.hpp"
#include "nsys_writer.hpp"
#include "schedule.hpp"

namespace sim {

// Order of traceEvents: as Kineto writes them (CPU ops, then runtime and GPU activity roughly by
// time, metadata last), sorted by ts, grouped by category, or Kineto's order shuffled in windows.
enum class KinetoOrder : uint8_t { Kineto, Sorted, Grouped, Shuffled };
// File names: DLRM's worker<r>_step_<N>.<ms>.pt.trace.json, HTA's rank-<r>.json, or
// tensorboard_trace_handler's <hostname>_<pid>.<ms>.pt.trace.json (the rank only inside).
enum class KinetoNaming : uint8_t { WorkerStep, RankJson, HostPid };

// One PyTorch process group (a simulator communicator) as the 2024 metadata names it.
struct KinetoPg {
  std::string name, desc;  // "3", "DATA_PARALLEL_GROUP" / "undefined"
};

struct KinetoConventions {
  bool random = false;
  bool relative_time = true;   // 2024: float us after baseTimeNanoseconds; 2023: integer epoch us
  bool base_per_host = true;   // relative: the base is the host's boot time, else per process
  bool nccl_metadata = true;   // collective metadata on kernels, pg_config in distributedInfo (2024 builds only)
  bool record_shapes = false;  // "Input Dims" / "Input type" on CPU ops (and "record_shapes": 1)
  bool markers = true;         // ProfilerStep#N (absent when the profiler was not stepped)
  bool annotations = false;    // dataloader / optimizer user_annotation ranges (+ gpu_user_annotation)
  bool flows = true;           // ac2g flow events
  bool meta = true;            // ph "M" process / thread metadata
  bool instants = true;        // ph "i" instants at the profiler span's start and end
  bool trace_name = true;      // top-level "traceName"
  bool main_thread = true;     // the loop runs on the main thread (tid = pid), else on another thread
  bool gzip = false;
  bool megatron_desc = false;  // process group descriptions as Megatron-Core names them
  bool default_pg_dp = true;   // TP = PP = 1: data parallelism on the default group (plain DDP)
  KinetoOrder order = KinetoOrder::Kineto;
  KinetoNaming naming = KinetoNaming::RankJson;
  int step_offset = 0;         // ProfilerStep#(offset + iteration)
  int shuffle_window = 0;      // Shuffled: events per window
  int64_t ext_base = 1;        // first External id of every process
  int64_t rf_offset = 0;       // "Record function id" = External id - rf_offset (2024)
  std::vector<std::string> pg_order;  // group kinds in creation order (tp, dp, pp)
  bool gloo_twins = false;     // a gloo group created after each data-parallel group
  int extra_groups = 0;        // other groups created before pg_order[extra_at]
  int extra_at = 0;
  std::vector<KinetoPg> pg;          // per Simulation::comms
  std::vector<std::string> key_args;  // per Simulation::keys: the metadata after "Collective name"
  std::vector<int64_t> base_ns;       // per rank (relative_time)
  std::vector<int64_t> end_ns;        // per rank: true time the capture ends
  std::vector<int64_t> tid;           // per rank: the thread that runs the loop (its main thread: tid = pid)
  std::vector<std::string> file;      // per rank
};

KinetoConventions make_kineto_conventions(const Simulation& sim, const Conventions& cv);

// One file per rank, in rank order.
std::vector<FileSpec> kineto_files(const Simulation& sim, const KinetoConventions& kc);

// Writes the trace of f.ranks[0]; returns the number of traceEvents written. Throws std::runtime_error.
int64_t write_kineto_file(const Simulation& sim, const Conventions& cv, const KinetoConventions& kc, const FileSpec& f);

// The "conventions" member of truth.json for a Kineto run (fixed or random).
std::string kineto_conventions_json(const Simulation& sim, const Conventions& cv, const KinetoConventions& kc,
                                    const std::vector<FileSpec>& files);

// The call NCCL launches its kernels with: NCCL >= 2.19 (ncclDevKernel_ names) the driver's
// cuLaunchKernelEx; older NCCL cudaLaunchKernelExC (2.17, the 2024 sample) or cudaLaunchKernel (DLRM).
inline const char* kineto_nccl_launch(bool old_nccl, bool relative_time) {
  return !old_nccl ? "cuLaunchKernelEx" : relative_time ? "cudaLaunchKernelExC" : "cudaLaunchKernel";
}

// Unix ns of true time t on the clock of `rank` (its host's NTP error and drift), exactly as the
// nsys writer's utcEpochNs + t_file.
int64_t kineto_unix_ns(const Simulation& sim, const Conventions& cv, int rank, int64_t t);

}  // namespace sim
