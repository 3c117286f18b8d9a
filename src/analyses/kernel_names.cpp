// Every kernel name's count and time per rank over its steady window (the 64 costliest names of
// each rank; the rest summed as one row), for `straggler-scan compare` (docs/compare.md): what
// changed between two runs, per name, as HTA's TraceDiff does for one trace, across all ranks.
// HDF5 /kernels/steady (per rank).
#include <algorithm>
#include <unordered_map>

#include "analyses/builtin.hpp"
#include "analyses/kernel_names.hpp"
#include "h5_read.hpp"
#include "table_read.hpp"

namespace straggler::analyses {

using tables::col;

const tables::Table<KernelNameRow>& kernel_names_table() {
  using R = KernelNameRow;
  static const tables::Table<R> t{
      "/kernels/steady",
      "per rank, each kernel name's count and time over its steady window (its 64 costliest names; the rest as "
      "\"(other kernels)\"); docs/compare.md",
      tables::Distribution::ByRank,
      {col("rank", &R::rank), col("name", &R::name), col("nccl", &R::nccl, "", "1: an NCCL kernel"),
       col("count", &R::count, "", "kernels starting in the window"), col("total_ms", &R::total_ms, "ms"),
       col("steps", &R::steps, "", "the rank's steady iterations (the window's)")},
      [](const R& r) { return r.rank; }};
  return t;
}

namespace {

constexpr size_t kNamesKept = 64;

class KernelNames : public PerRankAnalysis<KernelNameRow> {
 public:
  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(kernel_names_table().materialize(rows()));
  }
  void load(const h5read::File& h5) override {
    if (h5.exists(kernel_names_table().path)) set_rows(tables::read_rows(h5, kernel_names_table()));
  }

 protected:
  std::vector<KernelNameRow> measure(const RankInput& in) override {
    const auto& m = in.metrics;
    const auto& k = in.timeline.kernels;
    const int64_t lo = m.scope_start, hi = m.scope_end;
    if (hi <= lo) return {};
    std::unordered_map<uint32_t, KernelNameRow> by_name;
    for (size_t i = 0; i < k.size(); ++i) {
      if (k.start[i] < lo || k.start[i] >= hi) continue;
      auto& r = by_name[k.name[i]];
      r.nccl = k.is_nccl[i], r.count++, r.total_ms += double(k.end[i] - k.start[i]) / 1e6;
      if (r.name.empty()) r.name = in.timeline.names.str(k.name[i]);
    }
    std::vector<KernelNameRow> rows;
    for (auto& [id, r] : by_name) rows.push_back(std::move(r));
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.name < b.name;
    });
    if (rows.size() > kNamesKept) {
      KernelNameRow other;
      other.name = "(other kernels)";
      for (size_t i = kNamesKept; i < rows.size(); ++i) other.count += rows[i].count, other.total_ms += rows[i].total_ms;
      rows.resize(kNamesKept);
      rows.push_back(std::move(other));
    }
    const int32_t steps = m.steady ? int32_t(m.step_ms.count) : 1;
    for (auto& r : rows) r.steps = steps;
    return rows;
  }
  void set_rank(KernelNameRow& row, int32_t rank) override { row.rank = rank; }
};

}  // namespace

std::unique_ptr<Analysis> kernel_names() { return std::make_unique<KernelNames>(); }

std::vector<KernelNameRow> kernel_name_rows(const std::vector<std::unique_ptr<Analysis>>& analyses) {
  for (const auto& a : analyses)
    if (const auto* k = dynamic_cast<const KernelNames*>(a.get())) return k->rows();
  return {};
}

}  // namespace straggler::analyses
