#include "summary_json.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "cross_rank.hpp"
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
  // Where iterations (and step_ms) come from: "nvtx" step markers (training steps), the
  // "collective_period" of the NCCL sequence (a repeating unit, not necessarily a step), "none", or "mixed".
  std::string source;
  for (const auto& r : in.ranks) source = source.empty() || source == r.iteration_source ? r.iteration_source : "mixed";
  j.key("iteration_source").value(source.empty() ? "none" : source);
  // The parallel layout: given with --layout, or inferred from who talks to whom.
  j.key("layout");
  if (in.cross && in.cross->layout.layout) {
    const auto& l = *in.cross->layout.layout;
    j.begin_object().key("tp").value(l.tp).key("pp").value(l.pp).key("dp").value(l.dp);
    j.key("order").value(topology::rank_order_name(l.order)).key("source").value(in.cross->layout.source);
    j.key("consistency").value(in.cross->layout.consistency).key("notes").begin_array();
    if (!in.cross->layout.how.empty()) j.value("layout " + in.cross->layout.how);  // as before: first note
    for (const auto& n : in.cross->layout.notes) j.value(n);
    j.end_array().end_object();
  } else {
    j.null();
  }
  j.key("step_ms");
  if (in.steady_step_ms.empty()) {
    j.null();
  } else {
    auto d = ranks::Distribution::of(in.steady_step_ms);
    j.begin_object().key("median").value(d.p50).key("p90").value(d.p90).end_object();
  }
  const CrossRankResults* x = in.cross;
  j.key("stragglers").begin_array();
  if (x)
    for (const auto& st : x->verdict.stragglers) {
      j.begin_object().key("rank").value(st.rank).key("host").value(st.host).key("cause").value(collectives::cause_name(st.cause));
      j.key("blame_ms").value(st.blame_ms).key("late_fraction").value(st.late_fraction).key("onset_iteration");
      st.onset_iteration >= 0 ? j.value(st.onset_iteration) : j.null();
      j.key("evidence").value(st.evidence).key("hold_ms").value(st.hold_ms).key("excess_ms").value(st.excess_ms).key("score").value(st.score);
      j.end_object();
    }
  j.end_array();
  j.key("slow_links").begin_array();
  if (x)
    for (const auto& l : x->verdict.slow_links) {
      j.begin_object().key("hosts").begin_array();
      for (const auto& h : l.hosts) j.value(h);
      j.end_array().key("collective").value(l.collective).key("slowdown").value(l.slowdown);
      j.key("communicators").begin_array();
      for (const auto& c : l.communicators) j.value(c);
      j.end_array().end_object();
    }
  j.end_array();
  j.key("desync").begin_array();
  if (x)
    for (const auto& d : x->desync) {
      if (!d.root_cause) continue;  // victims blocked by another hang are in the HDF5 /desync table
      j.begin_object().key("communicator").value(d.communicator).key("seq").value(d.seq);
      j.key("missing_ranks").begin_array();
      for (auto r : d.missing_ranks) j.value(r);
      j.end_array().key("collective").value(collectives::collective_name(d.type));
      j.key("blocked_ranks").begin_array();
      for (auto r : d.blocked_ranks) j.value(r);
      j.end_array();
      // A pipeline link's seq counts that link's ops; group_seq the group's p2p ops over all links.
      if (d.group_seq >= 0) j.key("group_seq").value(d.group_seq);
      j.end_object();
    }
  j.end_array();
  // Members whose capture ended before they reached an op the others reached (not a hang).
  j.key("capture_ended").begin_array();
  if (x)
    for (const auto& d : x->capture_ended) {
      j.begin_object().key("communicator").value(d.communicator).key("seq").value(d.seq);
      j.key("ranks").begin_array();
      for (auto r : d.missing_ranks) j.value(r);
      j.end_array().end_object();
    }
  j.end_array();
  j.key("clock");
  if (x && x->clock.ops > 0) {
    j.begin_object().key("max_offset_ms").value(x->clock.max_offset_ns / 1e6);
    j.key("residual_ms").value(x->clock.residual_ns / 1e6);
    j.key("violations_before").value(x->clock.violations_before).key("violations_after").value(x->clock.violations_after);
    j.key("unaligned_ranks").value(x->clock.unaligned_ranks);
    j.key("corrected").value(x->clock.rejected.empty());
    if (!x->clock.rejected.empty()) j.key("not_corrected_because").value(x->clock.rejected);
    j.end_object();
  } else {
    j.null();
  }
  j.key("pipeline").null();
  j.key("scaling").begin_array().end_array();
  j.key("change_points").begin_array();
  if (x)
    for (const auto& cp : x->verdict.change_points) {
      j.begin_object().key("iteration").value(cp.iteration).key("before_ms").value(cp.before_ms);
      j.key("after_ms").value(cp.after_ms).key("culprit_ranks").begin_array();
      for (auto r : cp.culprit_ranks) j.value(r);
      j.end_array().key("explanation").value(cp.explanation).end_object();
    }
  j.end_array();
  j.key("what_if").null();
  // Additions beyond the contract.
  j.key("hosts").value(int64_t(in.hosts.size()));
  j.key("files").value(int64_t(in.inputs.size()));
  if (x) {
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
