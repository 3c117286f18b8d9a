#include "launch_env.hpp"

#include <array>
#include <charconv>
#include <string>
#include <string_view>

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
  std::string where;
  for (const auto& [r, w] : kVars)
    where += std::string(where.empty() ? "" : " OR ") + "value LIKE '" + std::string(r) + "=%' OR value LIKE '" +
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
    for (size_t k = 0; k < kVars.size(); ++k) {
      if (const int v = number_after(row, kVars[k].first); v >= 0) rank[k] = v;
      if (const int v = number_after(row, kVars[k].second); v > 0) world[k] = v;
    }
  }
  for (size_t k = 0; k < kVars.size(); ++k)
    if (rank[k] >= 0) return {rank[k], world[k] > rank[k] ? world[k] : -1};
  return out;
}

}  // namespace ranks::detail
