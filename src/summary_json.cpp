#include "summary_json.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <set>
#include <stdexcept>

#include "cross_rank.hpp"
#include "tables/cross_tables.hpp"
#include "json_writer.hpp"
#include "ranks/histogram.hpp"
#include "version.hpp"

namespace straggler {
namespace {
using tables::ColumnData;
using tables::Shape;
using tables::TableData;

// How a declared table appears in the summary: its columns by name (the same keys as the HDF5
// datasets), less `omit`; a negative value in `null_if_negative` is null, in `omit_if_negative`
// absent; `extra(j, row)` adds keys the table does not hold.
struct JsonView {
  std::set<std::string> omit, null_if_negative, omit_if_negative;
  std::function<void(JsonWriter&, size_t)> extra = {};
};

void json_value(JsonWriter& j, const ColumnData& c, size_t first, size_t count, bool array) {
  std::visit(
      [&](const auto& v) {
        if (array) j.begin_array();
        for (size_t i = first; i < first + count; ++i) {
          using T = typename std::decay_t<decltype(v)>::value_type;
          if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, double>) j.value(v[i]);
          else j.value(int64_t(v[i]));
        }
        if (array) j.end_array();
      },
      c.values);
}

bool negative(const ColumnData& c, size_t row) {
  return std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) return false;
        else return v[row] < T(0);
      },
      c.values);
}

// One object per row, as `view` says.
void json_rows(JsonWriter& j, const TableData& t, const JsonView& view) {
  const size_t n = t.columns.empty() ? 0 : size_t(t.columns.front().rows());
  j.begin_array();
  for (size_t r = 0; r < n; ++r) {
    j.begin_object();
    for (const auto& c : t.columns) {
      const std::string& name = c.info.name;
      if (view.omit.count(name) || (view.omit_if_negative.count(name) && negative(c, r))) continue;
      j.key(name);
      if (view.null_if_negative.count(name) && negative(c, r)) j.null();
      else if (c.info.shape == Shape::Ragged) json_value(j, c, size_t(c.offsets[r]), size_t(c.offsets[r + 1] - c.offsets[r]), true);
      else json_value(j, c, r, 1, false);
    }
    if (view.extra) view.extra(j, r);
    j.end_object();
  }
  j.end_array();
}

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

// The parallel layout: given with --layout, or inferred from who talks to whom.
void layout(JsonWriter& j, const CrossRankResults* x) {
  j.key("layout");
  if (!x || !x->layout.layout) {
    j.null();
    return;
  }
  const auto& l = *x->layout.layout;
  j.begin_object().key("tp").value(l.tp).key("pp").value(l.pp).key("dp").value(l.dp);
  j.key("order").value(topology::rank_order_name(l.order)).key("source").value(x->layout.source);
  j.key("consistency").value(x->layout.consistency).key("notes").begin_array();
  if (!x->layout.how.empty()) j.value("layout " + x->layout.how);  // as before: first note
  for (const auto& n : x->layout.notes) j.value(n);
  j.end_array().end_object();
}

// The verdict tables, as declared in src/tables/cross_tables.hpp (empty without cross-rank results).
void verdict_tables(JsonWriter& j, const CrossRankResults* x) {
  static const CrossRankResults none;
  const CrossRankResults& r = x ? *x : none;
  j.key("stragglers");
  const auto& st = r.verdict.stragglers;
  json_rows(j, tables::stragglers_table().materialize(st), {{"cause_detail"}, {"onset_iteration"}, {}, [&](JsonWriter& w, size_t i) {
              w.key("cause_detail");
              st[i].cause_detail == ranks::Finding::None ? w.null() : w.value(ranks::finding_name(st[i].cause_detail));
            }});
  const auto& links = r.verdict.slow_links;
  j.key("slow_links");
  json_rows(j, tables::slow_links_table().materialize(links), {});
  // Only root causes: victims blocked by another hang are in the HDF5 /desync table.
  std::vector<DesyncRow> roots;
  std::copy_if(r.desync.begin(), r.desync.end(), std::back_inserter(roots), [](auto& d) { return d.root_cause; });
  j.key("desync");
  json_rows(j, tables::desync_table().materialize(roots), {{"root_cause"}, {}, {"group_seq"}});
  // Members whose capture ended before they reached an op the others reached (not a hang).
  j.key("capture_ended");
  json_rows(j, tables::capture_ended_table().materialize(r.capture_ended), {});
}

void clock(JsonWriter& j, const CrossRankResults* x) {
  j.key("clock");
  if (!x || x->clock.ops <= 0) {
    j.null();
    return;
  }
  j.begin_object().key("max_offset_ms").value(x->clock.max_offset_ns / 1e6);
  j.key("residual_ms").value(x->clock.residual_ns / 1e6);
  j.key("violations_before").value(x->clock.violations_before).key("violations_after").value(x->clock.violations_after);
  j.key("unaligned_ranks").value(x->clock.unaligned_ranks);
  j.key("corrected").value(x->clock.rejected.empty());
  if (!x->clock.rejected.empty()) j.key("not_corrected_because").value(x->clock.rejected);
  j.end_object();
}

void change_points(JsonWriter& j, const CrossRankResults* x) {
  static const std::vector<collectives::JobChangePoint> none;
  const auto& cps = x ? x->verdict.change_points : none;
  j.key("change_points");
  json_rows(j, tables::change_points_table().materialize(cps), {});
}

// Additions beyond the contract.
void additions(JsonWriter& j, const RunSummaryInput& in, const CrossRankResults* x) {
  j.key("hosts").value(int64_t(in.hosts.size()));
  j.key("files").value(int64_t(in.inputs.size()));
  if (!x) return;
  // How much evidence the straggler verdict had (collectives/consistency.hpp): judged false when
  // the capture is too short for any rank to be named.
  const auto& v = x->verdict;
  j.key("straggler_evidence").begin_object().key("steady_iterations").value(v.judged_iterations);
  j.key("ranks_compared").value(v.compared_ranks).key("iterations_needed");
  v.needed_iterations > 0 ? j.value(v.needed_iterations) : j.null();
  j.key("judged").value(!v.too_short()).end_object();
  j.key("communicators").value(int64_t(x->comms.size()));
  j.key("matched_collectives").value(x->clock.ops);
  j.key("exchange_bytes").value(x->bytes_exchanged_total);
  // Quantiles from the exactly merged log histograms (bin resolution, ~12%).
  const struct {
    const char* key;
    const ranks::LogHistogram* h;
  } hists[] = {{"collective_wait_ms", &x->acc.wait_hist}, {"collective_skew_ms", &x->acc.skew_hist},
               {"collective_transfer_ms", &x->acc.transfer_hist}};
  for (const auto& h : hists) {
    j.key(h.key).begin_object();
    for (auto [name, q] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}}) j.key(name).value(h.h->quantile(q) / 1e6);
    j.end_object();
  }
}

// A contract key that an analysis fills (Analysis::summary), else its empty value.
void contract_key(JsonWriter& j, const RunSummaryInput& in, const std::string& key, const std::string& empty) {
  for (const auto& [k, value] : in.analysis_keys)
    if (k == key) {
      j.key(key).raw(value);
      return;
    }
  j.key(key).raw(empty);
}

}  // namespace

std::string summary_json(const RunSummaryInput& in) {
  JsonWriter j;
  j.begin_object();
  header(j, in);
  layout(j, in.cross);
  j.key("step_ms");
  if (in.steady_step_ms.empty()) {
    j.null();
  } else {
    auto d = common::Distribution::of(in.steady_step_ms);
    j.begin_object().key("median").value(d.p50).key("p90").value(d.p90).end_object();
  }
  verdict_tables(j, in.cross);
  clock(j, in.cross);
  contract_key(j, in, "pipeline", "null");
  contract_key(j, in, "scaling", "[]");
  change_points(j, in.cross);
  contract_key(j, in, "what_if", "null");
  additions(j, in, in.cross);
  for (const auto& [key, value] : in.analysis_keys)  // keys beyond the contract's, after its own
    if (key != "pipeline" && key != "scaling" && key != "what_if") j.key(key).raw(value);
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
