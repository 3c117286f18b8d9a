#include "scan_load.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "analyses/what_if.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "h5_read.hpp"
#include "table_read.hpp"
#include "tables/collect.hpp"
#include "tables/cross_tables.hpp"
#include "tables/rank_tables.hpp"
#include "tables/run_tables.hpp"

namespace straggler {
namespace {
using tables::read_rows;

// The file is ours and of the layout this build reads.
void check_format(const std::string& path) {
  if (!h5read::has_attribute(path, "/", "tool") || h5read::string_attribute(path, "/", "tool") != "straggler-scan")
    throw std::runtime_error("not a straggler-scan output (no tool attribute \"straggler-scan\")");
  if (!h5read::has_attribute(path, "/", "format_version"))
    throw std::runtime_error("written by straggler-scan " + h5read::string_attribute(path, "/", "version") +
                             ", before scans could be read back (no format_version); scan the profiles again");
  const auto v = h5read::attribute<int64_t>(path, "/", "format_version");
  if (v != tables::kFormatVersion)
    throw std::runtime_error("format version " + std::to_string(v) + ", this build reads version " +
                             std::to_string(tables::kFormatVersion));
}

void load_run(const std::string& path, RunResults& res) {
  res.ranks = read_rows(path, tables::ranks_table());
  res.iterations = read_rows(path, tables::iterations_table());
  res.top_kernels = read_rows(path, tables::top_kernels_table());
  res.failures = read_rows(path, tables::failures_table());
  res.inputs = read_rows(path, tables::inputs_table());
  res.hosts = h5read::string_list_attribute(path, "/", "hosts");
  res.command_line = h5read::string_attribute(path, "/", "command_line");
  res.total_ranks = int32_t(h5read::attribute<int64_t>(path, "/", "ranks"));
  for (const auto& r : res.ranks) res.world = std::max(res.world, r.rank + 1);
}

// Communicators with their member ranks (/collectives/members, by member_offset and size).
std::vector<CommSummary> load_comms(const std::string& path) {
  const auto rows = read_rows(path, tables::communicators_table());
  const auto members = read_rows(path, tables::members_table());
  std::vector<CommSummary> comms;
  for (const auto& r : rows) {
    CommSummary c = r.comm;
    if (r.member_offset < 0 || size_t(r.member_offset) + size_t(r.size) > members.size())
      throw std::runtime_error("/collectives/communicators: member_offset out of range");
    for (int32_t k = 0; k < r.size; ++k) c.ranks.push_back(members[size_t(r.member_offset) + size_t(k)].rank);
    comms.push_back(std::move(c));
  }
  return comms;
}

collectives::LayoutFinding load_layout(const std::string& path) {
  collectives::LayoutFinding f;
  const auto rows = read_rows(path, tables::layout_table());
  if (rows.empty()) return f;
  const auto& l = rows.front();
  topology::ParallelLayout p;
  p.tp = l.tp, p.pp = l.pp, p.dp = l.dp;
  p.order = l.order == topology::rank_order_name(topology::RankOrder::TpPpDp) ? topology::RankOrder::TpPpDp
                                                                              : topology::RankOrder::TpDpPp;
  f.layout = p, f.source = l.source, f.consistency = l.consistency, f.how = l.how, f.notes = l.notes;
  return f;
}

ClockSummary load_clock(const std::string& path) {
  ClockSummary c;
  c.max_offset_ns = h5read::attribute<double>(path, "/clock", "max_offset_ms") * 1e6;
  c.residual_ns = h5read::attribute<double>(path, "/clock", "residual_ms") * 1e6;
  c.violations_before = h5read::attribute<int64_t>(path, "/clock", "violations_before");
  c.violations_after = h5read::attribute<int64_t>(path, "/clock", "violations_after");
  c.ops = h5read::attribute<int64_t>(path, "/clock", "matched_ops");
  c.unaligned_ranks = int32_t(h5read::attribute<int64_t>(path, "/clock", "unaligned_ranks"));
  c.distrusted_edges = h5read::attribute<int64_t>(path, "/clock", "distrusted_edges");
  c.rejected = h5read::string_attribute(path, "/clock", "not_corrected_because");
  return c;
}

collectives::Verdict load_verdict(const std::string& path) {
  collectives::Verdict v;
  v.stragglers = read_rows(path, tables::stragglers_table());
  v.slow_links = read_rows(path, tables::slow_links_table());
  v.change_points = read_rows(path, tables::change_points_table());
  for (const auto& j : read_rows(path, tables::job_step_table())) v.job_step_ms.push_back(j.step_ms);
  v.judged_iterations = h5read::attribute<int64_t>(path, "/stragglers", "judged_iterations");
  v.compared_ranks = h5read::attribute<int64_t>(path, "/stragglers", "compared_ranks");
  v.needed_iterations = h5read::attribute<int64_t>(path, "/stragglers", "needed_iterations");
  return v;
}

// The cross-rank results as far as the summary and the report use them; none when the scan had
// no cross-rank part (its file has no /clock).
std::shared_ptr<const CrossRankResults> load_cross(const std::string& path) {
  if (!h5read::exists(path, "/clock")) return nullptr;
  auto x = std::make_shared<CrossRankResults>();
  x->comms = load_comms(path);
  x->layout = load_layout(path);
  x->clock = load_clock(path);
  x->verdict = load_verdict(path);
  x->desync = read_rows(path, tables::desync_table());
  x->capture_ended = read_rows(path, tables::capture_ended_table());
  x->findings = read_rows(path, tables::findings_table());
  x->post_mortem = std::make_shared<const analyses::PostMortem>(analyses::load_post_mortem(path));
  x->bytes_exchanged_total = h5read::attribute<int64_t>(path, "/collectives/communicators", "exchange_bytes");
  const auto bins = read_rows(path, tables::collective_histograms_table());
  for (size_t b = 0; b < bins.size() && b < size_t(ranks::LogHistogram::kBins); ++b) {
    x->acc.wait_hist.counts[b] = bins[b].wait;
    x->acc.skew_hist.counts[b] = bins[b].skew;
    x->acc.transfer_hist.counts[b] = bins[b].transfer;
  }
  return x;
}

}  // namespace

Scan load_scan(const std::string& path) {
  Scan scan;
  try {
    check_format(path);
    load_run(path, scan.results);
    scan.cross = load_cross(path);
  } catch (const std::exception& e) {
    throw common::UsageError(common::printable(path) + ": cannot read the scan back: " + common::printable(e.what()));
  }
  scan.results.cross = scan.cross.get();
  scan.analyses = make_analyses(Options{});
  try {
    for (auto& a : scan.analyses) a->load(path);  // those with state of their own (Analysis::load)
  } catch (const std::exception& e) {
    throw common::UsageError(common::printable(path) + ": cannot read the scan back: " + common::printable(e.what()));
  }
  return scan;
}

bool is_scan_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char sig[8] = {};
  in.read(sig, 8);
  return in.gcount() == 8 && std::string(sig, 8) == std::string("\x89HDF\r\n\x1a\n", 8);
}

}  // namespace straggler
