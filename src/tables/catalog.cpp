#include "tables/catalog.hpp"

#include "tables/cross_tables.hpp"
#include "tables/rank_tables.hpp"
#include "tables/run_tables.hpp"

namespace straggler::tables {

std::vector<TableSchema> all_schemas() {
  return {ranks_table().schema(),
          histogram_edges_table().schema(),
          rank_histograms_table().schema(),
          summed_histograms_table().schema(),
          collective_histograms_table().schema(),
          top_kernels_table().schema(),
          iterations_table().schema(),
          iteration_matrices_table().schema(),
          job_step_table().schema(),
          change_points_table().schema(),
          inputs_table().schema(),
          failures_table().schema(),
          communicators_table().schema(),
          members_table().schema(),
          ops_table().schema(),
          arrivals_table().schema(),
          clock_table().schema(),
          stragglers_table().schema(),
          slow_links_table().schema(),
          desync_table().schema(),
          capture_ended_table().schema()};
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

std::string layout_markdown(const std::string& prefix) {
  std::string md;
  for (const auto& s : all_schemas())
    if (under(s.path, prefix)) md += (md.empty() ? "" : "\n") + table_markdown(s);
  return md;
}

}  // namespace straggler::tables
