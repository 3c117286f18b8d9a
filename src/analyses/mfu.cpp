// MFU per iteration and per phase (docs/mfu.md). The GPU from the export (TARGET_INFO_GPU, read
// into RankTimeline::gpu_name), or --gpu / --peak-tflops; the model's FLOPs per step from
// --model-flops-per-step, or 6 x --params x --tokens-per-step. Without both: no MFU, never a guess.
// HDF5 /mfu/iterations (attributes: the GPU, peak, FLOPs and why not), /mfu/phases; summary key
// `mfu`; a report section.
#include "analyses/mfu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "analyses/builtin.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "table_read.hpp"
#include "topology/gpu_specs.hpp"

namespace straggler::analyses {

MfuResult compute_mfu(const MfuInput& in) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double peak = in.peak_tflops * 1e12 * in.gpus;  // FLOP/s of the job
  const bool ok = in.flops_per_step > 0 && peak > 0;
  auto mfu_of = [&](double flops, double ms) { return ok && ms > 0 ? flops / (ms / 1e3 * peak) : nan; };
  MfuResult r;
  double all_ms = 0;
  for (size_t i = 0; i < in.iteration.size(); ++i) {
    r.iterations.push_back({in.iteration[i], in.step_ms[i], mfu_of(in.flops_per_step, in.step_ms[i])});
    all_ms += in.step_ms[i];
    // A phase ends before the first listed iteration at or after a change point (the change point's
    // own iteration may not be listed: the warm-up, or one most ranks lack).
    const bool last = i + 1 == in.iteration.size();
    const bool cut = !last && std::any_of(in.change_points.begin(), in.change_points.end(), [&](int64_t c) {
      return in.iteration[i] < c && in.iteration[i + 1] >= c;
    });
    if (r.phases.empty() || r.phases.back().to_iteration != -1) r.phases.push_back({in.iteration[i], -1, 0, 0, 0});
    MfuPhase& p = r.phases.back();
    p.iterations++, p.step_ms += in.step_ms[i];
    if (last || cut) {
      p.to_iteration = in.iteration[i];
      p.mfu = mfu_of(in.flops_per_step * p.iterations, p.step_ms);
      p.step_ms /= p.iterations;
    }
  }
  r.mfu = mfu_of(in.flops_per_step * double(in.iteration.size()), all_ms);
  return r;
}

namespace {

using tables::col;

const tables::Table<MfuIteration>& iterations_table() {
  using I = MfuIteration;
  static const tables::Table<I> t{
      "/mfu/iterations", "per steady iteration: the job's step (median over ranks) and its MFU (attributes: GPU, peak, FLOPs)",
      tables::Distribution::Replicated,
      {col("iteration", &I::iteration), col("step_ms", &I::step_ms, "ms"),
       col("mfu", &I::mfu, "", "model FLOPs / (step x GPUs x dense peak); NaN without FLOPs or peak")},
      nullptr};
  return t;
}

const tables::Table<MfuPhase>& phases_table() {
  using P = MfuPhase;
  static const tables::Table<P> t{
      "/mfu/phases", "MFU between change points", tables::Distribution::Replicated,
      {col("from_iteration", &P::from_iteration), col("to_iteration", &P::to_iteration, "", "inclusive"),
       col("iterations", &P::iterations), col("step_ms", &P::step_ms, "ms", "mean step"), col("mfu", &P::mfu)},
      nullptr};
  return t;
}

double number_option(const Options& spec, const char* name, double lo, double hi) {
  const std::string v = spec.analysis_option(name);
  if (v.empty()) return 0;
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || !(x >= lo && x <= hi))
    throw common::UsageError(fmt::format("--{} {}: must be a number in [{:g}, {:g}]", name, common::printable(v.substr(0, 40)), lo, hi));
  return x;
}

// The job's step per iteration: the verdict's (median over ranks per iteration,
// collectives/verdict.hpp job_step_ms) over the iterations every rank has, numbered as the first
// rank numbers them; the first left out when there are 3 or more (warm-up: compile, autotune,
// allocator).
void job_steps(const CrossRankResults& x, MfuInput& in) {
  size_t common = x.step_ms.empty() ? 0 : SIZE_MAX;
  for (const auto& s : x.step_ms) common = std::min(common, s.size());
  common = std::min(common, x.verdict.job_step_ms.size());
  if (!x.iteration_number.empty()) common = std::min(common, x.iteration_number.front().size());
  for (size_t i = common >= 3 ? 1 : 0; i < common; ++i)
    in.iteration.push_back(x.iteration_number.front()[i]), in.step_ms.push_back(x.verdict.job_step_ms[i]);
  for (const auto& c : x.verdict.change_points) in.change_points.push_back(c.iteration);
}

struct RankGpu {
  int32_t rank = -1;
  std::string gpu;
};

}  // namespace
}  // namespace straggler::analyses

namespace straggler {
template <>
struct Wire<analyses::RankGpu> {
  static void fields(auto& ar, auto& g) { ar(g.rank, g.gpu); }
};
}  // namespace straggler

namespace straggler::analyses {
namespace {

class Mfu : public Analysis {
 public:
  explicit Mfu(const Options& spec) {
    const std::string gpu = spec.analysis_option("gpu"), prec = spec.analysis_option("precision");
    const auto p = topology::parse_precision(prec.empty() ? "bf16" : prec);
    if (!p) throw common::UsageError("--precision " + common::printable(prec.substr(0, 20)) + ": must be bf16, fp16 or fp8");
    precision_ = *p, precision_name_ = prec.empty() ? "bf16" : prec;
    given_peak_ = number_option(spec, "peak-tflops", 1e-3, 1e6);
    if (!gpu.empty()) {
      given_gpu_ = topology::find_gpu(gpu);
      if (!given_gpu_ && given_peak_ <= 0)
        throw common::UsageError("--gpu " + common::printable(gpu.substr(0, 60)) +
                                 ": not a GPU in the table (docs/mfu.md); give --peak-tflops");
      gpu_ = gpu;
    }
    flops_ = number_option(spec, "model-flops-per-step", 1, 1e30);
    const double tokens = number_option(spec, "tokens-per-step", 1, 1e18), params = number_option(spec, "params", 1, 1e18);
    if (flops_ > 0) flops_source_ = "given";
    else if (tokens > 0 && params > 0) flops_ = 6 * params * tokens, flops_source_ = "6 x params x tokens";
    else if (tokens > 0 || params > 0) throw common::UsageError("--tokens-per-step and --params go together (6 N T FLOPs per step)");
  }
  void add_rank(size_t slot, const RankInput& r) override { pending_.push_back({int32_t(slot), r.timeline.gpu_name}); }
  void assign_ranks(const std::vector<int32_t>& rank_of_slot) override {
    for (auto& g : pending_)
      if (rank_of_slot.at(size_t(g.rank)) >= 0) mine_.push_back({rank_of_slot[size_t(g.rank)], g.gpu});
    pending_.clear();
  }
  void finish(Transport& t, const RunResults& run) override;
  void tables(const RunResults&, tables::ResultTables& out) const override {
    tables::TableData it = iterations_table().materialize(result_.iterations);
    it.attributes = {{"gpu", gpu_}, {"gpu_model", model_}, {"gpu_source", gpu_source_}, {"peak_tflops", peak_},
                     {"precision", precision_name_}, {"gpus", int64_t(gpus_)}, {"model_flops_per_step", flops_},
                     {"flops_source", flops_source_}, {"mfu", result_.mfu}, {"why_not", why_not_}};
    out.tables.push_back(std::move(it));
    out.tables.push_back(phases_table().materialize(result_.phases));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override;
  ReportSection report(const RunResults&, const RunSummaryInput&) const override;
  void load(const h5read::File& h5) override;

 private:
  topology::Precision precision_ = topology::Precision::BF16;
  std::string precision_name_, gpu_, model_, gpu_source_, flops_source_, why_not_;
  std::optional<topology::GpuSpec> given_gpu_;
  double given_peak_ = 0, peak_ = 0, flops_ = 0;
  int gpus_ = 0;
  std::vector<RankGpu> pending_, mine_;
  MfuResult result_;
};

void Mfu::finish(Transport& t, const RunResults& run) {
  std::map<std::string, int> names;
  for (const auto& g : allgather_list(t, mine_))
    if (!g.gpu.empty()) names[g.gpu]++;
  std::string exported;
  for (const auto& [n, c] : names)
    if (exported.empty() || c > names[exported]) exported = n;
  std::optional<topology::GpuSpec> spec = given_gpu_;
  if (!gpu_.empty()) gpu_source_ = "given";
  else if (!exported.empty()) gpu_ = exported, spec = topology::find_gpu(exported), gpu_source_ = "export";
  if (spec) model_ = spec->model, peak_ = topology::peak_tflops(*spec, precision_);
  if (given_peak_ > 0) peak_ = given_peak_, gpu_source_ = gpu_source_.empty() ? "peak given" : gpu_source_ + ", peak given";
  gpus_ = run.world;
  MfuInput in{flops_, peak_, gpus_, {}, {}, {}};
  if (run.cross) job_steps(*run.cross, in);
  result_ = compute_mfu(in);
  if (flops_ <= 0) why_not_ = "no model FLOPs per step (give --model-flops-per-step, or --tokens-per-step and --params)";
  else if (peak_ <= 0)
    why_not_ = gpu_.empty() ? "the export names no GPU (give --gpu NAME or --peak-tflops)"
                            : "no " + precision_name_ + " peak known for " + common::printable(gpu_) + " (give --peak-tflops)";
  else if (in.iteration.empty()) why_not_ = "no iterations found";
}

void Mfu::load(const h5read::File& h5) {
  if (!h5.exists("/mfu")) {  // a scan from before this analysis: nothing was computed
    why_not_ = "a scan from before MFU was measured";
    return;
  }
  result_.iterations = tables::read_rows(h5, iterations_table());
  result_.phases = tables::read_rows(h5, phases_table());
  const std::string p = "/mfu/iterations";
  auto str = [&](const char* n) { return h5.string_attribute(p, n); };
  gpu_ = str("gpu"), model_ = str("gpu_model"), gpu_source_ = str("gpu_source"), precision_name_ = str("precision");
  flops_source_ = str("flops_source"), why_not_ = str("why_not");
  peak_ = h5.attribute<double>(p, "peak_tflops"), flops_ = h5.attribute<double>(p, "model_flops_per_step");
  gpus_ = int(h5.attribute<int64_t>(p, "gpus")), result_.mfu = h5.attribute<double>(p, "mfu");
}

std::vector<std::pair<std::string, std::string>> Mfu::summary(const RunResults&, const RunSummaryInput&) const {
  JsonWriter j;
  if (!why_not_.empty()) return {{"mfu", j.null().str()}};
  j.begin_object().key("gpu").value(gpu_).key("peak_tflops").value(peak_).key("model_flops_per_step").value(flops_);
  j.key("phases").begin_array();
  for (const auto& ph : result_.phases)
    j.begin_object().key("from_iteration").value(ph.from_iteration).key("to_iteration").value(ph.to_iteration)
        .key("mfu").value(ph.mfu).key("step_ms").value(ph.step_ms).end_object();
  j.end_array();
  // Additions to the contract's keys.
  j.key("mfu").value(result_.mfu).key("gpu_model").value(model_).key("gpu_source").value(gpu_source_);
  j.key("precision").value(precision_name_).key("gpus").value(int64_t(gpus_)).key("flops_source").value(flops_source_);
  return {{"mfu", j.end_object().str()}};
}

ReportSection Mfu::report(const RunResults&, const RunSummaryInput&) const {
  std::string s = "\nMFU (model FLOPs utilisation):\n";
  if (!gpu_.empty() || peak_ > 0)
    s += fmt::format("  GPU: {} ({}){}; {} GPU{}\n", gpu_.empty() ? "-" : common::printable(gpu_),
                     gpu_source_ == "export" ? "from the export" : common::printable(gpu_source_),
                     peak_ > 0 ? fmt::format(", {} dense peak {:g} TFLOPS", common::printable(precision_name_), peak_) : "", gpus_,
                     gpus_ == 1 ? "" : "s");
  if (!why_not_.empty() || result_.iterations.empty() || !std::isfinite(result_.mfu))
    return {ReportPart::Measurements,
            s + "  not computed: " + (why_not_.empty() ? std::string("no iterations found") : common::printable(why_not_)) + "\n"};
  s += fmt::format("  model FLOPs per step: {:.3g} ({})\n", flops_, common::printable(flops_source_));
  s += fmt::format("  MFU {:.1f}% over iterations {}-{}\n", 100 * result_.mfu, result_.iterations.front().iteration,
                   result_.iterations.back().iteration);
  if (result_.phases.size() > 1)
    for (const auto& ph : result_.phases)
      s += fmt::format("    iterations {}-{}: {:.1f}% (step {:.1f} ms)\n", ph.from_iteration, ph.to_iteration, 100 * ph.mfu,
                       ph.step_ms);
  return {ReportPart::Measurements, s};
}

}  // namespace

std::unique_ptr<Analysis> mfu(const Options& spec) { return std::make_unique<Mfu>(spec); }

}  // namespace straggler::analyses
