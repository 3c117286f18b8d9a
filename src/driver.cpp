// The driver: discovery on process 0, profiles spread over processes by size, per-rank
// metrics where the profile was read, rank assignment agreed by all, results written in parallel.
// Every collective call below is reached by every process whatever happened to its profiles:
// per-file errors are caught and carried as data, so no process waits for a failed one.
#include "driver.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <set>

#include "cross_rank.hpp"
#include "exchange.hpp"
#include "hdf5_writer.hpp"
#include "output_files.hpp"
#include "ranks/discovery.hpp"
#include "ranks/metrics.hpp"
#include "collectives/nccl_annotate.hpp"
#include "ranks/profile_reader.hpp"
#include "report.hpp"
#include "rows.hpp"
#include "summary_json.hpp"
#include "timings.hpp"

namespace straggler {
namespace {

// Process 0 discovers; everyone gets the file list (or the usage error) by broadcast.
ranks::Discovery discover_everywhere(Transport& t, const Options& opt) {
  const int me = t.rank();
  ByteWriter w;
  ranks::Discovery d;
  if (me == 0) {
    try {
      check_output_paths(opt);
      d = ranks::discover(opt.inputs, {opt.rank_pattern, opt.rank_map});
      w.pod<uint8_t>(0);
      w.pod<uint64_t>(d.files.size());
      for (const auto& f : d.files) {
        w.str(f.path);
        w.pod(f.size);
        w.pod<int32_t>(f.rank_from_name.value_or(-1));
        w.pod<int32_t>(f.node_from_name.value_or(-1));
      }
      w.pod<uint64_t>(d.skipped.size());
      for (const auto& e : d.skipped) {
        w.str(e.path);
        w.str(e.reason);
        w.pod<int32_t>(e.rank_from_name.value_or(-1));
      }
      w.pod<uint64_t>(d.rank_map.size());
      for (const auto& [path, entries] : d.rank_map) {
        w.str(path);
        w.pod<uint64_t>(entries.size());
        for (const auto& e : entries) {
          w.pod<int64_t>(e.pid.value_or(INT64_MIN));
          w.pod<int64_t>(e.device.value_or(INT64_MIN));
          w.pod<int32_t>(e.rank);
        }
      }
    } catch (const ranks::UsageError& e) {
      w = ByteWriter();
      w.pod<uint8_t>(1);
      w.str(e.what());
    }
  }
  const std::string blob = t.broadcast(w.bytes(), 0);
  ByteReader r(blob);
  if (r.pod<uint8_t>() != 0) throw ranks::UsageError(r.str());  // on every process, process 0 too
  if (me == 0) return d;
  d.files.resize(r.pod<uint64_t>());
  for (auto& f : d.files) {
    f.path = r.str();
    f.size = r.pod<int64_t>();
    if (int32_t v = r.pod<int32_t>(); v >= 0) f.rank_from_name = v;
    if (int32_t v = r.pod<int32_t>(); v >= 0) f.node_from_name = v;
  }
  d.skipped.resize(r.pod<uint64_t>());
  for (auto& e : d.skipped) {
    e.path = r.str();
    e.reason = r.str();
    if (int32_t v = r.pod<int32_t>(); v >= 0) e.rank_from_name = v;
  }
  for (uint64_t i = r.pod<uint64_t>(); i > 0; --i) {
    auto& entries = d.rank_map[r.str()];
    entries.resize(r.pod<uint64_t>());
    for (auto& e : entries) {
      if (int64_t v = r.pod<int64_t>(); v != INT64_MIN) e.pid = v;
      if (int64_t v = r.pod<int64_t>(); v != INT64_MIN) e.device = v;
      e.rank = r.pod<int32_t>();
    }
  }
  return d;
}

// Largest files first, each to the least-loaded process: same answer on every process.
std::vector<int> assign_files(const std::vector<ranks::ProfileFile>& files, int nproc) {
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return files[a].size > files[b].size; });
  std::vector<int64_t> load(size_t(nproc), 0);
  std::vector<int> owner(files.size());
  for (size_t f : order) {
    size_t p = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    owner[f] = int(p);
    load[p] += std::max<int64_t>(files[f].size, 1);
  }
  return owner;
}

struct LocalRank {
  ranks::FoundProcess key;
  RankOutputs out;
  CrossRankInput cross;
};

}  // namespace

int run_analysis(Transport& t, const Options& opt) {
  return run_analysis(t, opt, [](const std::string& path) { return ranks::read_profile(path); });
}

int run_analysis(Transport& t, const Options& opt, const ProfileReader& read) {
  const int me = t.rank(), nproc = t.size();
  timings().start();
  const ranks::Discovery d = discover_everywhere(t, opt);
  timings().mark("discover");
  const auto owner = assign_files(d.files, nproc);

  ranks::MetricsOptions mopt;
  if (!opt.iteration_marker.empty()) mopt.iteration_marker = std::regex(opt.iteration_marker);
  mopt.top_kernels = opt.top_kernels;

  // Read and measure this process's files, one at a time (timelines are dropped after use).
  std::vector<LocalRank> local;
  ByteWriter file_info;  // per file read: index, ok, error | versions, rank processes
  for (size_t f = 0; f < d.files.size(); ++f) {
    if (owner[f] != me) continue;
    file_info.pod<uint64_t>(f);
    try {
      auto timelines = read(d.files[f].path);
      file_info.pod<uint8_t>(1);
      for (auto& tl : timelines) collectives::annotate_nccl(tl);
      const auto& source = timelines.front().source;
      file_info.str(source.format), file_info.str(source.version), file_info.str(source.schema);
      file_info.pod<int32_t>(int32_t(timelines.size()));
      for (size_t i = 0; i < timelines.size(); ++i) {
        auto& tl = timelines[i];
        for (const auto& w : tl.warnings)  // recoverable oddities: said once, by the process that read the file
          std::cerr << "straggler-scan: warning: " << ranks::printable(tl.file) << ": " << ranks::printable(w) << "\n";
        LocalRank lr;
        lr.key = {f, tl.pid, tl.device, int(i), int(timelines.size())};
        const auto metrics = ranks::compute_metrics(tl, mopt);
        lr.out = make_rank_outputs(tl, metrics);
        lr.cross = make_cross_input(tl, metrics.iterations);
        lr.cross.clock_domain = int64_t(f);
        local.push_back(std::move(lr));
        tl = ranks::RankTimeline();
      }
    } catch (const ranks::ProfileError& e) {
      file_info.pod<uint8_t>(0);
      file_info.str(e.what());
    }
  }

  timings().mark("read and per-rank metrics");
  // Everyone learns what every file held, then assigns ranks identically.
  RunResults res;
  res.command_line = opt.command_line;
  res.inputs.resize(d.files.size());
  for (size_t f = 0; f < d.files.size(); ++f) res.inputs[f].path = d.files[f].path;
  // The rank a file's name gives (when no rank map entry overrides it): for failures.
  auto name_rank = [&](size_t f) -> int32_t {
    return d.rank_map.count(d.files[f].path) ? -1 : d.files[f].rank_from_name.value_or(-1);
  };
  for (const auto& e : d.skipped) res.failures.push_back({e.rank_from_name.value_or(-1), e.path, e.reason});
  for (const auto& blob : t.allgather(file_info.bytes())) {
    ByteReader r(blob);
    while (!r.done()) {
      const auto f = r.pod<uint64_t>();
      if (r.pod<uint8_t>()) {
        res.inputs[f].format = r.str();
        res.inputs[f].version = r.str();
        res.inputs[f].schema = r.str();
        res.inputs[f].ranks = r.pod<int32_t>();
      } else {
        res.failures.push_back({name_rank(f), d.files[f].path, r.str()});
      }
    }
  }
  std::vector<ranks::FoundProcess> found;
  {
    ByteWriter w;
    for (const auto& lr : local)
      w.pod(lr.key.file), w.pod(lr.key.pid), w.pod(lr.key.device), w.pod(lr.key.local_index), w.pod(lr.key.procs_in_file);
    for (const auto& blob : t.allgather(w.bytes())) {
      ByteReader r(blob);
      while (!r.done()) {
        ranks::FoundProcess p;
        p.file = r.pod<size_t>(), p.pid = r.pod<int64_t>(), p.device = r.pod<int>();
        p.local_index = r.pod<int>(), p.procs_in_file = r.pod<int>();
        found.push_back(p);
      }
    }
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) {
    return std::tie(a.file, a.local_index) < std::tie(b.file, b.local_index);
  });
  const auto assignment = ranks::assign_ranks(d, found);
  std::set<std::string> hosts;
  for (size_t i = 0; i < found.size(); ++i) {
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

  std::vector<CrossRankInput> cross_inputs;
  int world = 0;
  for (int r : assignment.rank) world = std::max(world, r + 1);
  for (auto& lr : local) {
    auto it = std::lower_bound(found.begin(), found.end(), lr.key, [](auto& a, auto& b) {
      return std::tie(a.file, a.local_index) < std::tie(b.file, b.local_index);
    });
    const int rank = assignment.rank[size_t(it - found.begin())];
    if (rank < 0) continue;
    set_rank(lr.out, rank);
    set_cross_rank(lr.cross, rank);
    cross_inputs.push_back(std::move(lr.cross));
    res.ranks.push_back(lr.out.row);
    res.top_kernels.insert(res.top_kernels.end(), lr.out.top_kernels.begin(), lr.out.top_kernels.end());
    res.iterations.insert(res.iterations.end(), lr.out.iterations.begin(), lr.out.iterations.end());
    res.histograms.push_back(lr.out.histograms);
  }
  sort_by_rank(res);
  res.hosts = gather_hosts(t, res.ranks);

  if (res.total_ranks == 0 || (opt.strict && !res.failures.empty())) {
    if (me == 0) {
      print_failures(std::cerr, res.failures);
      std::cerr << "straggler-scan: " << (res.total_ranks == 0 ? "no usable profile" : "--strict: some profiles failed")
                << "; nothing written\n";
    }
    return 2;
  }

  timings().mark("assign ranks");
  check_layout(opt, world, res.failures);  // the same answer on every process
  const CrossRankResults cross = run_cross_rank(t, cross_inputs, world, opt.layout, opt.clock_correction);
  apply_cross_rank(res, cross);
  res.cross = &cross;
  // Both outputs appear together, complete, or neither does.
  OutputFiles files(t, opt.output, opt.summary);
  write_hdf5(t, opt.output, files.h5_temp(), res);
  timings().mark("write HDF5");
  // Process 0 also needs every rank's row for the report and the summary.
  RunSummaryInput all = gather_summary_input(t, res, 0);
  std::string error;
  if (me == 0 && !opt.summary.empty())
    if (std::string why = write_summary_json(files.summary_temp(), all); !why.empty())
      error = ranks::printable(opt.summary) + ": cannot write the summary (" + why + ")";
  files.commit(error);
  timings().mark("summary");
  if (me == 0) {
    if (opt.timings) timings().print(std::cerr);
    print_failures(std::cerr, res.failures);
    if (!opt.quiet) print_report(std::cout, all, opt);
  }
  return 0;
}

}  // namespace straggler
