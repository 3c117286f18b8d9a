// Pipeline schedule theory: the bubble a schedule promises and what unequal stages add to it.
// docs/pipeline.md works an example through each formula.
//
// With p stages, m microbatches and v model chunks per stage (interleaved 1F1B; 1 otherwise),
// each stage runs n = m v chunk-steps per flush. When every stage's chunk-step takes u, the flush
// lasts (n + p - 1) u: p - 1 steps to fill the pipeline and drain it, n steps of work. A stage's
// bubble (idle time in the flush over its work) is then (p - 1) / n: (p - 1) / m for GPipe and
// 1F1B (Narayanan et al. 2021, eq. 1), (p - 1) / (v m) interleaved (eq. 2).
//
// With unequal stages (chunk-step u_s on stage s) a flush takes, in the same model, the fill and
// drain through every stage plus n - 1 steps at the slowest:
//     span(u) = sum_s u_s + (n - 1) max_s u_s
// so its bubble time over all stages is p span(u) - n sum_s u_s, and what it adds to the balanced
// promise, (p - 1) sum_s u_s, is
//     excess(u) = p span(u) - (n + p - 1) sum_s u_s   (0 for equal stages).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace topology {

enum class Schedule : uint8_t { GPipe, OneFOneB, Interleaved };
const char* schedule_name(Schedule s);  // "gpipe", "1f1b", "interleaved_1f1b"

// (p - 1) / (v m); 0 for p < 2 or m < 1.
double theoretical_bubble(int p, int m, int v);

// excess(u) above, for n = m v chunk-steps per flush (u in any unit; the result in that unit).
double imbalance_excess(const std::vector<double>& u, int n);

}  // namespace topology
