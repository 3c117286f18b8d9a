#include "summary_json.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "json_writer.hpp"
#include "version.hpp"

namespace straggler {
namespace {

void header(JsonWriter& j, const RunSummaryInput& in) {
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
  // Where iterations (and step_ms) come from: "nvtx" step markers (training steps), the
  // "collective_period" of the NCCL sequence (a repeating unit, not necessarily a step), "none", or "mixed".
  std::string source;
  for (const auto& r : in.ranks) source = source.empty() || source == r.iteration_source ? r.iteration_source : "mixed";
  j.key("iteration_source").value(source.empty() ? "none" : source);
}

// The summary's keys in the contract's order (../shared/docs/summary-contract.md), each with the
// value it has when no analysis fills it; then our additions, in this order, absent when no
// analysis fills them; then any other analysis key, in registry order. Each value comes from the
// analysis that owns it (Analysis::summary): this list only orders them.
const std::pair<const char*, const char*> kContractKeys[] = {
    {"layout", "null"},   {"step_ms", "null"}, {"stragglers", "[]"},    {"slow_links", "[]"},
    {"desync", "[]"},     {"capture_ended", "[]"}, {"clock", "null"},   {"pipeline", "null"},
    {"scaling", "[]"},    {"change_points", "[]"}, {"what_if", "null"}, {"mfu", "null"},
};
const char* const kAdditions[] = {"problems", "hosts",          "files",          "straggler_evidence", "communicators",
                                  "matched_collectives", "exchange_bytes", "collective_wait_ms",
                                  "collective_skew_ms",  "collective_transfer_ms"};

const std::string* value_of(const RunSummaryInput& in, const std::string& key) {
  for (const auto& [k, value] : in.analysis_keys)
    if (k == key) return &value;
  return nullptr;
}

}  // namespace

std::string summary_json(const RunSummaryInput& in) {
  JsonWriter j;
  j.begin_object();
  header(j, in);
  std::set<std::string> placed;
  for (const auto& [key, empty] : kContractKeys) {
    const std::string* v = value_of(in, key);
    j.key(key).raw(v ? *v : empty), placed.insert(key);
  }
  for (const char* key : kAdditions) {
    if (const std::string* v = value_of(in, key)) j.key(key).raw(*v);
    placed.insert(key);
  }
  for (const auto& [key, value] : in.analysis_keys)  // keys beyond these, after them
    if (!placed.count(key)) j.key(key).raw(value), placed.insert(key);
  j.end_object();
  return j.str() + "\n";
}

std::string write_summary_json(const std::string& path, const RunSummaryInput& in) {
  const std::string text = summary_json(in);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return std::strerror(errno);
  int err = std::fwrite(text.data(), 1, text.size(), f) == text.size() ? 0 : (errno ? errno : EIO);
  if (std::fflush(f) != 0 && !err) err = errno;
  if (std::fclose(f) != 0 && !err) err = errno;
  return err ? std::strerror(err) : "";
}

}  // namespace straggler
