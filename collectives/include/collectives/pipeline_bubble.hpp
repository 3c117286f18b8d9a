// The pipeline bubble across ranks (docs/pipeline.md: the definition, a worked example and the
// attribution). Input: every rank's flush windows (pipeline_flush.hpp), the layout, the clocks,
// the p2p links found by the cross-rank run and the stragglers the verdict named; output: the
// schedule facts, the measured bubble per stage and for the job, and what the excess is made of.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/clock.hpp"
#include "collectives/pipeline_flush.hpp"
#include "topology/layout.hpp"
#include "topology/pipeline_theory.hpp"

namespace collectives {

struct PipelineLink {
  int a = -1, b = -1;        // member ranks
  int64_t ops = 0;           // matched ops
  double transfer_ns = 0;    // median transfer (replay: end - last arrival)
};

struct PipelineInputs {
  topology::ParallelLayout layout;
  std::vector<FlushWindow> windows;  // every rank's, as if the first stage
  std::vector<P2pMark> marks;        // every rank's
  const ClockSolution* clocks = nullptr;  // null: no correction
  std::vector<PipelineLink> links;
  std::vector<int> stragglers;            // ranks the verdict named
  int given_microbatches = 0, given_virtual_stages = 0;  // 0: infer
};

// The parts of the excess bubble (measured minus theoretical), in this order everywhere.
enum class BubblePart : uint8_t { StageImbalance, P2pTransfer, Straggler, WarmupCooldown, Unknown };
inline constexpr int kBubbleParts = 5;
const char* bubble_part_name(BubblePart p);  // "stage_imbalance", ...

struct StageBubble {
  int32_t stage = 0;
  double work_ns = 0, bubble_ns = 0, p2p_ns = 0;  // summed over pipelines and flushes
  double chunk_work_ns = 0;  // median over healthy pipelines of its work per chunk-step (per microbatch / v)
  double bubble = 0;         // bubble_ns / work_ns
};

// One stage of one pipeline in one flush (the plot's rows).
struct FlushStage {
  int32_t pipeline = 0, flush = 0, stage = 0, rank = -1, iteration = -1;
  int64_t span_start = 0, span_end = 0;      // stage 0's first forward .. last backward (corrected wall clock)
  int64_t window_start = 0, window_end = 0;  // this stage's own window (corrected)
  double work_ns = 0, bubble_ns = 0, p2p_ns = 0;
};

struct PipelineBubble {
  bool measured = false;
  std::string why_not;  // when not measured
  int pp = 0, microbatches = 0, virtual_stages = 1, pipelines = 0, flushes = 0;
  bool microbatches_given = false, virtual_stages_given = false;
  topology::Schedule schedule = topology::Schedule::OneFOneB;
  double theoretical = 0, bubble = 0, inflation = 0;  // bubble time / work, job
  double work_ns = 0;                                  // all stages, pipelines and flushes
  std::vector<StageBubble> stages;
  std::vector<FlushStage> rows;
  std::array<double, kBubbleParts> parts{};  // shares of the job's work (they add up to bubble - theoretical)
  std::vector<BubblePart> causes;            // largest first
  int bottleneck_stage = -1;
  double bottleneck_ratio = 0;       // the bottleneck's chunk-step work over the median stage's
  std::vector<int> straggler_ranks;  // named stragglers inside pipelines
  double transfer_ns = 0;            // median p2p transfer
};

PipelineBubble measure_pipeline(const PipelineInputs& in);

}  // namespace collectives
