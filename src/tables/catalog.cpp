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
const char* rows_of(Distribution d) {
  switch (d) {
    case Distribution::ByRank: return "rows from every process, in rank order";
    case Distribution::Replicated: return "written by process 0";
    case Distribution::Summed: return "summed over all ranks: one dataset of the row width";
    case Distribution::Streamed: return "written block by block by the process that replayed each communicator";
  }
  return "";
}

std::string cell(const std::string& s) { return s.empty() ? "" : s; }

std::string shape_of(const ColumnInfo& c, Distribution d) {
  const std::string t = type_name(c.type);
  if (c.shape == Shape::Matrix) return t + (d == Distribution::Summed ? "[" : "[rows x ") + c.width_doc + "]";
  if (c.shape == Shape::Ragged) return t + "[] (ragged)";
  return t;
}
}  // namespace

std::string layout_markdown() {
  std::string md;
  for (const auto& s : all_schemas()) {
    md += "### `" + s.path + "`: " + s.description + "\n\n";
    md += std::string("(") + rows_of(s.distribution) + ")\n\n";
    md += "| dataset | type | units | description |\n|---|---|---|---|\n";
    for (const auto& c : s.columns) {
      md += "| `" + c.name + "` | " + shape_of(c, s.distribution) + " | " + cell(c.unit) + " | " + cell(c.description) + " |\n";
      if (c.shape == Shape::Ragged)
        md += "| `" + c.name + "_offsets` | int64[rows + 1] |  | row i holds `" + c.name + "[offsets[i]:offsets[i+1]]` |\n";
    }
    md += "\n";
  }
  return md;
}

}  // namespace straggler::tables
