// The registry's built-in analyses, one line each, in writing order.
#include "analyses/builtin.hpp"

namespace straggler {

std::vector<AnalysisInfo> builtin_analyses() {
  using namespace analyses;
  // Ours take no option of their own (yet): made the same for every spec.
  auto plain = [](std::unique_ptr<Analysis> (*f)()) {
    return [f](const Options&) { return f(); };
  };
  return {
      {"rank_metrics", "per-rank GPU time, gaps, copies, syncs, histograms, top kernels, iterations", plain(rank_metrics)},
      {"run_inputs", "the files read and the ones that failed", plain(run_inputs)},
      {"collectives", "communicators, and per collective the arrivals, waits, blame and transfer", plain(collectives)},
      {"clock", "per-rank clock offsets and drift from matched collectives", plain(clock)},
      {"verdict", "stragglers and their cause, slow links, per-iteration blame, job change points", plain(verdict)},
      {"desync", "hangs: the first op some members never reached, and who stopped by itself", plain(desync)},
      {"findings", "root causes per rank (Book of Root Causes) tied to the stragglers", plain(findings)},
      {"pipeline", "pipeline bubble per stage against (p-1)/(v m), the schedule inferred, the excess attributed", pipeline,
       {{"microbatches", "microbatches per iteration (default: inferred from the p2p ops)", ""},
        {"virtual-stages", "model chunks per pipeline stage, interleaved 1F1B (default: inferred)", ""}}},
      {"scaling", "collective time and bus bandwidth by size and span, against the fabric model and their like", scaling,
       {{"fabric", "FILE: link classes' latency and bus bandwidth (docs/fabric.md)", ""},
        {"topology", "FILE: `HOSTNAME RACK POD` per line (docs/scaling-cliffs.md)", ""}}},
      {"kernel_names", "each kernel name's count and time per rank over its steady window (what `compare` diffs)", plain(kernel_names)},
      {"walls", "which wall the step hits: steady GPU time split into compute, memory, other, exposed communication and idle", plain(walls)},
      {"mfu", "model FLOPs utilisation per iteration and between change points (docs/mfu.md)", mfu,
       {{"gpu", "NAME: the GPU model when the export names none, or to override (docs/mfu.md lists them)", ""},
        {"peak-tflops", "one GPU's dense peak, overriding the table", ""},
        {"precision", "bf16 (default), fp16 or fp8: which peak", ""},
        {"model-flops-per-step", "the whole job's model FLOPs per step (for MFU)", ""},
        {"tokens-per-step", "tokens per step (with --params: 6 N T FLOPs per step)", ""},
        {"params", "model parameters N (with --tokens-per-step)", ""}}},
      {"what_if", "what fixing each cause buys (the steady steps replayed with one change at a time) and where the step goes (waterfall); after mfu: its report reads the MFU", plain(what_if)},
      {"problems", "problems, not ranks: stragglers sharing a host, crashes and hangs, slow links, each with one cost (src/problems.hpp)", plain(problems)},
  };
}

}  // namespace straggler
