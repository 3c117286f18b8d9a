#include "options.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <map>

#include "analysis.hpp"
#include "common/atomic_file.hpp"
#include "common/regex.hpp"
#include "ranks/discovery.hpp"
#include "ranks/metrics.hpp"
#include "version.hpp"

namespace straggler {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

void record_command_line(int argc, char** argv, Options& out) {
  for (int i = 0; i < argc; ++i) {
    if (i) out.command_line += ' ';
    out.command_line += argv[i];
  }
}

// argv against `visible` and `hidden`, every bare argument going to the option `positional`. A
// parse error is a UsageError: `prefix` + Boost's words + " (see HELP)".
po::variables_map parse_with(int argc, char** argv, const po::options_description& visible,
                             const po::options_description& hidden, const char* positional, const std::string& prefix,
                             const std::string& help) {
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add(positional, -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw common::UsageError(prefix + common::printable(e.what()) + " (see " + help + ")");
  }
  return vm;
}

// --timeout, for every command line. Throws common::UsageError. A value beyond any run (a year)
// means forever, as 0 does: the watchdog counts nanoseconds in 64 bits, which 1e30 s overflows.
// Below the watchdog's resolution (its heartbeat is at least 0.05 s) a process could never show a
// sign of life in time: refused.
void check_timeout(double& seconds) {
  constexpr double kForever = 365.0 * 86400, kResolution = 0.1;
  if (!(seconds >= 0))  // NaN too
    throw common::UsageError(fmt::format("--timeout {:g}: must be seconds >= 0 (0: forever)", seconds));
  if (seconds > kForever) seconds = 0;
  if (seconds > 0 && seconds < kResolution)
    throw common::UsageError(fmt::format("--timeout {:g}: below {:g} s, the watchdog's resolution (0: forever)",
                                         seconds, kResolution));
}

// `straggler-scan report SCAN.h5 [--summary S.json]`: the arguments after "report".
bool parse_report(int argc, char** argv, Options& out, bool silent) {
  po::options_description visible(
      "straggler-scan report: the report of a saved scan, without its profiles\n\n"
      "Usage: [mpirun -n P] straggler-scan report SCAN.h5 [--summary OUT.json]\n"
      "Prints the report the scan printed and writes its summary again, from the HDF5 it wrote.\n\nOptions");
  visible.add_options()("help,h", "show this help")("summary", po::value(&out.summary),
                                                    "also write the verdict as JSON (see docs)")(
      "quiet,q", po::bool_switch(&out.quiet), "print only errors")(
      "timeout", po::value(&out.timeout_s)->default_value(out.timeout_s),
      "under mpirun: seconds a process may give no sign of life before the job ends (0: forever)");
  po::options_description hidden;
  hidden.add_options()("scan", po::value<std::vector<std::string>>());
  const po::variables_map vm = parse_with(argc - 1, argv + 1, visible, hidden, "scan", "report: ", "report --help");
  if (vm.count("help")) {
    if (!silent) std::cout << visible << "\n";
    return false;
  }
  const auto scans = vm.count("scan") ? vm["scan"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (scans.size() != 1)
    throw common::UsageError("report: give exactly one scan file (SCAN.h5), got " + std::to_string(scans.size()));
  check_timeout(out.timeout_s);
  out.command = Options::Command::Report, out.scan_file = scans.front(), out.output.clear();
  record_command_line(argc, argv, out);
  return true;
}

// `straggler-scan scaling A B ... [-o OUT.h5] [--summary S.json] [--fabric F] [--topology T]`.
bool parse_scaling(int argc, char** argv, Options& out, bool silent) {
  out.output = "straggler-scaling.h5";
  po::options_description visible(
      "straggler-scan scaling: all-reduce scaling cliffs across runs at different scales (docs/scaling-cliffs.md)\n\n"
      "Usage: [mpirun -n P] straggler-scan scaling RUN_OR_SCAN... [-o OUT.h5] [--summary OUT.json]\n"
      "Each argument is a run directory (scanned here) or the HDF5 of an earlier scan (read, not re-scanned).\n\nOptions");
  std::string fabric, topo;
  visible.add_options()("help,h", "show this help")("output,o", po::value(&out.output)->default_value(out.output),
                                                    "HDF5 output file")(
      "summary", po::value(&out.summary), "also write the rows as JSON (summary key `scaling`)")(
      "fabric", po::value(&fabric), "FILE: link classes' latency and bus bandwidth (docs/fabric.md); default: fitted")(
      "topology", po::value(&topo), "FILE: `HOSTNAME RACK POD` per line (docs/scaling-cliffs.md)")(
      "cliff-factor", po::value(&out.cliff_factor)->default_value(out.cliff_factor),
      "a cliff: time above this factor x the model's extrapolation from the smaller scales")(
      "quiet,q", po::bool_switch(&out.quiet), "print only errors")(
      "timeout", po::value(&out.timeout_s)->default_value(out.timeout_s),
      "under mpirun: seconds a process may give no sign of life before the job ends (0: forever)");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&out.inputs));
  const po::variables_map vm = parse_with(argc - 1, argv + 1, visible, hidden, "input", "scaling: ", "scaling --help");
  if (vm.count("help")) {
    if (!silent) std::cout << visible << "\n";
    return false;
  }
  if (out.inputs.empty()) throw common::UsageError("scaling: give run directories or scan files (see scaling --help)");
  if (!(out.cliff_factor > 1 && out.cliff_factor < 1000))
    throw common::UsageError("--cliff-factor " + std::to_string(out.cliff_factor) + ": must be in (1, 1000)");
  check_timeout(out.timeout_s);
  out.command = Options::Command::Scaling;
  for (const auto& a : analysis_registry())
    for (const auto& o : a.options) out.analysis_options[o.name] = o.default_value;
  out.analysis_options["fabric"] = fabric, out.analysis_options["topology"] = topo;
  record_command_line(argc, argv, out);
  return true;
}

// `straggler-scan compare GOOD BAD [-o OUT.h5] [--summary S.json] [--model-flops-per-step F] ...`.
bool parse_compare(int argc, char** argv, Options& out, bool silent) {
  out.output = "straggler-compare.h5";
  po::options_description visible(
      "straggler-scan compare: what changed between a good run and a bad one (docs/compare.md)\n\n"
      "Usage: [mpirun -n P] straggler-scan compare GOOD BAD [-o OUT.h5] [--summary OUT.json]\n"
      "Each is a run directory (scanned here) or the HDF5 of an earlier scan (read, not re-scanned).\n\nOptions");
  std::string flops, gpu, peak, precision;
  visible.add_options()("help,h", "show this help")("output,o", po::value(&out.output)->default_value(out.output),
                                                    "HDF5 output file")(
      "summary", po::value(&out.summary), "also write the comparison as JSON (key `compare`)")(
      "model-flops-per-step", po::value(&flops), "the model's FLOPs per step, for MFU (run directories)")(
      "gpu", po::value(&gpu), "NAME: the GPU model where the export names none (run directories)")(
      "peak-tflops", po::value(&peak), "one GPU's dense peak (run directories)")(
      "precision", po::value(&precision), "bf16 (default), fp16 or fp8 (run directories)")(
      "quiet,q", po::bool_switch(&out.quiet), "print only errors")(
      "timeout", po::value(&out.timeout_s)->default_value(out.timeout_s),
      "under mpirun: seconds a process may give no sign of life before the job ends (0: forever)");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&out.inputs));
  const po::variables_map vm = parse_with(argc - 1, argv + 1, visible, hidden, "input", "compare: ", "compare --help");
  if (vm.count("help")) {
    if (!silent) std::cout << visible << "\n";
    return false;
  }
  if (out.inputs.size() != 2) throw common::UsageError("compare: give two runs or scans, GOOD then BAD (see compare --help)");
  check_timeout(out.timeout_s);
  out.command = Options::Command::Compare;
  for (const auto& a : analysis_registry())
    for (const auto& o : a.options) out.analysis_options[o.name] = o.default_value;
  out.analysis_options["model-flops-per-step"] = flops, out.analysis_options["gpu"] = gpu;
  out.analysis_options["peak-tflops"] = peak, out.analysis_options["precision"] = precision;
  record_command_line(argc, argv, out);
  return true;
}

// The parsed values that need a check or a conversion. Throws common::UsageError.
void take_values(const po::variables_map& vm, Options& out) {
  out.clock_correction = !vm.count("no-clock-correction");
  check_timeout(out.timeout_s);
  if (!(out.hang_margin_s > 0 && out.hang_margin_s <= 86400))  // NaN too; a day is far past any hang
    throw common::UsageError("--hang-margin " + std::to_string(out.hang_margin_s) + ": must be seconds in (0, 86400]");
  if (const int64_t n = vm["top-kernels"].as<int64_t>(); n < 1)
    throw common::UsageError("--top-kernels " + std::to_string(n) + ": must be a count of at least 1");
  else
    out.top_kernels = size_t(n);
  if (vm.count("layout")) {
    try {
      out.layout = topology::ParallelLayout::parse(vm["layout"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw common::UsageError(std::string("--layout: ") + common::printable(e.what()));
    }
  }
  if (out.inputs.empty()) throw common::UsageError("no run directory given (see --help)");
  if (!out.iteration_marker.empty()) {
    try {
      common::Regex re(out.iteration_marker);
    } catch (const std::invalid_argument& e) {
      throw common::UsageError("--iteration-marker: invalid regular expression '" +
                               common::printable(out.iteration_marker) + "' (" + common::printable(e.what()) + ")");
    }
  }
}

}  // namespace

bool parse_options(int argc, char** argv, Options& out, bool silent) {
  // A subcommand is the first argument; a run directory named "report" is given as ./report.
  if (argc >= 2 && std::string(argv[1]) == "report") return parse_report(argc, argv, out, silent);
  if (argc >= 2 && std::string(argv[1]) == "scaling") return parse_scaling(argc, argv, out, silent);
  if (argc >= 2 && std::string(argv[1]) == "compare") return parse_compare(argc, argv, out, silent);
  po::options_description visible(
      "straggler-scan: why is a distributed GPU training job slow?\n\n"
      "Usage: [mpirun -n P] straggler-scan RUN_DIR... [-o OUT.h5] [--summary OUT.json]\n"
      "       [mpirun -n P] straggler-scan report SCAN.h5 [--summary OUT.json]   (the report of a saved scan)\n"
      "       [mpirun -n P] straggler-scan scaling RUN_OR_SCAN... [-o OUT.h5]        (scaling cliffs across runs)\n"
      "       [mpirun -n P] straggler-scan compare GOOD BAD [-o OUT.h5]            (what changed between two runs)\n"
      "Alone it runs in one process without MPI; under mpirun (or srun) the profiles are spread over the\n"
      "processes.\n\nOptions");
  visible.add_options()("help,h", "show this help")("version", "show the version")(
      "output,o", po::value(&out.output)->default_value(out.output), "HDF5 output file")(
      "summary", po::value(&out.summary), "also write the verdict as JSON (see docs)")(
      "rank-pattern", po::value(&out.rank_pattern),
      "regex (RE2 syntax) with one capture group taking the rank from a file name (default: rank_N, rankN, rank-N, .N.sqlite)")(
      "rank-map", po::value(&out.rank_map), "CSV file,key,rank (key: pid=N, device=N or empty) overriding ranks")(
      "iteration-marker", po::value(&out.iteration_marker),
      "regex (RE2 syntax) for NVTX ranges that mark iterations (default covers ProfilerStep#N, iteration N, "
      "step N)")(
      "layout", po::value<std::string>(),
      "TPxPPxDP, e.g. 2x4x64 (Megatron order: TP fastest, then DP, then PP): names communicators tp-N/dp-N/pp-N "
      "and compares stragglers with the ranks of their pipeline stage; TP*PP*DP must cover the highest rank found "
      "(more is fine when only some ranks were profiled)")(
      "top-kernels", po::value<int64_t>()->default_value(int64_t(out.top_kernels)),
      "kernels kept per rank in /kernels/top (at least 1)")(
      "strict", po::bool_switch(&out.strict), "exit 2 when any profile cannot be read")(
      "no-clock-correction", "compare ranks on their hosts' clocks (utcEpochNs) as recorded, without the "
      "alignment from collective end times")(
      "quiet,q", po::bool_switch(&out.quiet), "print only errors")(
      "timings", po::bool_switch(&out.timings), "print the wall time of each stage (process 0) to stderr")(
      "progress", po::bool_switch(&out.progress),
      "a line per stage on stderr once the scan has taken 2 s (the default when stderr is a terminal; -q silences it)")(
      "timeout", po::value(&out.timeout_s)->default_value(out.timeout_s),
      "under mpirun: seconds a process may give no sign of life (stopped, frozen, hung in I/O) before the job "
      "ends with exit status 1 naming it; 0 waits forever")(
      "hang-margin", po::value(&out.hang_margin_s)->default_value(out.hang_margin_s),
      "seconds a member's capture must run past the others' arrival at an op it never reached to call it a "
      "desync (else its capture merely ended), and the age a launch that never completed needs to count as "
      "stuck; at least twice a communicator's longest quiet gap is used anyway");
  // The registered analyses' own options (AnalysisInfo::options): one line each where they register.
  const auto registry = analysis_registry();
  for (const auto& a : registry)
    for (const auto& o : a.options)
      visible.add_options()(o.name.c_str(), po::value<std::string>()->default_value(o.default_value),
                            (o.help + " (analysis " + a.name + ")").c_str());
  po::options_description hidden;
  hidden.add_options()("input", po::value(&out.inputs));
  const po::variables_map vm = parse_with(argc, argv, visible, hidden, "input", "", "--help");
  if (vm.count("help")) {
    if (!silent) std::cout << visible << "\n";
    return false;
  }
  if (vm.count("version")) {
    if (!silent) std::cout << "straggler-scan " << kToolVersion << "\n";
    return false;
  }
  for (const auto& a : registry)
    for (const auto& o : a.options) out.analysis_options[o.name] = vm[o.name].as<std::string>();
  take_values(vm, out);
  record_command_line(argc, argv, out);
  return true;
}

namespace {
bool inside(const fs::path& child, const fs::path& dir) {
  auto c = child.begin(), d = dir.begin();
  for (; d != dir.end() && !d->empty(); ++c, ++d)
    if (c == child.end() || *c != *d) return false;
  return true;
}

void check_one(const std::string& path, const char* what, const Options& opt) {
  const std::string shown = common::printable(path);  // for messages
  // Outputs are renamed into place: over a device node, link or FIFO that would replace it.
  if (const std::string why = common::not_replaceable(path); !why.empty() && why != "is a directory")
    throw common::UsageError(shown + ": " + what + " path " + why + ", which writing would replace (outputs are "
                             "renamed into place): name a regular file or a new path");
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) throw common::UsageError(shown + ": " + what + " path is not usable (" + ec.message() + ")");
  fs::path parent = p.parent_path();
  if (!fs::is_directory(parent, ec))
    throw common::UsageError(shown + ": " + what + " directory " +
                            (fs::exists(parent, ec) ? common::printable(parent.string()) + " is not a directory"
                                                    : std::string("does not exist")));
  if (::access(parent.c_str(), W_OK) != 0)
    throw common::UsageError(shown + ": " + what + " directory is not writable");
  if (fs::is_directory(p, ec)) throw common::UsageError(shown + ": " + what + " path is a directory");

  for (const auto& in : opt.inputs) {
    fs::path q = fs::weakly_canonical(fs::absolute(in), ec);
    if (ec) continue;
    if (p == q) throw common::UsageError(shown + ": " + what + " would overwrite an input profile");
    if (fs::is_directory(q, ec) && inside(p, q))
      throw common::UsageError(shown + ": " + what + " lies inside the input directory " + common::printable(in) +
                              " (choose another place: inputs are never written)");
  }
}
}  // namespace

void check_output_paths(const Options& opt) {
  if (!opt.output.empty()) check_one(opt.output, "output", opt);  // none for `report`
  if (!opt.summary.empty()) check_one(opt.summary, "summary", opt);
  std::error_code ec;
  if (!opt.summary.empty() && !opt.output.empty() &&
      fs::weakly_canonical(fs::absolute(opt.summary), ec) == fs::weakly_canonical(fs::absolute(opt.output), ec))
    throw common::UsageError(common::printable(opt.summary) + ": summary and HDF5 output are the same file");
}

void check_outputs_not_inputs(const Options& opt, const std::vector<std::string>& inputs) {
  // By file identity, not by path: a run folder of symlinks to the exports (repro N5), a hard link
  // or any other second name reaches the same file.
  std::map<std::pair<dev_t, ino_t>, const std::string*> read;
  for (const auto& in : inputs)
    if (struct stat st {}; ::stat(in.c_str(), &st) == 0) read.emplace(std::make_pair(st.st_dev, st.st_ino), &in);
  for (const auto& [path, what] : {std::pair(&opt.output, "output"), std::pair(&opt.summary, "summary")}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) continue;
    if (auto it = read.find({st.st_dev, st.st_ino}); it != read.end())
      throw common::UsageError(common::printable(*path) + ": " + what + " would overwrite an input (" +
                               common::printable(*it->second) + " is the same file)");
  }
}

void check_layout(const Options& opt, int world, const std::vector<FailureRow>& failures) {
  if (!opt.layout) return;
  const int want = opt.layout->world();
  const std::string layout = "--layout " + opt.layout->to_string() + " covers " + std::to_string(want) + " ranks";
  if (world > want)
    throw common::UsageError(layout + ", but rank " + std::to_string(world - 1) +
                            " was found: give the job's full layout, or leave --layout out");
  // A larger layout is legitimate: engineers often profile only some ranks of a job. The report's
  // rank-gap line names the ranks that are missing.
  (void)failures;
}

Options scan_options_for(const std::string& input, const Options& from, const std::vector<std::string>& keep) {
  Options o;
  o.inputs = {input};
  o.output.clear(), o.quiet = true, o.inner = true, o.timeout_s = from.timeout_s;
  o.command_line = from.command_line;
  for (const auto& a : analysis_registry())
    for (const auto& opt : a.options) o.analysis_options[opt.name] = opt.default_value;
  for (const auto& k : keep) o.analysis_options[k] = from.analysis_option(k);
  return o;
}

}  // namespace straggler
