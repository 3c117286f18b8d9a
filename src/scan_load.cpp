#include "scan_load.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "analyses/what_if.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "h5_read.hpp"
#include "ranks/rank_assignment.hpp"
#include "table_read.hpp"
#include "tables/catalog.hpp"
#include "tables/collect.hpp"
#include "tables/cross_tables.hpp"
#include "tables/rank_tables.hpp"
#include "tables/run_tables.hpp"

namespace straggler {
namespace {

constexpr int kProbeSeconds = 60;
using tables::read_rows;

}  // namespace

void check_scan_format(const h5read::File& f) {
  if (!f.has_attribute("/", "tool") || f.string_attribute("/", "tool") != "straggler-scan")
    throw std::runtime_error("not a straggler-scan output (no tool attribute \"straggler-scan\")");
  if (!f.has_attribute("/", "format_version"))
    throw std::runtime_error("written by straggler-scan " + f.string_attribute("/", "version") +
                             ", before scans could be read back (no format_version); scan the profiles again");
  const auto v = f.attribute<int64_t>("/", "format_version");
  if (v != tables::kFormatVersion)
    throw std::runtime_error("format version " + std::to_string(v) + ", this build reads version " +
                             std::to_string(tables::kFormatVersion));
}

namespace {

void load_run(const h5read::File& f, RunResults& res) {
  res.ranks = read_rows(f, tables::ranks_table());
  res.iterations = read_rows(f, tables::iterations_table());
  res.top_kernels = read_rows(f, tables::top_kernels_table());
  res.failures = read_rows(f, tables::failures_table());
  res.inputs = read_rows(f, tables::inputs_table());
  res.hosts = f.string_list_attribute("/", "hosts");
  res.command_line = f.string_attribute("/", "command_line");
  const int64_t total = f.attribute<int64_t>("/", "ranks");
  if (total < 0 || total > ranks::RankLimits::kMaxRanks || uint64_t(total) != res.ranks.size())
    throw std::runtime_error("/@ranks is " + std::to_string(total) + " but /ranks has " +
                             std::to_string(res.ranks.size()) + " rows");
  res.total_ranks = int32_t(total);
  // The scanner's own bound on rank numbers, ascending and unique as it writes them.
  for (size_t i = 0; i < res.ranks.size(); ++i) {
    const int32_t r = res.ranks[i].rank;
    if (r < 0 || r >= ranks::RankLimits::kMaxRanks || (i > 0 && r <= res.ranks[i - 1].rank))
      throw std::runtime_error("/ranks/rank: rank " + std::to_string(r) + " in row " + std::to_string(i) +
                               (r < 0 || r >= ranks::RankLimits::kMaxRanks ? " is out of range"
                                                                           : " is not above the row before it"));
    res.world = std::max(res.world, r + 1);
  }
}

// Communicators with their member ranks (/collectives/members, by member_offset and size).
std::vector<CommSummary> load_comms(const h5read::File& f) {
  const auto rows = read_rows(f, tables::communicators_table());
  const auto members = read_rows(f, tables::members_table());
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

collectives::LayoutFinding load_layout(const h5read::File& file) {
  collectives::LayoutFinding f;
  const auto rows = read_rows(file, tables::layout_table());
  if (rows.empty()) {  // unknown: its notes only (an attribute since 0.2's issue 36; absent before)
    if (file.has_attribute("/layout", "notes")) f.notes = file.string_list_attribute("/layout", "notes");
    return f;
  }
  const auto& l = rows.front();
  topology::ParallelLayout p;
  p.tp = l.tp, p.pp = l.pp, p.dp = l.dp;
  p.order = topology::rank_order_from_name(l.order);
  f.layout = p, f.source = l.source, f.consistency = l.consistency, f.how = l.how, f.notes = l.notes;
  return f;
}

ClockSummary load_clock(const h5read::File& f) {
  ClockSummary c;
  c.max_offset_ns = f.attribute<double>("/clock", "max_offset_ms") * 1e6;
  c.residual_ns = f.attribute<double>("/clock", "residual_ms") * 1e6;
  c.violations_before = f.attribute<int64_t>("/clock", "violations_before");
  c.violations_after = f.attribute<int64_t>("/clock", "violations_after");
  c.ops = f.attribute<int64_t>("/clock", "matched_ops");
  c.unaligned_ranks = int32_t(f.attribute<int64_t>("/clock", "unaligned_ranks"));
  c.distrusted_edges = f.attribute<int64_t>("/clock", "distrusted_edges");
  c.rejected = f.string_attribute("/clock", "not_corrected_because");
  if (f.has_attribute("/clock", "far_clocks")) c.far_clocks = f.string_attribute("/clock", "far_clocks");
  return c;
}

collectives::Verdict load_verdict(const h5read::File& f) {
  collectives::Verdict v;
  v.stragglers = read_rows(f, tables::stragglers_table());
  v.slow_links = read_rows(f, tables::slow_links_table());
  v.change_points = read_rows(f, tables::change_points_table());
  for (const auto& j : read_rows(f, tables::job_step_table())) v.job_step_ms.push_back(j.step_ms);
  v.judged_iterations = f.attribute<int64_t>("/stragglers", "judged_iterations");
  v.compared_ranks = f.attribute<int64_t>("/stragglers", "compared_ranks");
  v.needed_iterations = f.attribute<int64_t>("/stragglers", "needed_iterations");
  return v;
}

// The cross-rank results as far as the summary and the report use them; none when the scan had
// no cross-rank part (its file has no /clock).
std::shared_ptr<const CrossRankResults> load_cross(const h5read::File& f, const std::vector<IterationRow>& its) {
  if (!f.exists("/clock")) return nullptr;
  auto x = std::make_shared<CrossRankResults>();
  x->comms = load_comms(f);
  x->layout = load_layout(f);
  x->clock = load_clock(f);
  x->verdict = load_verdict(f);
  x->desync = read_rows(f, tables::desync_table());
  x->capture_ended = read_rows(f, tables::capture_ended_table());
  x->findings = read_rows(f, tables::findings_table());
  x->post_mortem = std::make_shared<const analyses::PostMortem>(analyses::load_post_mortem(f));
  // The iteration numbers problems date themselves by (problems.cpp reads the first rank's), as
  // the scan had them: the lowest rank's from /iterations (load_run read them).
  {
    int32_t lowest = INT32_MAX;
    for (const auto& it : its) lowest = std::min(lowest, it.rank);
    std::vector<int64_t> numbers;
    for (const auto& it : its)
      if (it.rank == lowest) numbers.push_back(it.number);
    if (!numbers.empty()) x->iteration_number.push_back(std::move(numbers));
  }
  x->bytes_exchanged_total = f.attribute<int64_t>("/collectives/communicators", "exchange_bytes");
  const auto bins = read_rows(f, tables::collective_histograms_table());
  for (size_t b = 0; b < bins.size() && b < size_t(ranks::LogHistogram::kBins); ++b) {
    x->acc.wait_hist.counts[b] = bins[b].wait;
    x->acc.skew_hist.counts[b] = bins[b].skew;
    x->acc.transfer_hist.counts[b] = bins[b].transfer;
  }
  return x;
}

}  // namespace

namespace {

// HDF5 itself trusts a file's structure: a damaged B-tree or heap can crash or stall the library
// before any of our checks can see it (random byte flips in a scan: 8 of 120 crash HDF5 1.10.8).
// So the scan is read once by a child process first (this binary, `--probe-scan-internal`), and
// only a file the child read completely is read here. The child's one-line refusal is ours.
std::string& probe_executable() {
  static std::string exe;  // set by main(); empty in tests that link the library (no probe)
  return exe;
}

void probe_in_child(const std::string& path) {
  if (probe_executable().empty()) return;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return;  // no pipe: read as before, unprobed
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  const std::string& exe = probe_executable();
  const std::string flag = kProbeFlag;
  char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(flag.c_str()), const_cast<char*>(path.c_str()), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return;  // cannot start it (no /proc): read as before
  }
  std::string said;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kProbeSeconds);
  for (;;) {
    pollfd p{out[0], POLLIN, 0};
    const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0 || ::poll(&p, 1, std::min(left, 1000)) < 0) break;
    char buf[4096];
    const ssize_t n = p.revents ? ::read(out[0], buf, sizeof buf) : 1;
    if (n == 0) break;  // the child closed its end: it is done
    if (n > 0 && p.revents && said.size() < 65536) said.append(buf, size_t(n));
  }
  ::close(out[0]);
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 50 && !(ended = ::waitpid(pid, &status, WNOHANG) == pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!ended) {
    ::kill(pid, SIGKILL), ::waitpid(pid, &status, 0);
    throw std::runtime_error("reading it did not end in " + std::to_string(kProbeSeconds) + " s (a damaged file)");
  }
  if (WIFSIGNALED(status))
    throw std::runtime_error("reading it crashes the HDF5 library (signal " + std::to_string(WTERMSIG(status)) +
                             "): a damaged file");
  if (WEXITSTATUS(status) != 0) {
    if (said.find("Sanitizer") != std::string::npos)  // a sanitizer build ends a crash itself
      throw std::runtime_error("reading it crashes the HDF5 library (a sanitizer stopped it): a damaged file");
    const size_t nl = said.find('\n');
    throw std::runtime_error(said.empty() ? "unreadable" : said.substr(0, nl));
  }
}

Scan load_checked(const std::string& path) {
  Scan scan;
  const h5read::File f(path);  // checked whole before anything is read (docs/hdf5-layout.md)
  check_scan_format(f);
  // Rule 5 over every declared table, also those the report does not read.
  for (const auto& schema : tables::all_schemas())
    if (f.exists(schema.path)) tables::check_table_shape(f, schema);
  if (f.exists("/ranks/rank")) {
    const auto rows = f.shape("/ranks/rank");
    const int64_t total = f.attribute<int64_t>("/", "ranks");
    if (rows.size() != 1 || total < 0 || uint64_t(total) != rows[0])
      throw std::runtime_error("/@ranks is " + std::to_string(total) + " but /ranks has " +
                               std::to_string(rows.empty() ? 0 : rows[0]) + " rows");
  }
  load_run(f, scan.results);
  scan.cross = load_cross(f, scan.results.iterations);
  scan.results.cross = scan.cross.get();
  scan.analyses = make_analyses(Options{});
  for (auto& a : scan.analyses) a->load(f);  // those with state of their own (Analysis::load)
  return scan;
}

}  // namespace

int probe_scan_main(const std::string& path) {
  try {
    load_checked(path);
    return 0;
  } catch (const std::exception& e) {
    std::cout << common::printable(e.what()) << "\n";
    return 2;
  }
}

void probe_scan(const std::string& path) { probe_in_child(path); }

void set_probe_executable(const std::string& exe) { probe_executable() = exe; }

Scan load_scan(const std::string& path) {
  try {
    probe_in_child(path);
    return load_checked(path);
  } catch (const std::exception& e) {
    throw common::UsageError(common::printable(path) + ": cannot read the scan back: " + common::printable(e.what()));
  }
}

bool is_scan_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  // The HDF5 signature is at 0, or after a user block at 512, 1024, 2048, ... (HDF5 file format
  // specification, "Format Signature"): a scan rewritten with a user block is still a scan.
  std::ifstream in(path, std::ios::binary);
  for (std::streamoff at = 0; at <= (std::streamoff(1) << 30); at = at == 0 ? 512 : 2 * at) {
    char sig[8] = {};
    in.clear();
    if (!in.seekg(at)) return false;
    in.read(sig, 8);
    if (in.gcount() != 8) return false;
    if (std::string(sig, 8) == std::string("\x89HDF\r\n\x1a\n", 8)) return true;
  }
  return false;
}

}  // namespace straggler
