// `straggler-scan scaling RUN_OR_SCAN...` (docs/scaling-cliffs.md): the like-collective groups of runs at
// different scales, each from the HDF5 of an earlier scan (/scaling/groups, read by process 0 and
// broadcast) or from a scan of its run directory here (all processes, as the main command), then
// the cliffs across them (collectives/scaling.hpp). Outputs: HDF5 /scaling/rows, summary key
// `scaling`, the report's scaling section.
#include "scaling_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "analyses/scaling.hpp"
#include "collectives/nccl_annotate.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "command_outputs.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "hdf5_writer.hpp"
#include "json_writer.hpp"
#include "output_files.hpp"
#include "scan_load.hpp"
#include "table_read.hpp"
#include "timings.hpp"
#include "version.hpp"

namespace straggler {
namespace {

using collectives::ScalingGroup;

// Process 0 reads the groups and every process gets them (or the same one-line error).
std::vector<ScalingGroup> load_groups(Transport& t, const std::string& path) {
  const auto& table = analyses::scaling_groups_table();
  std::string error, blob;
  if (t.root()) {
    try {
      probe_scan(path);            // one that crashes HDF5 itself is refused in a child first
      const h5read::File f(path);  // checked whole before anything is read (docs/hdf5-layout.md)
      check_scan_format(f);
      if (!f.exists(table.path))
        throw std::runtime_error("no " + table.path + " table (a scan by an older straggler-scan): scan the run again");
      ByteWriter w;
      table.pack(w, tables::read_rows(f, table));
      blob = w.bytes();
    } catch (const std::exception& e) {
      error = common::printable(path) + ": cannot read the scan back: " + common::printable(e.what());
    }
  }
  error = t.broadcast(error, 0);
  if (!error.empty()) throw common::UsageError(error);
  blob = t.broadcast(blob, 0);
  ByteReader r(blob);
  return table.unpack(r);
}

// A run directory scanned here with the scaling analysis's own options.
std::vector<ScalingGroup> scan_groups(Transport& t, const Options& opt, const std::string& path) {
  const Options sub = scan_options_for(path, opt, {"fabric", "topology"});
  const Scan scan = analyse(t, sub, [](const std::string& p) { return collectives::read_annotated(p); });
  if (scan.status != 0) throw common::UsageError(common::printable(path) + ": no usable profile (" + scan.failure + ")");
  return analyses::scaling_groups(scan.analyses);
}

std::string summary_json(const std::vector<collectives::ScalingRow>& rows, const Options& opt) {
  JsonWriter j;
  j.begin_object().key("tool").value("straggler-scan").key("version").value(kToolVersion);
  j.key("command").value("scaling").key("runs").begin_array();
  for (const auto& in : opt.inputs) j.value(in);
  j.end_array().key("cliff_factor").value(opt.cliff_factor);
  j.key("scaling").raw(analyses::scaling_json(rows));
  return j.end_object().str();
}

void write_outputs(Transport& t, const Options& opt, const std::vector<collectives::ScalingRow>& rows) {
  tables::ResultTables out;
  tables::TableData table = analyses::scaling_rows_table().materialize(rows);
  table.attributes = {{"cliff_factor", opt.cliff_factor}, {"fabric", opt.analysis_option("fabric")},
                      {"topology", opt.analysis_option("topology")}};
  out.tables.push_back(std::move(table));
  write_command_outputs(t, opt, std::move(out), [&] { return summary_json(rows, opt); });
}

}  // namespace

int run_scaling(Transport& t, const Options& opt) {
  timings().start();
  // Process 0 checks the paths and reads the fabric and topology files and which inputs are saved
  // scans; every process gets its answer (none takes another path or fails alone).
  const std::string fabric_file = opt.analysis_option("fabric"), topology_file = opt.analysis_option("topology");
  std::string error, kinds;
  std::shared_ptr<const topology::Fabric> fabric;
  collectives::ScalingOptions so;
  if (t.root()) {
    try {
      check_output_paths(opt);
      std::vector<std::string> read = opt.inputs;
      for (const auto& f : {fabric_file, topology_file})
        if (!f.empty()) read.push_back(f);
      check_outputs_not_inputs(opt, read);
      so = analyses::scaling_options(fabric_file, topology_file, fabric);  // its errors, once
      for (const auto& in : opt.inputs) kinds += is_scan_file(in) ? 'h' : 'd';
    } catch (const common::UsageError& e) {
      error = e.what();
    }
  }
  error = t.broadcast(error, 0);
  if (!error.empty()) throw common::UsageError(error);
  kinds = t.broadcast(kinds, 0);
  if (!t.root()) so = analyses::scaling_options(fabric_file, topology_file, fabric);
  so.cliff_factor = opt.cliff_factor;
  std::vector<collectives::ScalingPoint> points;
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    const std::string& in = opt.inputs[i];
    for (auto& g : kinds[i] == 'h' ? load_groups(t, in) : scan_groups(t, opt, in)) points.push_back({std::move(g), in});
    timings().mark("read " + common::printable(in));
  }
  const auto rows = collectives::scaling_rows(points, so);
  write_outputs(t, opt, rows);
  if (t.root() && !opt.quiet) std::cout << analyses::scaling_report(rows, true, opt.cliff_factor);
  return 0;
}

}  // namespace straggler
