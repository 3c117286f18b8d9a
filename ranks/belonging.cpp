#include "ranks/belonging.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/text.hpp"
#include "ranks/sat_math.hpp"

namespace ranks {
namespace {

std::string utc_text(int64_t ns) {
  const int64_t s = ns / 1000000000;
  return fmt::format("{:02}:{:02}:{:02} UTC", (s / 3600) % 24, (s / 60) % 60, s % 60);
}

std::string span_text(int64_t ns) {
  const double s = double(ns) / 1e9;
  return s >= 5400 ? fmt::format("{:.1f} h", s / 3600) : s >= 90 ? fmt::format("{:.0f} min", s / 60) : fmt::format("{:.1f} s", s);
}

// Files whose capture windows do not overlap the others': groups of overlapping windows, in time.
std::vector<std::string> time_problems(const Discovery& d, const std::vector<FoundProcess>& found, const std::vector<int>& rank) {
  struct Window {
    int64_t start, end;
    size_t file;
  };
  std::vector<Window> w;
  for (size_t i = 0; i < found.size(); ++i)
    if (rank[i] >= 0 && found[i].wall_end > found[i].wall_start && found[i].wall_start > 0)
      w.push_back({found[i].wall_start, found[i].wall_end, found[i].file});
  std::sort(w.begin(), w.end(), [](auto& a, auto& b) { return std::tie(a.start, a.file) < std::tie(b.start, b.file); });
  std::vector<std::vector<Window>> groups;
  int64_t reach = 0;
  for (const auto& x : w) {
    if (groups.empty() || x.start > sat_add(reach, kMaxHostClockErrorNs)) groups.emplace_back(), reach = x.end;
    groups.back().push_back(x), reach = std::max(reach, x.end);
  }
  if (groups.size() < 2) return {};
  std::string parts;
  for (size_t g = 0; g < groups.size() && g < 4; ++g) {
    const auto& first = groups[g].front();
    int64_t end = 0;
    for (const auto& x : groups[g]) end = std::max(end, x.end);
    parts += fmt::format("{}{} ({} profile{}, from {} for {})", g ? "; " : "", common::printable(d.files[first.file].path),
                         groups[g].size(), groups[g].size() == 1 ? "" : "s", utc_text(first.start), span_text(end - first.start));
  }
  return {fmt::format("profiles captured at {} different times: {}{}: the ranks of one job run together, so these "
                      "are not one run (put each run in its own folder)",
                      groups.size(), parts, groups.size() > 4 ? "; ..." : "")};
}

// The physical GPU of each process, as far as the profiles can tell ("" unknown): its PCI bus id
// where the export has one; else its CUDA ordinal, but only on a host whose ranks show several
// distinct ordinals (processes that see every GPU of the host, so an ordinal names one GPU there).
// A host where every rank is device 0 is the common CUDA_VISIBLE_DEVICES-per-rank job (Slurm's
// --gpus-per-task): there the ordinal says nothing about which GPU.
std::vector<std::string> gpu_keys(const std::vector<FoundProcess>& found, const std::vector<int>& rank) {
  std::map<std::string, std::set<int>> ordinals;  // host -> ordinals of its ranks without a bus id
  for (size_t i = 0; i < found.size(); ++i)
    if (rank[i] >= 0 && found[i].gpu_bus.empty() && found[i].device >= 0) ordinals[found[i].host].insert(found[i].device);
  std::vector<std::string> key(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    if (rank[i] < 0 || found[i].host.empty()) continue;
    if (!found[i].gpu_bus.empty()) key[i] = "bus " + found[i].gpu_bus;
    else if (found[i].device >= 0 && ordinals[found[i].host].size() > 1) key[i] = "ordinal " + std::to_string(found[i].device);
  }
  return key;
}

// Two files' processes on one host and one physical GPU (gpu_keys).
std::vector<std::string> device_problems(const Discovery& d, const std::vector<FoundProcess>& found, const std::vector<int>& rank) {
  const auto key = gpu_keys(found, rank);
  std::map<std::pair<std::string, std::string>, size_t> first;  // (host, GPU key) -> its first process
  std::vector<std::string> out;
  size_t more = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    if (key[i].empty()) continue;
    const auto [it, fresh] = first.emplace(std::make_pair(found[i].host, key[i]), i);
    if (fresh || found[it->second].file == found[i].file) continue;
    if (out.size() >= 3) {
      ++more;
      continue;
    }
    const std::string gpu = found[i].gpu_bus.empty() ? std::to_string(found[i].device)
                                                     : fmt::format("{} (PCI bus {})", found[i].device, common::printable(found[i].gpu_bus));
    out.push_back(fmt::format("{} and {}: both hold a rank on host {} GPU {} (ranks {} and {}): two runs in one "
                              "folder, or two ranks sharing a GPU",
                              common::printable(d.files[found[it->second].file].path), common::printable(d.files[found[i].file].path),
                              common::printable(found[i].host), gpu, rank[it->second], rank[i]));
  }
  if (more) out.push_back(fmt::format("{} more GPUs claimed twice", more));
  return out;
}

}  // namespace

std::vector<std::string> belonging_problems(const Discovery& d, const std::vector<FoundProcess>& found,
                                            const std::vector<int>& rank) {
  auto out = time_problems(d, found, rank);
  for (auto& p : device_problems(d, found, rank)) out.push_back(std::move(p));
  return out;
}

}  // namespace ranks
