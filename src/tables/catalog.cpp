#include "tables/catalog.hpp"

#include "compare_command.hpp"
#include "h5_file.hpp"
#include "ranks/rank_assignment.hpp"
#include "cross_rank.hpp"
#include "tables/collect.hpp"

namespace straggler::tables {

// The tables every registered analysis writes for an empty run with cross-rank results: every
// table, with no second list to keep in step with the analyses.
std::vector<TableSchema> all_schemas() {
  static const CrossRankResults cross;
  RunResults run;
  run.cross = &cross;
  const ResultTables rt = collect_tables(run, make_analyses(Options{}));
  std::vector<TableSchema> out;
  auto add = [&](const TableData& t) {
    TableSchema s{t.path, t.description, t.distribution, {}};
    for (const auto& c : t.columns) s.columns.push_back(c.info);
    out.push_back(std::move(s));
  };
  for (const auto& t : rt.tables) add(t);
  for (const auto& st : rt.streamed)
    for (const auto& t : st.tables) add(t);
  for (const auto& t : compare_table_schemas()) add(t);  // `straggler-scan compare`'s own
  return out;
}

namespace {
std::string shape_of(const ColumnInfo& c, Distribution d) {
  const std::string t = type_name(c.type);
  if (c.shape == Shape::Matrix) return t + (d == Distribution::Summed ? "[" : "[rows x ") + c.width_doc + "]";
  if (c.shape == Shape::Ragged) return t + " ragged";
  return t;
}

std::string table_markdown(const TableSchema& s) {
  std::string md = "`" + s.path + "`: " + s.description + "\n\n| dataset | type | units | meaning |\n|---|---|---|---|\n";
  for (const auto& c : s.columns) {
    md += "| `" + c.name + "` | " + shape_of(c, s.distribution) + " | " + c.unit + " | " +
          (c.doc.empty() ? c.description : c.doc) + " |\n";
    if (c.shape == Shape::Ragged)
      md += "| `" + c.name + "_offsets` | int64[rows + 1] |  | row i: `" + c.name + "[" + c.name + "_offsets[i]:" + c.name +
            "_offsets[i+1]]` |\n";
  }
  return md;
}
}  // namespace

bool under(const std::string& path, const std::string& prefix) {
  return path == prefix || (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
                            path[prefix.size()] == '/');
}

std::string tables_json() {
  auto shape = [](Shape s) { return s == Shape::Matrix ? "matrix" : s == Shape::Ragged ? "ragged" : "scalar"; };
  auto dist = [](Distribution d) {
    switch (d) {
      case Distribution::ByRank: return "by_rank";
      case Distribution::Summed: return "summed";
      case Distribution::Streamed: return "streamed";
      case Distribution::Replicated: break;
    }
    return "replicated";
  };
  // Our own identifiers only (paths and column names are ASCII words): nothing to escape.
  std::string j = "{\n  \"format_version\": " + std::to_string(kFormatVersion) +
                  ",\n  \"max_string_bytes\": " + std::to_string(h5::kMaxStringBytes) +
                  ",\n  \"max_ranks\": " + std::to_string(ranks::RankLimits::kMaxRanks) + ",\n  \"tables\": [";
  bool first = true;
  for (const auto& s : all_schemas()) {
    j += std::string(first ? "" : ",") + "\n    {\"path\": \"" + s.path + "\", \"distribution\": \"" +
         dist(s.distribution) + "\", \"columns\": [";
    first = false;
    for (size_t i = 0; i < s.columns.size(); ++i)
      j += std::string(i ? ", " : "") + "{\"name\": \"" + s.columns[i].name + "\", \"type\": \"" +
           type_name(s.columns[i].type) + "\", \"shape\": \"" + shape(s.columns[i].shape) + "\"}";
    j += "]}";
  }
  return j + "\n  ]\n}\n";
}

std::string layout_markdown(const std::string& prefix) {
  std::string md;
  for (const auto& s : all_schemas())
    if (under(s.path, prefix)) md += (md.empty() ? "" : "\n") + table_markdown(s);
  return md;
}

}  // namespace straggler::tables
