// Which wall the step hits (docs/walls.md): per rank, its steady window split exclusively into
// compute (GEMM, attention), memory (elementwise, norm, reduction, copy kernels), other (kernels no
// rule names), exposed communication, exposed memcpy/memset and idle (ranks/kernel_class.hpp); for the
// job, the ranks together. HDF5 /walls (per rank), summary key `walls`, a report section.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "analyses/builtin.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "ranks/kernel_class.hpp"
#include "table_read.hpp"

namespace straggler::analyses {
namespace {

using ranks::Wall;
using tables::col;

struct WallRow {
  int32_t rank = -1;
  double window_ms = 0;
  std::array<double, ranks::kWalls> wall_ms{};            // compute, memory, other, communication, copy, idle
  std::array<double, ranks::kKernelClasses> class_ms{};   // gemm ... other
  double copy_ms = 0;                                     // memcpy and memset activity
  std::string wall;                                       // the largest part
};

const tables::Table<WallRow>& walls_table() {
  using R = WallRow;
  static const tables::Table<R> t{
      "/walls", "per rank: its steady window split into walls, and kernel time per name class (docs/walls.md)",
      tables::Distribution::Replicated,
      {col("rank", &R::rank), col("window_ms", &R::window_ms, "ms", "the rank's steady window (else its whole GPU window)"),
       col("wall_ms", &R::wall_ms, "ms",
           "exclusive time: compute, memory, other, communication (exposed), copy (memcpy/memset, exposed), idle; adds up "
           "to window_ms"),
       col("class_ms", &R::class_ms, "ms",
           "kernel time per class: gemm, attention, elementwise, norm, reduction, copy, communication, other"),
       col("copy_ms", &R::copy_ms, "ms", "memcpy and memset activity"),
       col("wall", &R::wall, "", "the largest part")},
      nullptr};
  return t;
}

std::string largest(const std::array<double, ranks::kWalls>& ms) {
  return ranks::wall_name(Wall(std::max_element(ms.begin(), ms.end()) - ms.begin()));
}

// The regime table of ../shared/docs/domain/find-the-wall.txt, in one line per wall.
const char* advice(const std::string& wall) {
  if (wall == "compute") return "compute-bound: the chip's FLOP/s (lower precision, better kernels: the happy wall)";
  if (wall == "memory") return "bandwidth-bound: HBM (fusion, fewer and larger ops)";
  if (wall == "communication") return "communication-bound: exposed collectives (overlap them with compute)";
  if (wall == "copy") return "copy-bound: host-device copies on the copy engines (pinned memory, overlap, fewer copies)";
  if (wall == "idle") return "overhead-bound: the GPU waits on the host (dataloader, launches: CUDA graphs, compile)";
  return "kernels no rule names dominate (see /kernels/top)";
}

class Walls : public PerRankAnalysis<WallRow> {
 public:
  void finish(Transport& t, const RunResults&) override {
    ByteWriter w;
    walls_table().pack(w, rows());
    std::vector<WallRow> all;
    for (const auto& blob : t.allgather(w.bytes())) {
      ByteReader r(blob);
      for (auto& row : walls_table().unpack(r)) all.push_back(std::move(row));
    }
    std::sort(all.begin(), all.end(), [](const WallRow& a, const WallRow& b) { return a.rank < b.rank; });
    set_rows(std::move(all));
  }
  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(walls_table().materialize(rows()));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override {
    JsonWriter j;
    const auto job = job_ms();
    double total = 0;
    for (double v : job) total += v;
    if (rows().empty() || total <= 0) return {{"walls", j.null().str()}};
    j.begin_object().key("wall").value(largest(job)).key("shares").begin_object();
    for (int w = 0; w < ranks::kWalls; ++w) j.key(ranks::wall_name(Wall(w))).value(job[size_t(w)] / total);
    j.end_object().key("ranks_elsewhere").begin_array();  // ranks whose own wall is another (first 32)
    size_t n = 0;
    for (const auto& r : rows())
      if (!r.wall.empty() && r.wall != largest(job) && n++ < 32) j.value(int64_t(r.rank));
    return {{"walls", j.end_array().end_object().str()}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput&) const override {
    const auto job = job_ms();
    double total = 0;
    for (double v : job) total += v;
    if (rows().empty() || total <= 0) return {};
    std::string s = "\nwhich wall (the ranks' steady GPU time, exclusive):\n  ";
    for (int w = 0; w < ranks::kWalls; ++w)
      s += fmt::format("{}{} {:.1f}%", w ? ", " : "", ranks::wall_name(Wall(w)), 100 * job[size_t(w)] / total);
    s += fmt::format("\n  the step hits the {} wall: {}\n", largest(job), advice(largest(job)));
    size_t elsewhere = 0;
    for (const auto& r : rows()) elsewhere += !r.wall.empty() && r.wall != largest(job);
    if (elsewhere) s += fmt::format("  {} rank{} hit another wall (/walls)\n", elsewhere, elsewhere == 1 ? "" : "s");
    return {ReportPart::Measurements, s};
  }
  void load(const h5read::File& h5) override {
    if (h5.exists("/walls")) set_rows(tables::read_rows(h5, walls_table()));  // absent: a scan from before it
  }

 protected:
  std::vector<WallRow> measure(const RankInput& in) override {
    const auto& m = in.metrics;
    const bool scoped = m.scope_end > m.scope_start;
    const auto w = ranks::wall_times(in.timeline, scoped ? m.scope_start : m.gpu_start, scoped ? m.scope_end : m.gpu_end);
    WallRow r;
    r.window_ms = double(w.window_ns) / 1e6;
    for (int i = 0; i < ranks::kWalls; ++i) r.wall_ms[size_t(i)] = w.wall_ns[i] / 1e6;
    for (int i = 0; i < ranks::kKernelClasses; ++i) r.class_ms[size_t(i)] = w.class_ns[i] / 1e6;
    r.copy_ms = w.copy_ns / 1e6;
    r.wall = w.window_ns > 0 ? largest(r.wall_ms) : "";  // no window: no wall
    return {r};
  }
  void set_rank(WallRow& row, int32_t rank) override { row.rank = rank; }

 private:
  std::array<double, ranks::kWalls> job_ms() const {
    std::array<double, ranks::kWalls> job{};
    for (const auto& r : rows())
      for (size_t w = 0; w < job.size(); ++w) job[w] += r.wall_ms[w];
    return job;
  }
};

}  // namespace

std::unique_ptr<Analysis> walls() { return std::make_unique<Walls>(); }

}  // namespace straggler::analyses
