// The driver: discovery on process 0, profiles spread over processes by size, per-rank
// metrics where the profile was read, rank assignment agreed by all, results written in parallel.
// Every collective call below is reached by every process whatever happened to its profiles:
// per-file errors are caught and carried as data, so no process waits for a failed one.
#include "driver.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <set>

#include "analysis.hpp"
#include "common/balance.hpp"
#include "common/tasks.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "hdf5_writer.hpp"
#include "output_files.hpp"
#include "ranks/belonging.hpp"
#include "ranks/discovery.hpp"
#include "ranks/rank_assignment.hpp"
#include "ranks/findings.hpp"
#include "ranks/metrics.hpp"
#include "collectives/nccl_annotate.hpp"
#include "ranks/profile_reader.hpp"
#include "report.hpp"
#include "compare_command.hpp"
#include "scaling_command.hpp"
#include "rows.hpp"
#include "scan_load.hpp"
#include "summary_json.hpp"
#include "tables/collect.hpp"
#include "timings.hpp"

namespace straggler {

// What process 0 found, for every process (field lists: exchange.hpp).
struct RankMapFile {
  std::string path;
  std::vector<ranks::RankMapEntry> entries;
};
struct DiscoveryMsg {
  std::string usage_error;  // non-empty: the arguments are unusable
  std::vector<ranks::ProfileFile> files;
  std::vector<ranks::SkippedEntry> skipped;
  std::vector<RankMapFile> rank_map;
};
// What reading one file gave: its source and rank processes, or why it failed.
struct FileInfo {
  uint64_t file = 0;
  bool ok = false;
  std::string error;  // why not
  ranks::ProfileSource source;
  int32_t processes = 0;
};

template <>
struct Wire<ranks::ProfileFile> {
  static void fields(auto& ar, auto& f) { ar(f.path, f.size, f.rank_from_name, f.node_from_name); }
};
template <>
struct Wire<ranks::SkippedEntry> {
  static void fields(auto& ar, auto& e) { ar(e.path, e.reason, e.rank_from_name); }
};
template <>
struct Wire<ranks::RankMapEntry> {
  static void fields(auto& ar, auto& e) { ar(e.pid, e.device, e.rank); }
};
template <>
struct Wire<RankMapFile> {
  static void fields(auto& ar, auto& f) { ar(f.path, f.entries); }
};
template <>
struct Wire<DiscoveryMsg> {
  static void fields(auto& ar, auto& d) { ar(d.usage_error, d.files, d.skipped, d.rank_map); }
};
template <>
struct Wire<ranks::ProfileSource> {
  static void fields(auto& ar, auto& s) { ar(s.format, s.version, s.schema); }
};
template <>
struct Wire<FileInfo> {
  static void fields(auto& ar, auto& f) { ar(f.file, f.ok, f.error, f.source, f.processes); }
};
template <>
struct Wire<ranks::FoundProcess> {
  static void fields(auto& ar, auto& p) {
    ar(p.file, p.pid, p.device, p.local_index, p.procs_in_file, p.kernels, p.nccl, p.host, p.wall_start, p.wall_end,
       p.claimed_rank, p.claimed_world, p.unusable, p.gpu_bus, p.host_gpu);
  }
};

namespace {

using Analyses = std::vector<std::unique_ptr<Analysis>>;

// Process 0 discovers; everyone gets the file list (or the usage error) by broadcast.
ranks::Discovery discover_everywhere(Transport& t, const Options& opt) {
  DiscoveryMsg msg;
  ranks::Discovery d;
  if (t.root()) {
    try {
      check_output_paths(opt);
      d = ranks::discover(opt.inputs, {opt.rank_pattern, opt.rank_map});
      std::vector<std::string> read;
      for (const auto& f : d.files) read.push_back(f.path);
      if (!opt.rank_map.empty()) read.push_back(opt.rank_map);
      check_outputs_not_inputs(opt, read);
      msg.files = d.files, msg.skipped = d.skipped;
      for (const auto& [path, entries] : d.rank_map) msg.rank_map.push_back({path, entries});
    } catch (const common::UsageError& e) {
      msg = DiscoveryMsg{e.what(), {}, {}, {}};
    }
  }
  ByteWriter w;
  put(w, msg);
  const std::string blob = t.broadcast(w.bytes(), 0);
  ByteReader r(blob);
  msg = get<DiscoveryMsg>(r);
  if (!msg.usage_error.empty()) throw common::UsageError(msg.usage_error);  // on every process, process 0 too
  if (t.root()) return d;
  d.files = std::move(msg.files), d.skipped = std::move(msg.skipped);
  for (auto& f : msg.rank_map) d.rank_map[f.path] = std::move(f.entries);
  return d;
}

// Largest files first, each to the least-loaded process: same answer on every process.
std::vector<int> assign_files(const std::vector<ranks::ProfileFile>& files, int nproc) {
  std::vector<int64_t> size;
  for (const auto& f : files) size.push_back(std::max<int64_t>(f.size, 1));
  return common::largest_first(size, nproc);
}

int64_t hang_margin_ns(const Options& opt) { return int64_t(opt.hang_margin_s * 1e9); }

// The cores this process has to itself: those it may run on (mpirun may bind it to one), shared
// with the job's other processes on this machine when they may run on the same ones.
int cores_of_process(const Transport& t) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int allowed = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const int machine = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  // Bound to fewer cores than the machine has: the launcher split them; else they are shared.
  return allowed < machine ? std::max(1, allowed) : std::max(1, allowed / std::max(1, t.local_processes()));
}

struct LocalRank {
  ranks::FoundProcess key;
  RankOutputs out;
  CrossRankInput cross;
};

struct LocalRead {
  std::vector<LocalRank> ranks;  // slot = index
  std::vector<FileInfo> files;
};

// Reads and measures this process's files, one at a time (timelines are dropped after use); every
// analysis sees each rank while its timeline lives.
LocalRead read_local(Transport& t, const Options& opt, const ranks::Discovery& d, const ProfileReader& read,
                     const Analyses& analyses) {
  ranks::MetricsOptions mopt;
  if (!opt.iteration_marker.empty()) mopt.iteration_marker = common::Regex(opt.iteration_marker);
  mopt.top_kernels = opt.top_kernels;
  const auto owner = assign_files(d.files, t.size());
  common::set_process_threads(cores_of_process(t));
  LocalRead local;
  for (size_t f = 0; f < d.files.size(); ++f) {
    if (owner[f] != t.rank()) continue;
    FileInfo info{f, false, "", {}, 0};
    try {
      auto timelines = read(d.files[f].path);  // annotated: compute_metrics refuses it otherwise
      info.ok = true, info.source = timelines.front().source, info.processes = int32_t(timelines.size());
      for (size_t i = 0; i < timelines.size(); ++i) {
        auto& tl = timelines[i];
        for (const auto& w : tl.warnings)  // recoverable oddities: said once, by the process that read the file
          std::cerr << "straggler-scan: warning: " << common::printable(tl.file) << ": " << common::printable(w) << "\n";
        LocalRank lr;
        lr.key = {f, tl.pid, tl.device, int(i), int(timelines.size()), int64_t(tl.kernels.size()),
                  int64_t(std::count(tl.kernels.is_nccl.begin(), tl.kernels.is_nccl.end(), 1) + tl.pending_nccl.size())};
        lr.key.host = tl.host, lr.key.gpu_bus = tl.gpu_bus, lr.key.host_gpu = tl.host_gpu;
        lr.key.claimed_rank = tl.claimed_rank, lr.key.claimed_world = tl.claimed_world, lr.key.unusable = tl.unusable;
        if (tl.utc_epoch_ns > 0) lr.key.wall_start = tl.utc_epoch_ns + tl.capture_start, lr.key.wall_end = tl.utc_epoch_ns + tl.capture_end;
        const auto metrics = ranks::compute_metrics(tl, mopt);
        for (const auto& w : metrics.warnings)
          std::cerr << "straggler-scan: warning: " << common::printable(tl.file) << ": " << common::printable(w) << "\n";
        lr.out = make_rank_outputs(tl, metrics);
        const auto ops = collectives::extract_ops(tl, metrics.iterations, -1);  // once, for the cross-rank run and the analyses
        lr.cross = make_cross_input(tl, ops, metrics.iterations, hang_margin_ns(opt));
        lr.cross.clock_domain = int64_t(f);
        lr.cross.findings = ranks::find_rank_findings(tl, metrics);
        for (const auto& a : analyses) a->add_rank(local.ranks.size(), {tl, metrics, ops});
        local.ranks.push_back(std::move(lr));
        tl = ranks::RankTimeline();
      }
    } catch (const ranks::ProfileError& e) {
      info.error = e.what();
    }
    local.files.push_back(std::move(info));
    t.alive();  // a long read here is work, not silence (--timeout)
    timings().progress(t.size() > 1 ? "reading profiles (process 0's share)" : "reading profiles", local.files.size(),
                       size_t(std::count(owner.begin(), owner.end(), t.rank())));
  }
  timings().mark("read and per-rank metrics");
  return local;
}

// Everyone learns what every file held: res.inputs, and res.failures of discovery and reading.
void gather_inputs(Transport& t, const ranks::Discovery& d, const std::vector<FileInfo>& mine, RunResults& res) {
  res.inputs.resize(d.files.size());
  for (size_t f = 0; f < d.files.size(); ++f) res.inputs[f].path = d.files[f].path;
  // The rank a file's name gives (when no rank map entry overrides it): for failures.
  auto name_rank = [&](size_t f) -> int32_t {
    return d.rank_map.count(d.files[f].path) ? -1 : d.files[f].rank_from_name.value_or(-1);
  };
  for (const auto& e : d.skipped) res.failures.push_back({e.rank_from_name.value_or(-1), e.path, e.reason});
  for (const auto& fi : allgather_list(t, mine)) {
    if (!fi.ok) {
      res.failures.push_back({name_rank(fi.file), d.files[fi.file].path, fi.error});
      continue;
    }
    auto& in = res.inputs[fi.file];
    in.format = fi.source.format, in.version = fi.source.version, in.schema = fi.source.schema, in.ranks = fi.processes;
  }
}

bool by_position(const ranks::FoundProcess& a, const ranks::FoundProcess& b) {
  return std::tie(a.file, a.local_index) < std::tie(b.file, b.local_index);
}

// The rank of each local slot, agreed by every process (-1: rejected, with a failure row).
std::vector<int32_t> agree_ranks(Transport& t, const Options& opt, const ranks::Discovery& d, const LocalRead& local,
                                 RunResults& res) {
  std::vector<ranks::FoundProcess> mine;
  for (const auto& lr : local.ranks) mine.push_back(lr.key);
  std::vector<ranks::FoundProcess> found = allgather_list(t, mine);
  std::sort(found.begin(), found.end(), by_position);
  auto assignment = ranks::assign_ranks(
      d, found, {opt.layout ? int64_t(opt.layout->world()) : 0, opt.layout ? opt.layout->to_string() : ""});
  if (t.root())
    for (const auto& w : assignment.warnings) std::cerr << "straggler-scan: warning: " << w << "\n";
  // Profiles of different runs in one folder (ranks/belonging.hpp): a warning, an error with --strict.
  const auto problems = ranks::belonging_problems(d, found, assignment.rank);
  if (!problems.empty() && opt.strict) throw common::UsageError("--strict: " + problems.front());
  if (t.root())
    for (const auto& p : problems) std::cerr << "straggler-scan: warning: " << p << "\n";
  for (size_t i = 0; i < found.size(); ++i) {
    if (const auto x = opt.excluded_ranks.find(assignment.rank[i]); x != opt.excluded_ranks.end())
      assignment.claimed[i] = assignment.rank[i], assignment.rank[i] = -1, assignment.errors[i] = x->second;
    if (assignment.rank[i] < 0) {
      res.failures.push_back({assignment.claimed[i], d.files[found[i].file].path, assignment.errors[i]});
      continue;
    }
    ++res.total_ranks;
  }
  std::sort(res.failures.begin(), res.failures.end(),
            [](auto& a, auto& b) { return std::tie(a.file, a.error) < std::tie(b.file, b.error); });
  // A file rejected as a whole (e.g. named for one rank but holding several processes) is one
  // failure, not one per process it holds.
  res.failures.erase(std::unique(res.failures.begin(), res.failures.end(),
                                 [](auto& a, auto& b) { return a.file == b.file && a.error == b.error; }),
                     res.failures.end());
  res.world = 0;
  for (int r : assignment.rank) res.world = std::max(res.world, int32_t(r + 1));
  std::vector<int32_t> rank_of_slot;
  for (const auto& lr : local.ranks) {
    auto it = std::lower_bound(found.begin(), found.end(), lr.key, by_position);
    rank_of_slot.push_back(int32_t(assignment.rank[size_t(it - found.begin())]));
  }
  return rank_of_slot;
}

// The rows of the local ranks that got a rank into `res`; their cross-rank inputs.
std::vector<CrossRankInput> place_ranks(LocalRead& local, const std::vector<int32_t>& rank_of_slot, RunResults& res) {
  std::vector<CrossRankInput> cross;
  for (size_t slot = 0; slot < local.ranks.size(); ++slot) {
    const int rank = rank_of_slot[slot];
    auto& lr = local.ranks[slot];
    if (rank < 0) continue;
    set_rank(lr.out, rank);
    set_cross_rank(lr.cross, rank);
    cross.push_back(std::move(lr.cross));
    res.ranks.push_back(lr.out.row);
    res.top_kernels.insert(res.top_kernels.end(), lr.out.top_kernels.begin(), lr.out.top_kernels.end());
    res.iterations.insert(res.iterations.end(), lr.out.iterations.begin(), lr.out.iterations.end());
    res.histograms.push_back(lr.out.histograms);
  }
  sort_by_rank(res);
  return cross;
}

// Both outputs appear together, complete, or neither does; then the report on process 0.
// Without opt.output (`report`): the summary and the report only.
void write_outputs(Transport& t, const Options& opt, const RunResults& res, const Analyses& analyses) {
  OutputFiles files(t, opt.output, opt.summary);
  if (!opt.output.empty()) {
    write_hdf5(t, opt.output, files.h5_temp(), tables::collect_tables(res, analyses));
    timings().mark("write HDF5");
  }
  // Process 0 also needs every rank's row for the report and the summary.
  RunSummaryInput all = gather_summary_input(t, res, 0);
  if (t.root())
    for (const auto& a : analyses) {
      for (auto& kv : a->summary(res, all)) all.analysis_keys.push_back(std::move(kv));
      if (ReportSection section = a->report(res, all); !section.text.empty()) all.report_sections.push_back(std::move(section));
    }
  std::string error;
  if (t.root() && !opt.summary.empty())
    if (std::string why = write_summary_json(files.summary_temp(), all); !why.empty())
      error = common::printable(opt.summary) + ": cannot write the summary (" + why + ")";
  files.commit(error);
  timings().mark("summary");
  if (t.root()) {
    if (opt.timings) timings().print(std::cerr);
    print_failures(std::cerr, res.failures);
    if (!opt.quiet) print_report(std::cout, all, opt);
  }
}

}  // namespace

Scan analyse(Transport& t, const Options& opt, const ProfileReader& read) {
  timings().start();
  const bool progress = t.root() && !opt.quiet && (opt.progress || ::isatty(STDERR_FILENO));
  timings().progress_to(progress ? &std::cerr : nullptr);
  Scan scan;
  const ranks::Discovery d = discover_everywhere(t, opt);
  timings().mark("discover");
  scan.analyses = make_analyses(opt);
  LocalRead local = read_local(t, opt, d, read, scan.analyses);
  RunResults& res = scan.results;
  res.command_line = opt.command_line;
  gather_inputs(t, d, local.files, res);
  const std::vector<int32_t> rank_of_slot = agree_ranks(t, opt, d, local, res);
  for (const auto& a : scan.analyses) a->assign_ranks(rank_of_slot);
  std::vector<CrossRankInput> cross_inputs = place_ranks(local, rank_of_slot, res);
  res.hosts = gather_hosts(t, res.ranks);
  if (res.total_ranks == 0 || (opt.strict && !res.failures.empty())) {
    if (opt.inner) {
      scan.failure = res.failures.empty() ? "no profile" : failure_text(res.failures.front()) +
                                                             (res.failures.size() > 1 ? ", and more" : "");
    } else if (t.root()) {
      print_failures(std::cerr, res.failures);
      std::cerr << "straggler-scan: " << (res.total_ranks == 0 ? "no usable profile" : "--strict: some profiles failed")
                << "; nothing written\n";
    }
    scan.status = 2;
    return scan;
  }
  timings().mark("assign ranks");
  check_layout(opt, res.world, res.failures);  // the same answer on every process
  auto cross = run_cross_rank(t, cross_inputs, res.world, opt.layout, opt.clock_correction, hang_margin_ns(opt));
  // Ranks of another job among these: the run once more without them, as if they were not there
  // (every process found the same ones; once only).
  if (!cross.foreign_ranks.empty() && opt.excluded_ranks.empty()) {
    Options again = opt;
    again.excluded_ranks = cross.foreign_ranks;
    timings().mark("ranks of another job found: analyse again without them");
    return analyse(t, again, read);
  }
  scan.cross = std::make_shared<const CrossRankResults>(std::move(cross));
  apply_cross_rank(res, *scan.cross);
  res.cross = scan.cross.get();  // the shared results stay where they are when the scan moves
  const auto registry = analysis_registry();  // make_analyses' order: each one's time for --timings
  for (size_t i = 0; i < scan.analyses.size(); ++i) {
    scan.analyses[i]->finish(t, res);
    timings().mark("finish " + (i < registry.size() ? registry[i].name : std::to_string(i)));
  }
  return scan;
}

void publish(Transport& t, const Scan& scan, const Options& opt) {
  if (scan.status != 0) return;
  write_outputs(t, opt, scan.results, scan.analyses);
}

int run_analysis(Transport& t, const Options& opt) {
  if (opt.command == Options::Command::Report) return run_report(t, opt);
  if (opt.command == Options::Command::Scaling) return run_scaling(t, opt);
  if (opt.command == Options::Command::Compare) return run_compare(t, opt);
  return run_analysis(t, opt, [](const std::string& path) { return collectives::read_annotated(path); });
}

int run_report(Transport& t, const Options& opt) {
  timings().start();
  // Process 0 reads the scan (the summary and the report are its alone); every process learns
  // whether that worked, so none waits on a failed one.
  Scan scan;
  std::string error;
  if (t.root()) {
    try {
      check_output_paths(opt);
      check_outputs_not_inputs(opt, {opt.scan_file});
      scan = load_scan(opt.scan_file);
    } catch (const common::UsageError& e) {
      error = e.what();
    }
  }
  error = t.broadcast(error, 0);
  if (!error.empty()) throw common::UsageError(error);
  timings().mark("read the scan");
  publish(t, scan, opt);
  return 0;
}

int run_analysis(Transport& t, const Options& opt, const ProfileReader& read) {
  const Scan scan = analyse(t, opt, read);
  publish(t, scan, opt);
  return scan.status;
}

}  // namespace straggler
