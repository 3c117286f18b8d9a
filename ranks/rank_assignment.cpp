#include "ranks/rank_assignment.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace ranks {
using common::printable;
using common::UsageError;
namespace fs = std::filesystem;

namespace {

struct Context {
  const Discovery& d;
  const std::vector<FoundProcess>& found;
  // A run whose files are named by rank: a file with neither a rank nor a node number in its name
  // has no rank of its own (giving it one by position would only collide with a named file).
  bool named_by_rank = false;

  const ProfileFile& file(size_t i) const { return d.files[found[i].file]; }
  bool unnumbered(const ProfileFile& f) const { return named_by_rank && !f.rank_from_name && !f.node_from_name; }
  bool mapped(const ProfileFile& f) const { return d.rank_map.count(f.path) != 0; }
  // Case (b): ranks from the node and the local index.
  bool per_host(const ProfileFile& f) const { return !f.rank_from_name && !unnumbered(f); }
  std::string name(size_t file) const { return printable(fs::path(d.files[file].path).filename().string()); }
};

std::vector<size_t> in_file_order(const std::vector<FoundProcess>& found) {
  std::vector<size_t> order(found.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::tie(found[x].file, found[x].local_index) < std::tie(found[y].file, found[y].local_index);
  });
  return order;
}

// Per-host files may hold processes that are no rank of the job (repro N6): rows without a
// process (pid 0 is no Linux process: a torn row, globalPid NULL), or a process without any NCCL
// kernel where the file's other processes ran some (every rank of a distributed job takes part in
// its collectives or p2p transfers, which are NCCL kernels: a helper process that ran a CUDA
// kernel). Counting them would renumber every rank of every host. They are rejected with a reason;
// the others get their local index among the file's rank processes (-1: left out).
std::vector<int> leave_out_strays(const Context& c, Assignment& a, std::map<size_t, int>& ranks_in_file) {
  std::set<size_t> communicating;
  for (const auto& p : c.found)
    if (p.nccl > 0) communicating.insert(p.file);
  std::vector<int> local(c.found.size(), -1);
  for (size_t i : in_file_order(c.found)) {
    const auto& p = c.found[i];
    const ProfileFile& f = c.file(i);
    if (!c.per_host(f) && p.unusable.empty()) {
      local[i] = p.local_index;
      continue;
    }
    std::string why;  // the rank map, or a process alone in its file, says who is a rank
    if (!p.unusable.empty()) why = p.unusable;
    else if (c.mapped(f) || p.procs_in_file <= 1) why = "";
    else if (p.pid == 0) why = "rows without a process id (globalPid NULL or 0)";
    else if (p.nccl == 0 && communicating.count(p.file))
      why = "no NCCL kernel, while the file's other processes ran some: a helper process, not a rank of the job";
    if (!why.empty()) {
      a.errors[i] = "process " + std::to_string(p.pid) + " (device " + std::to_string(p.device) + ", " +
                    std::to_string(p.kernels) + " kernels): " + why + "; left out";
      continue;
    }
    local[i] = ranks_in_file[p.file]++;
  }
  return local;
}

// "node-2" before "node-10": runs of digits compare as numbers.
bool natural_less(const std::string& x, const std::string& y) {
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (std::isdigit(static_cast<unsigned char>(x[i])) && std::isdigit(static_cast<unsigned char>(y[j]))) {
      size_t a = i, b = j;
      while (a < x.size() && x[a] == '0') ++a;
      while (b < y.size() && y[b] == '0') ++b;
      size_t ea = a, eb = b;
      while (ea < x.size() && std::isdigit(static_cast<unsigned char>(x[ea]))) ++ea;
      while (eb < y.size() && std::isdigit(static_cast<unsigned char>(y[eb]))) ++eb;
      if (ea - a != eb - b) return ea - a < eb - b;
      if (int c = x.compare(a, ea - a, y, b, eb - b); c != 0) return c < 0;
      i = ea, j = eb;
    } else {
      if (x[i] != y[j]) return x[i] < y[j];
      ++i, ++j;
    }
  }
  return x.size() - i < y.size() - j;
}

// Node index of each per-host file. The numbers in the names when they can be node indices (at
// most about half of the slots they span are missing), else the files' order by those numbers:
// hostnames such as gpu-1017 are no index, and node * processes-per-node must never size the
// job by a name (repro N12: 999999999 x 4 overflowed int). Files without a number fill the gaps.
std::map<size_t, int64_t> number_nodes(const Context& c, const std::map<size_t, int>& ranks_in_file, Assignment& a) {
  std::vector<size_t> files;  // per-host files in path order
  for (const auto& [f, n] : ranks_in_file) files.push_back(f);
  std::set<int64_t> named;
  size_t numbered = 0;
  for (size_t f : files)
    if (c.d.files[f].node_from_name) named.insert(*c.d.files[f].node_from_name), ++numbered;
  const int64_t n = int64_t(files.size());
  std::map<size_t, int64_t> node_of_file;
  // Two files with one number (ip-10-0-1-1 and ip-10-0-2-1 both end in 1): the numbers are no
  // node indices, and the names are the only order left.
  if (numbered > named.size()) {
    std::stable_sort(files.begin(), files.end(), [&](size_t x, size_t y) { return natural_less(c.name(x), c.name(y)); });
    for (size_t i = 0; i < files.size(); ++i) node_of_file[files[i]] = int64_t(i);
    a.warnings.push_back("per-host file names share their numbers (e.g. two end in the same number): hosts numbered 0-" +
                         std::to_string(n - 1) + " in the order of the names (use --rank-map to say otherwise)");
    return node_of_file;
  }
  const bool indices = named.empty() || *named.rbegin() < std::max<int64_t>(2 * n, n + 4);
  if (!indices) {
    std::stable_sort(files.begin(), files.end(), [&](size_t x, size_t y) {
      return c.d.files[x].node_from_name.value_or(INT32_MAX) < c.d.files[y].node_from_name.value_or(INT32_MAX);
    });
    for (size_t i = 0; i < files.size(); ++i) node_of_file[files[i]] = int64_t(i);
    a.warnings.push_back("node numbers in the per-host file names (" + std::to_string(*named.begin()) + " to " +
                         std::to_string(*named.rbegin()) + ") are no node indices of " + std::to_string(n) +
                         " files: hosts numbered 0-" + std::to_string(n - 1) +
                         " in the order of those numbers (use --rank-map to say otherwise)");
    return node_of_file;
  }
  // Every file numbered, one run of numbers from above 0 (`ip-10-0-1-1` to `-4`, `node-1` to `-8`):
  // hosts counted from 1, or from wherever the names start; the first is node 0. With a gap the
  // numbers keep their places (hosts not profiled).
  const bool all_named = named.size() == files.size() &&
                         std::all_of(files.begin(), files.end(), [&](size_t f) { return c.d.files[f].node_from_name.has_value(); });
  const int64_t base = all_named && *named.begin() > 0 && *named.rbegin() - *named.begin() + 1 == n ? *named.begin() : 0;
  int64_t next = 0;
  for (size_t f : files) {
    if (c.d.files[f].node_from_name) {
      node_of_file[f] = *c.d.files[f].node_from_name - base;
    } else {
      while (named.count(next)) ++next;
      node_of_file[f] = next++;
    }
  }
  return node_of_file;
}

// Per-host files with fewer rank processes than the others: their ranks are numbered from the
// host's first, which is right only if the missing ones were the last.
void warn_uneven_hosts(const Context& c, const std::map<size_t, int>& ranks_in_file, int per_node, Assignment& a) {
  for (const auto& [f, n] : ranks_in_file)
    if (n < per_node)
      a.warnings.push_back(c.name(f) + ": " + std::to_string(n) + " rank processes where another per-host file has " +
                           std::to_string(per_node) + ": numbered as the host's first " + std::to_string(n) +
                           " by device order (use --rank-map if another is missing)");
}

void drop_duplicate_ranks(const Context& c, Assignment& a) {
  // Duplicates: the first claimant in (file, local index) order keeps the rank.
  std::map<int, size_t> owner;
  for (size_t i : in_file_order(c.found)) {
    if (a.rank[i] < 0) continue;
    auto [it, fresh] = owner.emplace(a.rank[i], i);
    if (!fresh) {
      a.errors[i] = "rank " + std::to_string(a.rank[i]) + " is already claimed by " +
                    printable(c.d.files[c.found[it->second].file].path);
      a.rank[i] = -1;
    }
  }
}

// The name gives one rank, the content several processes: a torn or corrupted file shows phantom
// processes (repro D8), and numbering them N, N+1... would take the next file's rank. The file is
// reported (the same line for each of its processes), never renumbered.
std::string several_in_rank_file(const Context& c, size_t i) {
  const auto& p = c.found[i];
  std::string pids;
  int listed = 0;
  for (const auto& q : c.found)
    if (q.file == p.file && listed++ < 8) pids += (pids.empty() ? "" : ", ") + std::to_string(q.pid);
  if (listed > 8) pids += " and " + std::to_string(listed - 8) + " more";
  return "named for rank " + std::to_string(*c.file(i).rank_from_name) + " but holds " +
         std::to_string(p.procs_in_file) + " rank processes (pids " + pids + "); use --rank-map";
}

// Ranks 0.. to the processes `idx`, by host (in natural name order), then by `before` on a host.
template <class Before>
void number_by_host(const Context& c, Assignment& a, std::vector<size_t>& idx, Before before) {
  std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    const auto &hx = c.found[x].host, &hy = c.found[y].host;
    return hx != hy ? natural_less(hx, hy) : before(x, y);
  });
  for (size_t k = 0; k < idx.size(); ++k) a.rank[idx[k]] = a.claimed[idx[k]] = int(k);
}

// Files named by process id (`<host>.<pid>`, `-o report.%p`) whose profiles name no rank: the
// ranks are numbered by host (in name order) and, on a host, by process id (a launcher starts its
// local ranks in order: torchrun, srun). Neither is promised, so the numbers may not be the job's:
// said in a warning, and the hosts and process ids stay in every per-rank line.
bool renumber_by_host_and_pid(const Context& c, Assignment& a, const std::vector<bool>& from_name) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < a.rank.size(); ++i) {
    if (a.rank[i] < 0) continue;
    if (!from_name[i] || c.found[i].claimed_rank >= 0 || c.found[i].host.empty()) return false;
    std::string name = c.name(c.found[i].file);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    if (name.find("rank") != std::string::npos) return false;  // a name that says rank N means it
    idx.push_back(i);
  }
  const std::vector<int> by_name = a.rank;  // the process ids the names gave
  number_by_host(c, a, idx, [&](size_t x, size_t y) { return by_name[x] < by_name[y]; });
  a.warnings.push_back("the file names hold process ids, not ranks, and the profiles name no rank: ranks are numbered by "
                       "host (in name order), then by process id on each host, which need not be the job's own numbers "
                       "(--rank-map gives them)");
  return true;
}

// One-process files numbered as hosts (a profiler's default report1, report2 ...: a counter, K unrelated
// to the rank) whose profiles put two of them on one host: the numbers are no host indices. Ranks
// by host (in name order), then by the GPU's index on the host (CUDA_VISIBLE_DEVICES, else the
// CUDA ordinal, else the PCI bus), then by process id: the order torchrun and srun give local
// ranks. Not promised, so said in a warning that replaces the ones about host numbers.
bool renumber_files_sharing_a_host(const Context& c, Assignment& a, size_t warnings_before) {
  std::vector<size_t> idx;
  std::map<std::string, int> files_on;
  for (size_t i = 0; i < a.rank.size(); ++i) {
    if (a.rank[i] < 0) continue;
    const auto& p = c.found[i];
    const ProfileFile& f = c.file(i);
    if (!c.per_host(f) || c.mapped(f) || p.claimed_rank >= 0 || p.procs_in_file != 1 || p.host.empty()) return false;
    ++files_on[p.host];
    idx.push_back(i);
  }
  if (std::none_of(files_on.begin(), files_on.end(), [](auto& h) { return h.second > 1; })) return false;
  auto gpu = [&](size_t i) { return c.found[i].host_gpu >= 0 ? c.found[i].host_gpu : c.found[i].device; };
  number_by_host(c, a, idx, [&](size_t x, size_t y) {
    const auto &p = c.found[x], &q = c.found[y];
    if (gpu(x) != gpu(y)) return gpu(x) < gpu(y);
    return std::tie(p.gpu_bus, p.pid, p.file) < std::tie(q.gpu_bus, q.pid, q.file);
  });
  a.warnings.resize(warnings_before);
  a.warnings.push_back("the file names' numbers are no ranks or hosts (several files per host) and the profiles name no "
                       "rank: ranks are numbered by host (in name order), then by GPU on each host, which need not be "
                       "the job's own numbers (--rank-map gives them)");
  return true;
}

// Ranks from file names far beyond the ranks found are no ranks (repro N3: a profiler's `-o report.%p`
// names files by process id, and every structure sized by the highest rank took gigabytes).
void check_rank_numbers(const Context& c, Assignment& a, const std::vector<bool>& from_name,
                        const RankLimits& limits) {
  int64_t found = 0, highest = -1;
  size_t example = 0;
  for (size_t i = 0; i < a.rank.size(); ++i) {
    if (a.rank[i] < 0) continue;
    ++found;
    if (from_name[i] && a.rank[i] > highest) highest = a.rank[i], example = i;
  }
  for (size_t i = 0; i < a.rank.size(); ++i)
    if (limits.world > 0 && a.rank[i] >= limits.world)  // before anything is sized by it
      throw UsageError("--layout " + limits.layout + " covers " + std::to_string(limits.world) + " ranks, but rank " +
                       std::to_string(a.rank[i]) + " was found (" + c.name(c.found[i].file) +
                       "): give the job's full layout, or leave --layout out");
  if (limits.world == 0 && highest >= RankLimits::kSpread * found + RankLimits::kSlack && !renumber_by_host_and_pid(c, a, from_name))
    throw UsageError(std::string(c.found[example].claimed_rank >= 0 ? "profiles claim" : "file names give") +
                     " rank numbers up to " + std::to_string(highest) + " (" + c.name(c.found[example].file) + ") for " + std::to_string(found) +
                     " ranks found: process ids, not ranks (as -o report.%p names files)? Name the files by "
                     "rank (rank_N), or give --rank-map, or --layout TPxPPxDP for the job's size");
  for (size_t i = 0; i < a.rank.size(); ++i)
    if (a.rank[i] >= RankLimits::kMaxRanks)
      throw UsageError(c.name(c.found[i].file) + ": rank " + std::to_string(a.rank[i]) + " is beyond the " +
                       std::to_string(RankLimits::kMaxRanks) + " ranks straggler-scan handles");
}

}  // namespace

// A profile whose content names a job of another size than the others' (PyTorch's
// distributedInfo.world_size), or a rank beyond its own job's size, is another job's profile put
// among these (repro3 K_other_job_merged): left out with that reason.
void reject_other_worlds(const std::vector<FoundProcess>& found, Assignment& a) {
  std::map<int, size_t> worlds;
  for (size_t i = 0; i < found.size(); ++i)
    if (a.rank[i] >= 0 && found[i].claimed_world > 0) ++worlds[found[i].claimed_world];
  if (worlds.empty()) return;
  const int job = std::max_element(worlds.begin(), worlds.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
  for (size_t i = 0; i < found.size(); ++i) {
    const int w = found[i].claimed_world, r = found[i].claimed_rank;
    if (a.rank[i] < 0 || w <= 0) continue;
    if (w != job)
      a.errors[i] = "not of this job: its profile names a job of " + std::to_string(w) + " ranks, the others' " +
                    std::to_string(job) + " (another job's profile?)";
    else if (r >= w)
      a.errors[i] = "not of this job: its profile names rank " + std::to_string(r) + " of a job of " + std::to_string(w) +
                    " ranks (another job's profile?)";
    else
      continue;
    a.rank[i] = -1;
  }
}

Assignment assign_ranks(const Discovery& d, const std::vector<FoundProcess>& found, const RankLimits& limits) {
  Assignment a;
  a.rank.assign(found.size(), -1);
  a.errors.assign(found.size(), "");
  a.claimed.assign(found.size(), -1);
  Context c{d, found, std::any_of(d.files.begin(), d.files.end(), [](auto& f) { return f.rank_from_name.has_value(); })};
  std::map<size_t, int> ranks_in_file;  // per-host files: their rank processes
  const size_t warnings_before = a.warnings.size();
  const std::vector<int> local = leave_out_strays(c, a, ranks_in_file);
  int per_node = 1;
  for (const auto& [f, n] : ranks_in_file) per_node = std::max(per_node, n);
  const std::map<size_t, int64_t> node_of_file = number_nodes(c, ranks_in_file, a);
  warn_uneven_hosts(c, ranks_in_file, per_node, a);
  std::vector<bool> from_name(found.size(), false);
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& p = found[i];
    const ProfileFile& file = c.file(i);
    if (local[i] < 0) continue;  // left out, with its reason
    int64_t rank = -1;
    bool mapped = false;
    if (auto it = d.rank_map.find(file.path); it != d.rank_map.end()) {
      for (const auto& e : it->second)
        if ((e.pid && *e.pid == p.pid) || (e.device && *e.device == p.device) ||
            (!e.pid && !e.device && p.procs_in_file == 1))
          rank = e.rank, mapped = true;
    }
    if (!mapped && p.claimed_rank >= 0 && p.procs_in_file == 1) {
      rank = p.claimed_rank, from_name[i] = true;  // as bounded as a number in a name
    } else if (!mapped) {
      if (file.rank_from_name && p.procs_in_file > 1) {
        a.errors[i] = several_in_rank_file(c, i);
        a.claimed[i] = *file.rank_from_name;
        continue;
      } else if (file.rank_from_name) {
        rank = *file.rank_from_name, from_name[i] = true;
      } else if (c.unnumbered(file)) {
        a.errors[i] = p.procs_in_file == 1
                          ? "no rank number in the file name (use --rank-pattern or --rank-map)"
                          : "no rank or node number in the file name, which holds " +
                                std::to_string(p.procs_in_file) + " rank processes (use --rank-map)";
        continue;
      } else {
        rank = node_of_file.at(p.file) * per_node + local[i];  // bounded: nodes are < 2 x files + 4
      }
    }
    a.rank[i] = a.claimed[i] = int(std::min<int64_t>(rank, INT32_MAX));
  }
  renumber_files_sharing_a_host(c, a, warnings_before);
  reject_other_worlds(found, a);
  check_rank_numbers(c, a, from_name, limits);
  drop_duplicate_ranks(c, a);
  return a;
}

}  // namespace ranks
