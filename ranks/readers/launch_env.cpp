#include "launch_env.hpp"

#include <array>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

namespace ranks::detail {
namespace {

// NAME="123" or NAME=123 -> 123; -1 unless the value is a plain number below 2^21.
int number_after(std::string_view row, std::string_view name) {
  if (row.size() <= name.size() || row.substr(0, name.size()) != name || row[name.size()] != '=') return -1;
  std::string_view v = row.substr(name.size() + 1);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  int out = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && v.size() <= 7 && out >= 0 && out < (1 << 21) ? out : -1;
}

// CUDA_VISIBLE_DEVICES="3" or "0,1,2,3" -> the indices; empty unless every entry is a number
// below 4096 (UUIDs, MIG names and anything else name no index), at most 64 entries.
std::vector<int> visible_after(std::string_view row) {
  static constexpr std::string_view kName = "CUDA_VISIBLE_DEVICES=";
  if (row.substr(0, kName.size()) != kName) return {};
  std::string_view v = row.substr(kName.size());
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  std::vector<int> out;
  while (!v.empty() && out.size() < 64) {
    const size_t comma = std::min(v.find(','), v.size());
    int x = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + comma, x);
    if (ec != std::errc() || end != v.data() + comma || comma == 0 || x < 0 || x >= 4096) return {};
    out.push_back(x);
    v = v.substr(std::min(comma + 1, v.size()));
  }
  return v.empty() ? out : std::vector<int>{};
}

}  // namespace

LaunchRank launch_rank(const Database& db) {
  LaunchRank out;
  if (!db.has_table("META_DATA_CAPTURE")) return out;
  const auto cols = db.columns("META_DATA_CAPTURE");
  if (!cols.count("name") || !cols.count("value")) return out;
  // (rank variable, size variable), in order of preference.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kVars{{
      {"RANK", "WORLD_SIZE"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"}}};
  std::string where = "value LIKE 'CUDA_VISIBLE_DEVICES=%'";
  for (const auto& [r, w] : kVars)
    where += " OR value LIKE '" + std::string(r) + "=%' OR value LIKE '" +
             std::string(w) + "=%'";
  // Only the process nsys launched (PROCESS_0), only these variables: nothing else is read.
  Statement s(db.handle(),
              "SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE' AND (" + where +
                  ") LIMIT 64",
              db.path());
  std::array<int, kVars.size()> rank{}, world{};
  rank.fill(-1), world.fill(-1);
  while (s.step()) {
    const std::string_view row = s.text(0);
    if (auto v = visible_after(row); !v.empty()) out.visible = std::move(v);
    for (size_t k = 0; k < kVars.size(); ++k) {
      if (const int v = number_after(row, kVars[k].first); v >= 0) rank[k] = v;
      if (const int v = number_after(row, kVars[k].second); v > 0) world[k] = v;
    }
  }
  for (size_t k = 0; k < kVars.size(); ++k)
    if (rank[k] >= 0) return {rank[k], world[k] > rank[k] ? world[k] : -1, std::move(out.visible)};
  return out;
}

}  // namespace ranks::detail
