#include "summary_json.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "json_writer.hpp"
#include "ranks/histogram.hpp"
#include "version.hpp"

namespace straggler {

std::string summary_json(const RunSummaryInput& in) {
  JsonWriter j;
  j.begin_object();
  j.key("tool").value("straggler-scan");
  j.key("version").value(kToolVersion);
  j.key("ranks").value(int64_t(in.ranks.size()));
  j.key("ranks_failed").begin_array();
  for (const auto& f : in.failures) {
    j.begin_object().key("rank");
    f.rank >= 0 ? j.value(f.rank) : j.null();
    j.key("file").value(f.file).key("error").value(f.error).end_object();
  }
  j.end_array();
  // Steady-state iterations: the median over ranks (ranks of one job run the same loop).
  std::vector<int> steady;
  for (const auto& r : in.ranks) steady.push_back(std::max(0, r.iterations - 1));
  std::sort(steady.begin(), steady.end());
  j.key("iterations").value(steady.empty() ? 0 : steady[steady.size() / 2]);
  j.key("step_ms");
  if (in.steady_step_ms.empty()) {
    j.null();
  } else {
    auto d = ranks::Distribution::of(in.steady_step_ms);
    j.begin_object().key("median").value(d.p50).key("p90").value(d.p90).end_object();
  }
  j.key("stragglers").begin_array().end_array();
  j.key("slow_links").begin_array().end_array();
  j.key("desync").begin_array().end_array();
  j.key("clock").null();
  j.key("pipeline").null();
  j.key("scaling").begin_array().end_array();
  j.key("change_points").begin_array().end_array();
  j.key("what_if").null();
  // Additions beyond the contract.
  j.key("hosts").value(int64_t(in.hosts.size()));
  j.key("files").value(int64_t(in.inputs.size()));
  j.end_object();
  return j.str() + "\n";
}

void write_summary_json(const std::string& path, const RunSummaryInput& in) {
  namespace fs = std::filesystem;
  fs::path p(path);
  fs::path tmp = p.parent_path() / ("." + p.filename().string() + ".tmp-" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << summary_json(in);
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(path + ": cannot write summary");
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot write summary (" + ec.message() + ")");
  }
}

}  // namespace straggler
