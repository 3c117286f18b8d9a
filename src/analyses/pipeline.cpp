// Pipeline bubble inflation against (p - 1) / (v m) (docs/pipeline.md): per rank its flush
// windows (collectives/pipeline_flush.hpp), across ranks the bubble per stage and for the job, the
// schedule it ran, and what the excess is made of (collectives/pipeline_bubble.hpp).
// HDF5: /pipeline/windows (per rank), /pipeline/stages (attributes: the verdict), /pipeline/flushes.
// Summary key `pipeline`; a report section; options --microbatches, --virtual-stages.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

#include "analyses/builtin.hpp"
#include "collectives/pipeline_bubble.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "table_read.hpp"

namespace straggler::analyses {
namespace {

using collectives::BubblePart;
using collectives::FlushStage;
using collectives::FlushWindow;
using collectives::StageBubble;
using tables::col;

const tables::Table<FlushWindow>& windows_table() {
  using W = FlushWindow;
  static const tables::Table<W> t{
      "/pipeline/windows",
      "each rank's pipeline flushes measured as if it were the first stage (collectives/pipeline_flush.hpp)",
      tables::Distribution::ByRank,
      {col("rank", &W::rank), col("flush", &W::flush, "", "ordinal among the rank's complete flushes"),
       col("iteration", &W::iteration, "", "index of the rank's iteration holding its first p2p op"),
       col("steady", &W::steady, "", "1: a steady iteration's flush"),
       col("fill_start_ns", &W::fill_start, "ns", "first forward's first kernel start (wall clock, uncorrected)"),
       col("drain_end_ns", &W::drain_end, "ns", "last backward's last kernel end (wall clock, uncorrected)"),
       col("work_ns", &W::work_ns, "ns", "compute or microbatch collectives in the window"),
       col("p2p_ns", &W::p2p_ns, "ns", "p2p kernel time in the window not overlapped by work"),
       col("p2p_ops", &W::p2p_ops, "", "p2p ops in the flush"),
       col("kernels", &W::kernels, "", "compute kernels starting in the window"),
       col("fwd_kernels", &W::fwd_kernels, "", "compute kernels of one forward (one model chunk)"),
       col("bwd_kernels", &W::bwd_kernels, "", "compute kernels of one backward (one model chunk)"),
       col("leading_fwd", &W::leading_fwd, "", "as the first stage: forwards before the first backward"),
       col("forwards", &W::forwards, "", "chunk forwards in the flush, by kernel names (0: the names do not tell)").added()},
      [](const W& w) { return w.rank; }};
  return t;
}

// Shipped between processes only (every p2p op of every rank: not written).
const tables::Table<collectives::P2pMark>& marks_table() {
  using M = collectives::P2pMark;
  static const tables::Table<M> t{
      "/pipeline/marks", "per p2p op its end and the rank's cumulative work and exposed p2p time there", tables::Distribution::ByRank,
      {col("rank", &M::rank), col("end_ns", &M::end, "ns"), col("work_ns", &M::work_ns, "ns"), col("p2p_ns", &M::p2p_ns, "ns")},
      [](const M& m) { return m.rank; }};
  return t;
}

const tables::Table<StageBubble>& stages_table() {
  using S = StageBubble;
  static const tables::Table<S> t{
      "/pipeline/stages", "per pipeline stage, over every pipeline and steady flush (attributes: the job's verdict)",
      tables::Distribution::Replicated,
      {col("stage", &S::stage), col("work_ns", &S::work_ns, "ns", "compute or microbatch collectives inside the flush spans"),
       col("bubble_ns", &S::bubble_ns, "ns", "flush span less work, summed"),
       col("p2p_ns", &S::p2p_ns, "ns", "p2p kernel time not overlapped by work"),
       col("chunk_work_ns", &S::chunk_work_ns, "ns", "median over pipelines without stragglers of work per microbatch and model chunk"),
       col("bubble", &S::bubble, "", "bubble_ns / work_ns")},
      nullptr};
  return t;
}

const tables::Table<FlushStage>& flushes_table() {
  using F = FlushStage;
  static const tables::Table<F> t{
      "/pipeline/flushes", "one row per pipeline, steady flush and stage (the plot's timeline)", tables::Distribution::Replicated,
      {col("pipeline", &F::pipeline, "", "index among the layout's pipeline groups"), col("flush", &F::flush),
       col("stage", &F::stage), col("rank", &F::rank), col("iteration", &F::iteration, "", "stage 0's iteration index"),
       col("span_start_ns", &F::span_start, "ns", "stage 0's first forward start (corrected wall clock)"),
       col("span_end_ns", &F::span_end, "ns", "stage 0's last backward end (corrected wall clock)"),
       col("window_start_ns", &F::window_start, "ns", "stage 0: span start; later stages: end of its first p2p op inside the span (corrected)"),
       col("window_end_ns", &F::window_end, "ns", "stage 0: span end; later stages: end of its last p2p op inside the span (corrected)"),
       col("work_ns", &F::work_ns, "ns"), col("bubble_ns", &F::bubble_ns, "ns"), col("p2p_ns", &F::p2p_ns, "ns")},
      nullptr};
  return t;
}

int option_int(const Options& spec, const char* name) {
  const std::string v = spec.analysis_option(name);
  return v.empty() ? 0 : std::max(0, std::atoi(v.c_str()));
}

template <class Row>
void append(std::vector<Row>& to, std::vector<Row> rows) {
  to.insert(to.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
}

class Pipeline : public Analysis {
 public:
  explicit Pipeline(const Options& spec)
      : given_m_(option_int(spec, "microbatches")), given_v_(option_int(spec, "virtual-stages")) {}

  void add_rank(size_t slot, const RankInput& in) override {
    pending_.push_back({slot, collectives::pipeline_flushes(in.timeline, in.ops, in.metrics.iterations)});
  }
  void assign_ranks(const std::vector<int32_t>& rank_of_slot) override {
    for (auto& [slot, f] : pending_) {
      const int32_t rank = rank_of_slot.at(slot);
      if (rank < 0) continue;
      for (auto& w : f.flushes) w.rank = rank, windows_.push_back(w);
      for (auto& m : f.marks) m.rank = rank, marks_.push_back(m);
    }
    pending_.clear();
    auto by_rank = [](const auto& a, const auto& b) { return a.rank < b.rank; };
    std::stable_sort(windows_.begin(), windows_.end(), by_rank);
    std::stable_sort(marks_.begin(), marks_.end(), by_rank);
  }

  // Every process gets every rank's records and computes the same result (replicated tables).
  void finish(Transport& t, const RunResults& run) override {
    ByteWriter w;
    windows_table().pack(w, windows_);
    marks_table().pack(w, marks_);
    collectives::PipelineInputs in;
    for (const auto& blob : t.allgather(w.bytes())) {
      ByteReader r(blob);
      append(in.windows, windows_table().unpack(r));
      append(in.marks, marks_table().unpack(r));
    }
    marks_.clear();
    if (!run.cross || !run.cross->layout.layout) return;
    const CrossRankResults& x = *run.cross;
    in.layout = *x.layout.layout;
    in.clocks = &x.clocks;
    for (const CommSummary& c : x.comms)
      if (c.p2p && c.ranks.size() == 2) in.links.push_back({c.ranks[0], c.ranks[1], c.matched_ops, c.median_transfer_ns});
    for (const auto& s : x.verdict.stragglers) in.stragglers.push_back(s.rank);
    in.given_microbatches = given_m_, in.given_virtual_stages = given_v_;
    result_ = collectives::measure_pipeline(in);
  }

  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(windows_table().materialize(windows_));
    tables::TableData s = stages_table().materialize(result_.stages);
    s.attributes = attributes();
    out.tables.push_back(std::move(s));
    out.tables.push_back(flushes_table().materialize(result_.rows));
  }

  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override;
  ReportSection report(const RunResults&, const RunSummaryInput&) const override;
  void load(const h5read::File& h5) override;

 private:
  std::vector<tables::Attribute> attributes() const;
  const collectives::PipelineBubble& r() const { return result_; }
  int given_m_ = 0, given_v_ = 0;
  std::vector<std::pair<size_t, collectives::RankFlushes>> pending_;
  std::vector<FlushWindow> windows_;  // this process's ranks
  std::vector<collectives::P2pMark> marks_;
  collectives::PipelineBubble result_;
};

std::vector<tables::Attribute> Pipeline::attributes() const {
  std::vector<std::string> causes, stragglers;
  for (BubblePart c : r().causes) causes.push_back(collectives::bubble_part_name(c));
  for (int s : r().straggler_ranks) stragglers.push_back(std::to_string(s));
  std::vector<tables::Attribute> a = {
      {"measured", int64_t(r().measured)}, {"why_not", r().why_not}, {"pp", int64_t(r().pp)},
      {"microbatches", int64_t(r().microbatches)}, {"virtual_stages", int64_t(r().virtual_stages)},
      {"microbatches_given", int64_t(r().microbatches_given)}, {"virtual_stages_given", int64_t(r().virtual_stages_given)},
      {"schedule", std::string(topology::schedule_name(r().schedule))}, {"bubble_measured", r().bubble},
      {"bubble_theoretical", r().theoretical}, {"inflation", r().inflation}, {"work_ns", r().work_ns},
      {"pipelines", int64_t(r().pipelines)}, {"flushes", int64_t(r().flushes)}, {"causes", causes},
      {"bottleneck_stage", int64_t(r().bottleneck_stage)}, {"bottleneck_ratio", r().bottleneck_ratio},
      {"straggler_ranks", stragglers}, {"transfer_ns", r().transfer_ns}};
  for (int i = 0; i < collectives::kBubbleParts; ++i)
    a.push_back({std::string("part_") + collectives::bubble_part_name(BubblePart(i)), r().parts[size_t(i)]});
  return a;
}

void Pipeline::load(const h5read::File& h5) {
  if (!h5.exists("/pipeline")) return;  // a scan from before this analysis: not measured
  windows_ = tables::read_rows(h5, windows_table());
  result_.stages = tables::read_rows(h5, stages_table());
  result_.rows = tables::read_rows(h5, flushes_table());
  const std::string p = "/pipeline/stages";
  auto i64 = [&](const char* n) { return h5.attribute<int64_t>(p, n); };
  auto dbl = [&](const char* n) { return h5.attribute<double>(p, n); };
  result_.measured = i64("measured"), result_.why_not = h5.string_attribute(p, "why_not");
  result_.pp = int(i64("pp")), result_.microbatches = int(i64("microbatches")), result_.virtual_stages = int(i64("virtual_stages"));
  result_.microbatches_given = i64("microbatches_given"), result_.virtual_stages_given = i64("virtual_stages_given");
  const std::string sched = h5.string_attribute(p, "schedule");
  for (auto s : {topology::Schedule::GPipe, topology::Schedule::OneFOneB, topology::Schedule::Interleaved})
    if (sched == topology::schedule_name(s)) result_.schedule = s;
  result_.bubble = dbl("bubble_measured"), result_.theoretical = dbl("bubble_theoretical"), result_.inflation = dbl("inflation");
  result_.work_ns = dbl("work_ns"), result_.pipelines = int(i64("pipelines")), result_.flushes = int(i64("flushes"));
  result_.bottleneck_stage = int(i64("bottleneck_stage")), result_.bottleneck_ratio = dbl("bottleneck_ratio");
  result_.transfer_ns = dbl("transfer_ns");
  result_.causes.clear();
  for (const auto& c : h5.string_list_attribute(p, "causes"))
    for (int i = 0; i < collectives::kBubbleParts; ++i)
      if (c == collectives::bubble_part_name(BubblePart(i))) result_.causes.push_back(BubblePart(i));
  result_.straggler_ranks.clear();
  for (const auto& s : h5.string_list_attribute(p, "straggler_ranks")) result_.straggler_ranks.push_back(std::atoi(s.c_str()));
  for (int i = 0; i < collectives::kBubbleParts; ++i)
    result_.parts[size_t(i)] = dbl((std::string("part_") + collectives::bubble_part_name(BubblePart(i))).c_str());
}

std::vector<std::pair<std::string, std::string>> Pipeline::summary(const RunResults&, const RunSummaryInput&) const {
  JsonWriter j;
  if (!r().measured) {
    j.null();
    return {{"pipeline", j.str()}};
  }
  j.begin_object().key("pp").value(int64_t(r().pp)).key("microbatches").value(int64_t(r().microbatches));
  j.key("virtual_stages").value(int64_t(r().virtual_stages)).key("schedule").value(topology::schedule_name(r().schedule));
  j.key("bubble_measured").value(r().bubble).key("bubble_theoretical").value(r().theoretical);
  j.key("inflation").value(r().inflation).key("bottleneck_stage");
  if (r().bottleneck_stage >= 0) j.value(int64_t(r().bottleneck_stage));
  else j.null();
  j.key("causes").begin_array();
  for (BubblePart c : r().causes) j.value(collectives::bubble_part_name(c));
  j.end_array();
  // Additions to the contract's keys.
  j.key("inferred").begin_array();
  if (!r().microbatches_given) j.value("microbatches");
  if (!r().virtual_stages_given) j.value("virtual_stages");
  j.value("schedule").end_array();
  j.key("parts").begin_object();
  for (int i = 0; i < collectives::kBubbleParts; ++i) j.key(collectives::bubble_part_name(BubblePart(i))).value(r().parts[size_t(i)]);
  j.end_object().key("per_stage").begin_array();
  for (const StageBubble& s : r().stages)
    j.begin_object().key("stage").value(int64_t(s.stage)).key("bubble").value(s.bubble)
        .key("chunk_work_ms").value(s.chunk_work_ns / 1e6).end_object();
  j.end_array().key("straggler_ranks").begin_array();
  for (int s : r().straggler_ranks) j.value(int64_t(s));
  j.end_array().key("pipelines").value(int64_t(r().pipelines)).key("flushes").value(int64_t(r().flushes)).end_object();
  return {{"pipeline", j.str()}};
}

ReportSection Pipeline::report(const RunResults&, const RunSummaryInput&) const {
  if (r().pp < 2) return {};
  std::string s = "\npipeline:\n";
  if (!r().measured) return {ReportPart::Verdict, s + "  not measured: " + r().why_not + "\n"};
  auto how = [](bool given) { return given ? "given" : "inferred"; };
  const int m = r().microbatches, v = r().virtual_stages, p = r().pp;
  s += fmt::format("  PP={}, {} microbatches ({}), {} model chunk{} per stage ({}), schedule {} (inferred); {} steady flushes of {} pipelines\n",
                   p, m, how(r().microbatches_given), v, v == 1 ? "" : "s", how(r().virtual_stages_given),
                   topology::schedule_name(r().schedule), r().flushes, r().pipelines);
  s += fmt::format("  bubble {:.1f}% of the stages' work; the schedule promises {:.1f}% ((p-1)/{} = {}/{}): {:.2f}x\n",
                   100 * r().bubble, 100 * r().theoretical, v > 1 ? "(v m)" : "m", p - 1, v * m, r().inflation);
  const double excess = r().bubble - r().theoretical;
  std::vector<std::string> parts;
  for (int i = 0; i < collectives::kBubbleParts; ++i)
    if (std::abs(r().parts[size_t(i)]) >= 0.0005)
      parts.push_back(fmt::format("{} {:.1f}", collectives::bubble_part_name(BubblePart(i)), 100 * r().parts[size_t(i)]));
  s += fmt::format("  excess {:.1f} points: {}\n", 100 * excess, parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", ")));
  if (r().bottleneck_stage >= 0)
    s += fmt::format("  bottleneck: stage {} does {:.2f}x the median stage's work per microbatch\n", r().bottleneck_stage,
                     r().bottleneck_ratio);
  if (!r().straggler_ranks.empty())
    s += fmt::format("  stragglers inside pipelines: ranks {}\n", fmt::join(r().straggler_ranks, ", "));
  if (r().transfer_ns > 0) s += fmt::format("  p2p transfer: {:.3f} ms median per op\n", r().transfer_ns / 1e6);
  s += "  stage  bubble  work ms/microbatch\n";
  for (const StageBubble& st : r().stages)
    s += fmt::format("  {:>5}  {:>5.1f}%  {:>8.3f}\n", st.stage, 100 * st.bubble, st.chunk_work_ns * v / 1e6);
  if (r().causes.empty()) s += "  verdict: the bubble is what the schedule promises\n";
  else {
    std::vector<std::string> names;
    for (BubblePart c : r().causes) names.push_back(collectives::bubble_part_name(c));
    s += fmt::format("  verdict: {}\n", fmt::join(names, ", "));
  }
  return {ReportPart::Verdict, s};
}

}  // namespace

std::unique_ptr<Analysis> pipeline(const Options& spec) { return std::make_unique<Pipeline>(spec); }

}  // namespace straggler::analyses
