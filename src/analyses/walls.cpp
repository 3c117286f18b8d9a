// Which wall the step hits (docs/walls.md): per rank, its steady window split exclusively into
// compute (GEMM, attention), memory (elementwise, norm, reduction, copy kernels), other (kernels no
// rule names), exposed communication, exposed memcpy/memset and idle (ranks/kernel_class.hpp); for the
// job, the ranks together. Exposed communication is split again with the replay's waits: time a
// rank waited in a collective for its last member is no interconnect wall but the wait for whoever
// came last, charged to that rank (issue 37). HDF5 /walls (per rank), summary key `walls`, a report
// section.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "analyses/builtin.hpp"
#include "analyses/walls.hpp"
#include "cross_rank.hpp"
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
  // Of wall_ms[communication]: waiting for the last member to arrive (the replay's exposed waits
  // in the rank's steady iterations, at most the exposed communication); the rest is transfer.
  double waiting_ms = 0;
  double caused_wait_ms = -1;  // the job's waiting charged to this rank (its root blame share); -1: unknown
  std::string wall;            // the largest part, waiting apart from communication
  uint8_t from_second = 0;     // measure(): its window starts at its second iteration (not stored)
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
       col("waiting_ms", &R::waiting_ms, "ms",
           "of wall_ms' communication: waiting in collectives for the last member to arrive (the replay's exposed "
           "waits in the rank's steady iterations); the rest is transfer")
           .added(),
       col("caused_wait_ms", &R::caused_wait_ms, "ms",
           "the job's waiting_ms charged to this rank, in proportion to its root blame (the waits it started); -1: unknown")
           .added(),
       col("wall", &R::wall, "", "the largest part: compute, memory, other, communication (transfer), waiting, copy, idle")},
      nullptr};
  return t;
}

std::string largest(const std::array<double, ranks::kWalls>& ms) {
  return ranks::wall_name(Wall(std::max_element(ms.begin(), ms.end()) - ms.begin()));
}

// The parts with waiting apart: compute, memory, other, communication (transfer), waiting, copy, idle.
constexpr int kParts = ranks::kWalls + 1;
constexpr size_t kComm = size_t(Wall::Communication), kWaiting = kComm + 1;
std::array<double, kParts> parts_of(const std::array<double, ranks::kWalls>& wall_ms, double waiting_ms) {
  std::array<double, kParts> p{};
  for (size_t w = 0, i = 0; w < wall_ms.size(); ++w, ++i) {
    if (w == kComm) p[i++] = wall_ms[w] - waiting_ms, p[i] = waiting_ms;
    else p[i] = wall_ms[w];
  }
  return p;
}
const char* part_name(size_t i) { return i == kWaiting ? "waiting" : ranks::wall_name(Wall(i < kWaiting ? i : i - 1)); }
std::string largest_part(const std::array<double, kParts>& p) {
  return part_name(size_t(std::max_element(p.begin(), p.end()) - p.begin()));
}

// A rank's waits in its window's iterations (exposed: replay.hpp), at most its exposed communication.
double steady_waiting_ms(const std::vector<double>& by_iteration, bool from_second, double exposed_ms) {
  double ns = 0;
  for (size_t i = from_second ? 1 : 0; i < by_iteration.size(); ++i) ns += by_iteration[i];
  return std::clamp(ns / 1e6, 0.0, std::max(0.0, exposed_ms));
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
  void finish(Transport& t, const RunResults& res) override {
    ByteWriter w;
    walls_table().pack(w, rows());
    std::vector<WallRow> all;
    for (const auto& blob : t.allgather(w.bytes())) {
      ByteReader r(blob);
      for (auto& row : walls_table().unpack(r)) all.push_back(std::move(row));
    }
    std::sort(all.begin(), all.end(), [](const WallRow& a, const WallRow& b) { return a.rank < b.rank; });
    if (res.cross) charge_waits(*res.cross, all);
    set_rows(std::move(all));
  }
  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(walls_table().materialize(rows()));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override {
    JsonWriter j;
    const auto job = job_parts();
    double total = 0;
    for (double v : job) total += v;
    if (rows().empty() || total <= 0) return {{"walls", j.null().str()}};
    j.begin_object().key("wall").value(hardware_wall(job)).key("shares").begin_object();
    for (size_t p = 0; p < job.size(); ++p) j.key(part_name(p)).value(job[p] / total);
    j.end_object().key("waiting_for").begin_array();  // who the waiting is for, most first
    for (const auto& [rank, share] : waited_for()) j.begin_object().key("rank").value(int64_t(rank)).key("share").value(share).end_object();
    j.end_array().key("ranks_elsewhere").begin_array();  // ranks whose own wall is another (first 32)
    size_t n = 0;
    for (const auto& r : rows())
      if (!r.wall.empty() && r.wall != hardware_wall(job) && n++ < 32) j.value(int64_t(r.rank));
    return {{"walls", j.end_array().end_object().str()}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput&) const override {
    const auto job = job_parts();
    double total = 0;
    for (double v : job) total += v;
    if (rows().empty() || total <= 0) return {};
    std::string s = "\nwhich wall (the ranks' steady GPU time, exclusive):\n  ";
    for (size_t p = 0; p < job.size(); ++p) s += fmt::format("{}{} {:.1f}%", p ? ", " : "", part_name(p), 100 * job[p] / total);
    s += "\n" + waiting_line(job[kWaiting] / total);
    const std::string wall = hardware_wall(job);
    s += fmt::format("  {}the step hits the {} wall: {}\n", largest_part(job) == "waiting" ? "without the wait, " : "", wall, advice(wall));
    size_t elsewhere = 0;
    for (const auto& r : rows()) elsewhere += !r.wall.empty() && r.wall != wall;
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
    r.wall = w.window_ns > 0 ? largest(r.wall_ms) : "";  // no window: no wall (finish() splits the waiting off)
    r.from_second = scoped && m.steady;
    return {r};
  }
  void set_rank(WallRow& row, int32_t rank) override { row.rank = rank; }

 private:
  std::array<double, kParts> job_parts() const {
    std::array<double, kParts> job{};
    for (const auto& r : rows()) {
      const auto p = parts_of(r.wall_ms, r.waiting_ms);
      for (size_t i = 0; i < job.size(); ++i) job[i] += p[i];
    }
    return job;
  }
  // The largest part that is a wall of the hardware or the host: waiting is someone else's work.
  static std::string hardware_wall(std::array<double, kParts> job) {
    job[kWaiting] = -1;
    return largest_part(job);
  }
  // Ranks the waiting is charged to well beyond their even share (3x it, at least 10%: a healthy
  // pipeline's bubbles and jitter spread over every rank are nobody's slow work), most first, at
  // most 3, with their share of it.
  std::vector<std::pair<int32_t, double>> waited_for() const {
    double total = 0;
    for (const auto& r : rows()) total += std::max(0.0, r.caused_wait_ms);
    const double least = std::max(0.1, 3.0 / double(std::max<size_t>(rows().size(), 1)));
    std::vector<std::pair<int32_t, double>> out;
    for (const auto& r : rows())
      if (total > 0 && r.caused_wait_ms / total >= least) out.push_back({r.rank, r.caused_wait_ms / total});
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (out.size() > 3) out.resize(3);
    return out;
  }
  std::string waiting_line(double share) const {
    if (share < 0.005) return "";
    const auto who = waited_for();
    if (who.empty())
      return fmt::format("  waiting {:.1f}%: in collectives for the last member to arrive, spread over the ranks (no rank "
                         "makes the others wait: pipeline bubbles, jitter)\n",
                         100 * share);
    std::string names;
    for (size_t i = 0; i < who.size(); ++i) names += fmt::format("{}rank {} ({:.0f}%)", i ? ", " : "", who[i].first, 100 * who[i].second);
    return fmt::format("  waiting {:.1f}%: in collectives for {}: {} slow work, not the interconnect (fixing {} gives it "
                       "back: the verdict)\n",
                       100 * share, names, who.size() == 1 ? "its" : "their", who.size() == 1 ? "it" : "them");
  }
  // The replay's waits, each rank's in its own window, and who they are for (root blame shares:
  // collectives/root_blame.hpp, the rank that started each chain of waits).
  static void charge_waits(const CrossRankResults& x, std::vector<WallRow>& all) {
    double job_wait = 0, root_total = 0;
    const auto& root = x.root_blame.root_ns;
    for (auto& r : all) {
      if (size_t(r.rank) < x.acc.wait_by_iteration.size())
        r.waiting_ms = steady_waiting_ms(x.acc.wait_by_iteration[size_t(r.rank)], r.from_second, r.wall_ms[kComm]);
      if (r.window_ms > 0) r.wall = largest_part(parts_of(r.wall_ms, r.waiting_ms));
      job_wait += r.waiting_ms;
      if (size_t(r.rank) < root.size()) root_total += std::max(0.0, root[size_t(r.rank)]);
    }
    for (auto& r : all)
      if (size_t(r.rank) < root.size())
        r.caused_wait_ms = root_total > 0 ? job_wait * std::max(0.0, root[size_t(r.rank)]) / root_total : 0;
  }
};

}  // namespace

std::unique_ptr<Analysis> walls() { return std::make_unique<Walls>(); }

std::vector<RankWaiting> rank_waiting(const std::vector<std::unique_ptr<Analysis>>& analyses) {
  std::vector<RankWaiting> out;
  for (const auto& a : analyses)
    if (const auto* w = dynamic_cast<const Walls*>(a.get()))
      for (const auto& r : w->rows()) out.push_back({r.rank, r.waiting_ms, r.caused_wait_ms});
  return out;
}

}  // namespace straggler::analyses
