// --conventions random: vary everything an nsys export does not promise (stream ids, device ids,
// pids, row order, iteration markers, capture start, correlation ids, CUDA graph launches), so an
// analyser cannot lean on what the fixed generator happens to do. Fixed conventions reproduce the
// original output exactly.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "schedule.hpp"

struct sqlite3;

namespace sim {

struct FileSpec;

uint64_t conventions_seed(const Options& o);

// Before simulate(): random conventions choose what the caller did not pin (GPUs per host, schema,
// per-host files, NCCL domain-create rows, p2p streams, DP overlap). Fixed conventions change nothing.
void resolve_conventions(Options& opt);

struct Conventions {
  bool random = false;
  bool device_zero = false;         // per-rank files: each process sees only its GPU (CUDA_VISIBLE_DEVICES)
  bool same_pid = false;            // per-rank files: containers give every rank the same pid
  bool iteration_markers = true;    // ProfilerStep#N NVTX ranges
  bool system_clock_start = false;  // 3.25: ANALYSIS_DETAILS.startTime = systemClockNs (2026.x)
  bool extra_strings = false;       // cudaGraphLaunch, ncclCommAbort, watchdog thread names
  bool launch_after_range = false;  // NCCL's API range ends where its kernel's launch starts (nothing promises it holds it)
  std::vector<int64_t> pid;         // per rank
  std::vector<int> device;          // per rank
  std::vector<std::array<int, kStreamSlots>> stream;  // per rank: id per slot, -1 never created
  std::vector<std::vector<uint8_t>> created;          // per rank: slots in creation order
  std::vector<int> graph_from;       // per rank: first iteration launched through CUDA graphs, -1 none
  std::vector<int64_t> graph_launches;  // per rank: cudaGraphLaunch rows written
  std::vector<int64_t> corr_base;    // per rank: first correlationId
  std::vector<int64_t> capture_lead;    // per rank: events start this long after the capture start
  std::vector<int64_t> system_clock_ns;  // per rank: TARGET_INFO_SESSION_START_TIME.systemClockNs
  std::vector<int64_t> launcher_pid;     // per host: torchrun in per-host files

  // CUPTI numbers every API call of the process, also ones not written: ids with gaps when random.
  int64_t corr(int rank, size_t op) const {
    return random ? corr_base[rank] + 3 * int64_t(op) + int64_t((op * 0x9E3779B97F4A7C15ull) >> 62) % 3
                  : int64_t(op) + 1;
  }
};

Conventions make_conventions(const Simulation& sim);

// Per op of a rank: the op whose cudaGraphLaunch launches it (runs of 2+ consecutive compute
// kernels from iteration from_iter on), or -1 when launched alone.
std::vector<int32_t> graph_heads(const RankTrace& tr, int from_iter);

// Rewrites every table of the open database in a seeded random row order (nsys promises none).
void shuffle_rows(sqlite3* db, uint64_t seed);

// The "conventions" member of truth.json (random conventions only).
std::string conventions_json(const Simulation& sim, const Conventions& cv, const std::vector<FileSpec>& files);
// Fixed conventions: nothing, or {"mode": "fixed", "dp_overlap": true} under --dp-overlap.
std::string fixed_conventions_json(const Simulation& sim);

}  // namespace sim
