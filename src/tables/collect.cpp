#include "tables/collect.hpp"

#include "version.hpp"

namespace straggler::tables {

ResultTables collect_tables(const RunResults& res, const std::vector<std::unique_ptr<Analysis>>& analyses) {
  ResultTables out;
  out.file_attributes = {{"tool", std::string("straggler-scan")},
                         {"version", std::string(kToolVersion)},
                         {"format_version", kFormatVersion},
                         {"command_line", res.command_line},
                         {"ranks", int64_t(res.total_ranks)},
                         {"ranks_failed", int64_t(res.failures.size())},
                         {"hosts", res.hosts}};
  for (const auto& a : analyses) a->tables(res, out);
  return out;
}

}  // namespace straggler::tables
