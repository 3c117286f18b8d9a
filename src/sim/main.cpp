// straggler-sim: writes synthetic multi-rank nsys SQLite exports (or Kineto traces, --format kineto) plus truth.json (see SPEC.md).
#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <sqlite3.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "conventions.hpp"
#include "sim.hpp"

namespace po = boost::program_options;

// --shuffle-rows: every table of every written file in a seeded random row order, the rest as
// written (benchmarks of readers on unordered exports; nsys promises no row order).
static void shuffle_files(const std::string& dir, uint64_t seed) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".sqlite") continue;
    sqlite3* db = nullptr;
    if (sqlite3_open(e.path().c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot open " + e.path().string());
    try {
      sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
      sim::shuffle_rows(db, seed);
      sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    } catch (...) {
      sqlite3_close(db);
      throw;
    }
    sqlite3_close(db);
  }
}

namespace {

// Option values that are not sim::Options fields as given.
struct Cli {
  std::string layout = "2x2x8", schema = "3.25", conventions = "fixed", format = "nsys";
  uint64_t conventions_seed = 0;
  std::vector<std::string> faults;
};

po::options_description describe(sim::Options& o, Cli& cli) {
  auto& layout = cli.layout;
  auto& schema = cli.schema;
  auto& conventions = cli.conventions;
  auto& conventions_seed = cli.conventions_seed;
  auto& faults = cli.faults;
  po::options_description desc(
      "Usage: straggler-sim OUT_DIR [options]\n"
      "Faults: slow_gpu:RANK:FROM_ITER:FACTOR  host_delay:RANK:FROM_ITER:MS  extra_work:RANK:FROM_ITER:FACTOR\n"
      "        slow_link:HOST_A:HOST_B:FACTOR  stage_imbalance:STAGE:FACTOR  slow_p2p:FACTOR  hang:RANK:ITER  crash:RANK:ITER\n"
      "        slow_kernel:KIND:FACTOR (KIND: ln_fwd gemm_fwd flash_fwd elementwise softmax optimizer ln_bwd gemm_dgrad gemm_wgrad flash_bwd)\n"
      "Root-cause patterns (RANK a rank or `all`; truth.json lists them under \"findings\"):\n"
      "        gc_pause:RANK:EVERY:MS  sync:RANK:MS  nccl_compute:RANK  h2d:RANK:MIB  small_kernels:RANK:COUNT\n"
      "        compile:RANK:MS  hotspot:RANK:SHARE  slow_host:RANK:US   (see src/sim/SPEC.md)\n"
      "--conventions random varies what nsys does not promise (stream/device ids, pids, row order, markers,\n"
      "graph launches, capture start) and, unless given, --hosts (4 or 8 GPUs each), --schema, the file\n"
      "layout, the NCCL domain rows, p2p streams and DP overlap; truth.json records each choice under \"conventions\".\n"
      "With --format kineto it also varies what Kineto does not promise (time base, NCCL metadata, file names, event order...).\nOptions");
  desc.add_options()
      ("help,h", "show this help")
      ("layout", po::value(&layout)->default_value(layout), "TPxPPxDP")
      ("hosts", po::value(&o.hosts)->default_value(o.hosts), "number of hosts")
      ("iterations", po::value(&o.iterations)->default_value(o.iterations), "training iterations (0 = warm-up)")
      ("microbatches", po::value(&o.microbatches)->default_value(o.microbatches), "microbatches per iteration")
      ("layers", po::value(&o.layers)->default_value(o.layers), "transformer layers per pipeline stage")
      ("schedule", po::value(&o.schedule)->default_value(o.schedule), "pipeline schedule: 1f1b, gpipe or interleaved")
      ("virtual-stages", po::value(&o.virtual_stages)->default_value(o.virtual_stages),
       "model chunks per stage (--schedule interleaved)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "random seed")
      ("jitter", po::value(&o.jitter)->default_value(o.jitter), "per-kernel duration noise (sd, relative)")
      ("noise", po::value<std::string>(), "PROB:MS[:WOBBLE[:SPREAD]] realistic noise: host hiccups of median MS ms with probability "
                                          "PROB per rank and iteration, GPU speed wobble sd WOBBLE per iteration, persistent GPU speed within +-SPREAD")
      ("clock-offset-ms", po::value(&o.clock_offset_ms)->default_value(0.0), "max abs per-host NTP error (host 0 exact)")
      ("clock-drift-ppm", po::value(&o.clock_drift_ppm)->default_value(0.0),
       "max abs per-host clock rate error over the capture (host 0 exact)")
      ("format", po::value(&cli.format)->default_value(cli.format),
       "nsys (SQLite exports) or kineto (PyTorch profiler Chrome-trace JSON, one file per rank; same run and truth)")
      ("schema", po::value(&schema)->default_value(schema), "3.25 or 3.0 (kineto: NCCL <= 2.18 kernel names with 3.0)")
      ("per-host-files", "one file per host with all its rank processes")
      ("per-rank-files", "one file per rank (the default; pins it under --conventions random)")
      ("no-nccl-domain-create", "omit the NVTX 'NCCL' domain-create rows")
      ("nccl-domain-create", "write them (the default; pins it under --conventions random)")
      ("p2p-streams", po::value<std::string>(), "link (a stream per pipeline link, default) or group (one stream per rank for "
                                               "both neighbours, as batched p2p); pins it under --conventions random")
      ("payloads", "NCCL's NVTX payloads (communicator id, message size, peer) in NVTX_EVENTS.binaryData (schema 3.25)")
      ("dp-overlap", "DP gradient all-reduces overlap the last microbatch's backward (pins it under --conventions random)")
      ("no-dp-overlap", "DP all-reduces after the last backward (the default; pins it under --conventions random)")
      ("dp-bytes", po::value(&o.dp_bytes)->default_value(o.dp_bytes), "bytes of each data-parallel gradient all-reduce")
      ("fabric-seed", po::value<uint64_t>(), "scaling fabric: ring cost over intra-node, inter-node and cross-pod links, "
                                             "parameters drawn from this seed (SPEC.md, Fabric)")
      ("nodes-per-pod", po::value(&o.nodes_per_pod)->default_value(0), "scaling fabric: hosts per pod (0: one pod)")
      ("gpu-name", po::value(&o.gpu_name), "GPU name in TARGET_INFO_GPU (schema 3.0), e.g. \"NVIDIA H100 80GB HBM3\"")
      ("model-flops-per-step", po::value(&o.model_flops_per_step)->default_value(0.0),
       "the model's FLOPs per step, for truth.json mfu (per-iteration job step times)")
      ("conventions", po::value(&conventions)->default_value(conventions), "fixed or random")
      ("conventions-seed", po::value(&conventions_seed), "seed of the random conventions (default: --seed)")
      ("fault", po::value(&faults)->composing(), "fault spec (repeatable)")
      ("target-kernels", po::value(&o.target_kernels)->default_value(0), "choose iterations for ~K kernels per rank")
      ("threads", po::value(&o.threads)->default_value(0), "writer threads (0 = all cores)")
      ("shuffle-rows", "then rewrite every table in a random row order (seeded by --seed)");
  return desc;
}

// The parsed options into o (throws std::invalid_argument on bad combinations).
void apply(const po::variables_map& vm, const Cli& cli, sim::Options& o) {
  if (vm.count("per-host-files") && vm.count("per-rank-files"))
    throw std::invalid_argument("--per-host-files and --per-rank-files exclude each other");
  if (vm.count("no-nccl-domain-create") && vm.count("nccl-domain-create"))
    throw std::invalid_argument("--no-nccl-domain-create and --nccl-domain-create exclude each other");
  if (vm.count("dp-overlap") && vm.count("no-dp-overlap"))
    throw std::invalid_argument("--dp-overlap and --no-dp-overlap exclude each other");
  o.per_host_files = vm.count("per-host-files") > 0;
  o.payloads = vm.count("payloads") > 0;
  o.dp_overlap = vm.count("dp-overlap") > 0;
  o.pinned.dp_overlap = vm.count("dp-overlap") || vm.count("no-dp-overlap");
  o.nccl_domain_create = !vm.count("no-nccl-domain-create");
  if (vm.count("fabric-seed")) o.fabric_seed = vm["fabric-seed"].as<uint64_t>();
  if (cli.format != "nsys" && cli.format != "kineto") throw std::invalid_argument("--format must be nsys or kineto");
  o.kineto = cli.format == "kineto";
  if (cli.conventions != "fixed" && cli.conventions != "random") throw std::invalid_argument("--conventions must be fixed or random");
  o.random_conventions = cli.conventions == "random";
  if (vm.count("conventions-seed")) o.conventions_seed = cli.conventions_seed;
  o.pinned.hosts = !vm["hosts"].defaulted();
  o.pinned.schema = !vm["schema"].defaulted();
  o.pinned.files = vm.count("per-host-files") || vm.count("per-rank-files");
  o.pinned.domain_create = vm.count("no-nccl-domain-create") || vm.count("nccl-domain-create");
  if (vm.count("p2p-streams")) {
    const auto v = vm["p2p-streams"].as<std::string>();
    if (v != "link" && v != "group") throw std::invalid_argument("--p2p-streams must be link or group");
    o.p2p_one_stream = v == "group", o.pinned.p2p_streams = true;
  }
  if (vm.count("noise")) {
    const auto v = vm["noise"].as<std::string>();
    double p = 0, ms = 0, w = 0, spread = 0;
    const int n = std::sscanf(v.c_str(), "%lf:%lf:%lf:%lf", &p, &ms, &w, &spread);
    if (n < 2 || p < 0 || p > 1 || ms < 0 || ms > 1000 || w < 0 || w > 0.2 || spread < 0 || spread > 0.2)
      throw std::invalid_argument(
          "--noise must be PROB:MS[:WOBBLE[:SPREAD]] with 0 <= PROB <= 1, 0 <= MS <= 1000, WOBBLE and SPREAD in [0, 0.2]");
    o.hiccup_prob = p, o.hiccup_ms = ms, o.iteration_wobble = w, o.gpu_spread = spread;
  }
  o.layout = topology::ParallelLayout::parse(cli.layout);
  if (cli.schema == "3.0" || cli.schema == "3.0.0") o.schema30 = true;
  else if (cli.schema != "3.25" && cli.schema != "3.25.0") throw std::invalid_argument("--schema must be 3.25 or 3.0");
  for (const auto& f : cli.faults) o.faults.push_back(sim::parse_fault(f));
}

}  // namespace

int main(int argc, char** argv) {
  sim::Options o;
  Cli cli;
  const po::options_description desc = describe(o, cli);
  po::options_description hidden;
  hidden.add_options()("out", po::value(&o.out_dir), "output folder");
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("out", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || o.out_dir.empty()) {
      std::cout << desc << "\n";
      return vm.count("help") ? 0 : 2;
    }
    apply(vm, cli, o);
    const sim::RunStats s = sim::generate(o);
    if (vm.count("shuffle-rows")) shuffle_files(o.out_dir, o.seed);
    fmt::print(stderr, "straggler-sim: {} files, {} ranks x {} iterations, {} kernels, {} {}; simulate {:.2f} s, write {:.2f} s\n",
               s.files, o.layout.world(), s.iterations, s.kernels, s.rows, o.kineto ? "events" : "rows", s.simulate_s, s.write_s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "straggler-sim: {}\n", e.what());
    return 2;
  }
  return 0;
}
