// Declarations of the per-rank tables: /ranks, /histograms (per rank and summed), /kernels/top,
// /iterations (long format). Each process holds the rows of the ranks it read (ByRank).
#pragma once
#include "results.hpp"
#include "table.hpp"

namespace straggler::tables {

// One bin of the fixed log-spaced histogram bins.
struct HistogramBin {
  int64_t edge_ns = 0;
};

const Table<RankRow>& ranks_table();
const Table<RankHistograms>& rank_histograms_table();    // /histograms/kernel_ns, ... [ranks x bins]
const Table<RankHistograms>& summed_histograms_table();  // /histograms/kernel_ns_all, ... [bins]
const Table<HistogramBin>& histogram_edges_table();
const Table<TopKernelRow>& top_kernels_table();
const Table<IterationRow>& iterations_table();

std::vector<HistogramBin> histogram_bins();

}  // namespace straggler::tables
