// Scaling cliffs (docs/scaling-cliffs.md). Unit cases on the judge (collectives/scaling.hpp): the seed
// case, boundaries, latency-bound small messages, fits that do not fit. End to end on generated
// pure data-parallel runs at 64-512 ranks on hosts of 8 GPUs (generator fabric seeded: its link
// bandwidths and latencies vary; --conventions random on some runs): each run scanned to HDF5,
// then `straggler-scan scaling` over the saved scans; bus bandwidth against the planted value.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "collectives/scaling.hpp"
#include "shell.hpp"

namespace fs = std::filesystem;
using collectives::ScalingGroup;
using collectives::ScalingOptions;
using collectives::ScalingPoint;
using collectives::ScalingRow;

namespace {

std::string host(int h) { return "node-" + std::string(h < 10 ? "0" : "") + std::to_string(h); }

// A pure DP all-reduce group of n ranks on hosts of 8 GPUs.
ScalingPoint dp(int n, double ms, int64_t bytes = 256 << 20) {
  ScalingPoint p;
  ScalingGroup& g = p.group;
  g.collective = "AllReduce", g.family = "dp", g.bytes = bytes, g.group_size = n, g.nodes = std::max(1, n / 8);
  g.communicators = 1, g.ops = 10, g.time_ms = ms;
  for (int h = 0; h < g.nodes; ++h) g.hosts.push_back(host(h));
  p.run = "n" + std::to_string(n);
  return p;
}

topology::HostTopology pods_of(int nodes_per_pod, int hosts = 128) {
  topology::HostTopology t;
  for (int h = 0; h < hosts; ++h) t[host(h)] = {"r" + std::to_string(h / 4), "p" + std::to_string(h / nodes_per_pod)};
  return t;
}

std::vector<ScalingRow> judge(const std::vector<ScalingPoint>& pts, const ScalingOptions& o = {}) {
  return collectives::scaling_rows(pts, o);
}

}  // namespace

TEST(ScalingJudge, SeedCaseOneCliffAtTheLargestScaleWithItsCause) {
  const std::vector<ScalingPoint> pts = {dp(64, 45), dp(128, 52), dp(256, 61), dp(512, 340)};
  ScalingOptions o;
  o.places = pods_of(32);  // pods of 32 nodes = 256 GPUs
  const auto rows = judge(pts, o);
  ASSERT_EQ(rows.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(rows[size_t(i)].cliff) << rows[size_t(i)].group_size << " " << rows[size_t(i)].ratio;
  EXPECT_TRUE(rows[3].cliff);
  EXPECT_EQ(rows[3].cause, "pod_boundary");
  EXPECT_EQ(rows[3].pods, 2);
  EXPECT_EQ(rows[3].boundary, "2 pods (the smaller scales: one)");
  EXPECT_GT(rows[3].ratio, 3.0);
  // The extrapolation from 64-256 (time grows ~linearly with the ring's steps): ~80 ms.
  EXPECT_NEAR(rows[3].expected_ms, 80, 8);
  EXPECT_EQ(rows[3].bound, "bandwidth");
  // Without a topology the boundary cannot be named; a flat fabric file makes it a link.
  EXPECT_EQ(judge(pts)[3].cause, "unknown");
  topology::Fabric flat;
  o = {}, o.fabric = &flat;
  const auto f = judge(pts, o);
  EXPECT_TRUE(f[3].cliff);
  EXPECT_EQ(f[3].cause, "slow_link");
  ASSERT_EQ(f[3].hosts.size(), 32u);  // the suspects: the hosts the well-behaved scales did not use
  EXPECT_EQ(f[3].hosts.front(), host(32));
}

TEST(ScalingJudge, FlatScalingHasNoCliff) {
  const auto rows = judge({dp(64, 10.8), dp(128, 11.0), dp(256, 11.4), dp(512, 12.1)});
  for (const auto& r : rows) EXPECT_FALSE(r.cliff) << r.group_size;
}

TEST(ScalingJudge, SmallMessagesOnALongRingAreLatencyBoundNotACliff) {
  // 64 KiB: ~1 us per ring step, a few us of bandwidth.
  std::vector<ScalingPoint> pts;
  for (int n : {64, 128, 256, 512}) pts.push_back(dp(n, 0.006 + 0.0011 * 2 * (n - 1), 64 << 10));
  for (const auto& r : judge(pts)) {
    EXPECT_FALSE(r.cliff) << r.group_size;
    EXPECT_EQ(r.bound, "latency") << r.group_size;
  }
}

TEST(ScalingJudge, CrossingIntoANodeIsABoundaryAndStartsANewRegime) {
  std::vector<ScalingPoint> pts = {dp(8, 1.0), dp(16, 8.0), dp(32, 8.3), dp(64, 8.6)};
  const auto rows = judge(pts);
  EXPECT_FALSE(rows[0].cliff);
  EXPECT_TRUE(rows[1].cliff);
  EXPECT_EQ(rows[1].cause, "node_boundary");
  EXPECT_FALSE(rows[2].cliff) << rows[2].ratio;  // compared with 16, the new regime
  EXPECT_FALSE(rows[3].cliff) << rows[3].ratio;
}

TEST(ScalingJudge, SmallerScalesThatDoNotFitGiveNoVerdict) {
  const auto rows = judge({dp(64, 10), dp(128, 30), dp(256, 11), dp(512, 60)});
  EXPECT_FALSE(rows[3].cliff);
  EXPECT_NE(rows[3].note.find("do not fit"), std::string::npos) << rows[3].note;
}

TEST(ScalingJudge, ASlowLinkTheRunFoundItselfIsNamed) {
  auto big = dp(512, 80);
  big.group.slow_hosts = {host(40), host(41)};
  ScalingOptions o;
  o.places = pods_of(32);
  const auto rows = judge({dp(64, 10.8), dp(128, 11.0), dp(256, 11.4), big}, o);
  EXPECT_TRUE(rows[3].cliff);
  EXPECT_EQ(rows[3].cause, "slow_link");  // before the pod boundary it also crossed
  EXPECT_EQ(rows[3].hosts, (std::vector<std::string>{host(40), host(41)}));
}

TEST(ScalingJudge, TheFabricModelGivesTheExpectationAndTheBound) {
  topology::Fabric f;  // defaults: inter 45 GB/s busbw
  f.nodes_per_pod = 32;
  ScalingOptions o;
  o.fabric = &f;
  // Times of the model itself (calibration 1): no cliff until the pod boundary.
  std::vector<ScalingPoint> pts;
  for (int n : {64, 128, 256, 512}) {
    const double bus = double(256 << 20) * 2 * (n - 1) / n;
    const auto c = topology::collective_cost(f, "AllReduce", topology::CostAlgo::Ring, bus, n, n / 8, n > 256 ? 2 : 1);
    pts.push_back(dp(n, c.time_us / 1e3));
  }
  const auto rows = judge(pts, o);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(rows[size_t(i)].cliff);
  EXPECT_TRUE(rows[3].cliff);
  EXPECT_EQ(rows[3].cause, "pod_boundary");
  EXPECT_EQ(rows[2].bound, "bandwidth");
  EXPECT_NEAR(rows[2].expected_gbps, 45, 2);
}

TEST(ScalingJudge, TopologyFileErrorsNameFileAndLine) {
  EXPECT_THROW(topology::parse_topology("node-00 r0\n", "t.txt"), std::invalid_argument);
  try {
    topology::parse_topology("# hosts\nnode-00 r0 p0\nnode-00 r1 p0\n", "t.txt");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("t.txt:3"), std::string::npos) << e.what();
  }
  const auto t = topology::parse_topology("node-00 r0 p0  # first\n\nnode-01 r0 p1\n", "t.txt");
  EXPECT_EQ(t.at("node-01").pod, "p1");
}

// ---- End to end on generated runs ------------------------------------------------------------

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;

struct Family {
  fs::path dir;
  std::map<int, fs::path> h5;  // by ranks
};

fs::path work_dir() {
  static const fs::path d = fs::temp_directory_path() / ("ss-scaling-" + std::to_string(::getpid()));
  return d;
}

// Generates one pure-DP run of n ranks (hosts of 8) and scans it to HDF5; returns the .h5.
fs::path make_run(const std::string& name, int n, const std::string& args) {
  const fs::path run = work_dir() / name, h5 = work_dir() / (name + ".h5");
  if (fs::exists(h5)) return h5;
  int st = 0;
  auto out = testsh::sh(kSim + " " + run.string() + " --layout 1x1x" + std::to_string(n) + " --hosts " + std::to_string(n / 8) +
                            " --iterations 3 --layers 1 --microbatches 1 " + args, &st);
  if (st != 0) ADD_FAILURE() << "straggler-sim " << name << " exit " << st << "\n" << out;
  out = testsh::sh(kScan + " " + run.string() + " -o " + h5.string() + " --quiet", &st);
  if (st != 0) ADD_FAILURE() << "straggler-scan " << name << " exit " << st << "\n" << out;
  return h5;
}

void write_topology(const fs::path& p, int nodes_per_pod) {
  std::ofstream f(p);
  for (int h = 0; h < 64; ++h) f << host(h) << " rack" << h / 4 << " pod" << h / nodes_per_pod << "\n";
}

struct Scaled {
  simdjson::dom::parser parser;
  simdjson::dom::element rows;
  std::string report;
};

// `straggler-scan scaling` over `h5s` with `args`.
void scaling(Scaled& s, const std::vector<fs::path>& h5s, const std::string& args, const std::string& tag) {
  std::string cmd = kScan + " scaling";
  for (const auto& h : h5s) cmd += " " + h.string();
  const fs::path out = work_dir() / ("s-" + tag + ".json");
  int st = 0;
  s.report = testsh::sh(cmd + " -o " + (work_dir() / ("s-" + tag + ".h5")).string() + " --summary " + out.string() + " " + args, &st);
  ASSERT_EQ(st, 0) << s.report;
  simdjson::dom::element doc;
  ASSERT_EQ(s.parser.load(out.string()).get(doc), simdjson::SUCCESS);
  s.rows = doc["scaling"];
}

// The world-size all-reduce rows: group size -> (cliff, cause).
std::map<int64_t, simdjson::dom::element> world_rows(const Scaled& s) {
  std::map<int64_t, simdjson::dom::element> m;
  for (auto r : simdjson::dom::array(s.rows)) m[int64_t(r["group_size"])] = r;
  return m;
}

class ScalingRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { fs::create_directories(work_dir()); }
  static void TearDownTestSuite() { fs::remove_all(work_dir()); }
};

const std::string kDp = " --dp-bytes 268435456 --nodes-per-pod 32 ";

// Pods of 32 nodes: the cliff is at 512 only, the pod boundary named; with sizes from the NVTX
// payloads and without them, two fabric seeds.
TEST_F(ScalingRuns, PodBoundaryIsTheOneCliffWithAndWithoutSizes) {
  for (const auto& [tag, extra] : {std::pair{"pay", std::string(" --payloads --fabric-seed 11")},
                                   std::pair{"nopay", std::string(" --fabric-seed 12 --conventions random")}}) {
    std::vector<fs::path> h5;
    for (int n : {64, 128, 256, 512}) h5.push_back(make_run(std::string("pod-") + tag + std::to_string(n), n, kDp + extra));
    write_topology(work_dir() / "topo32.txt", 32);
    Scaled s;
    scaling(s, h5, "--topology " + (work_dir() / "topo32.txt").string(), tag);
    auto rows = world_rows(s);
    ASSERT_EQ(rows.size(), 4u) << s.report;
    for (int n : {64, 128, 256}) EXPECT_FALSE(bool(rows[n]["cliff"])) << tag << " " << n << "\n" << s.report;
    EXPECT_TRUE(bool(rows[512]["cliff"])) << tag << "\n" << s.report;
    EXPECT_EQ(std::string_view(rows[512]["cause"]), "pod_boundary") << s.report;
    EXPECT_EQ(int64_t(rows[512]["pods"]), 2);
    EXPECT_EQ(rows[512]["bytes"].is_null(), std::string(tag) == "nopay") << s.report;
    EXPECT_EQ(rows[512]["busbw_gbps"].is_null(), std::string(tag) == "nopay");
    EXPECT_NE(s.report.find("CLIFF: pod_boundary"), std::string::npos) << s.report;
  }
}

// Measured bus bandwidth within 2% of the planted value (sizes from the payloads).
TEST_F(ScalingRuns, BusBandwidthWithinTwoPercentOfThePlanted) {
  for (int n : {64, 512}) {
    const fs::path h5 = make_run("pod-pay" + std::to_string(n), n, kDp + " --payloads --fabric-seed 11");
    Scaled s;
    scaling(s, {h5}, "", "bw" + std::to_string(n));
    simdjson::dom::parser p;
    simdjson::dom::element truth;
    ASSERT_EQ(p.load((work_dir() / ("pod-pay" + std::to_string(n)) / "truth.json").string()).get(truth), simdjson::SUCCESS);
    const double want = double(truth["expected"]["scaling"]["collectives"].at(0)["busbw_gbps"]);
    const double got = double(world_rows(s)[n]["busbw_gbps"]);
    EXPECT_NEAR(got / want, 1.0, 0.02) << n << ": " << got << " vs planted " << want;
  }
}

// The same scales on one pod: no cliff.
TEST_F(ScalingRuns, FlatFabricHasNoCliff) {
  std::vector<fs::path> h5;
  for (int n : {64, 128, 256, 512}) h5.push_back(make_run("flat" + std::to_string(n), n, " --dp-bytes 268435456 --fabric-seed 21"));
  Scaled s;
  write_topology(work_dir() / "topo64.txt", 64);
  scaling(s, h5, "--topology " + (work_dir() / "topo64.txt").string(), "flat");
  for (auto& [n, r] : world_rows(s)) EXPECT_FALSE(bool(r["cliff"])) << n << "\n" << s.report;
}

// 64 KiB all-reduces: latency-bound, and no bandwidth cliff.
TEST_F(ScalingRuns, SmallMessagesAreLatencyBound) {
  std::vector<fs::path> h5;
  for (int n : {64, 128, 256, 512}) h5.push_back(make_run("small" + std::to_string(n), n, " --dp-bytes 65536 --fabric-seed 31 --payloads"));
  Scaled s;
  write_topology(work_dir() / "topo64.txt", 64);
  scaling(s, h5, "--topology " + (work_dir() / "topo64.txt").string(), "small");
  auto rows = world_rows(s);
  for (auto& [n, r] : rows) {
    const std::string cause = r["cause"].is_null() ? "" : std::string(std::string_view(r["cause"]));
    EXPECT_TRUE(cause.empty() || cause == "latency_bound") << n << " " << cause << "\n" << s.report;
  }
  EXPECT_EQ(std::string_view(rows[512]["bound"]), "latency") << s.report;
  EXPECT_EQ(std::string_view(rows[256]["bound"]), "latency") << s.report;
}

// One slow link between hosts 40 and 41 in the 512-rank run on one pod: a link, not the scale.
TEST_F(ScalingRuns, SlowLinkIsAttributedToTheLinkNotTheScale) {
  std::vector<fs::path> h5;
  for (int n : {64, 128, 256}) h5.push_back(make_run("flat" + std::to_string(n), n, " --dp-bytes 268435456 --fabric-seed 21"));
  h5.push_back(make_run("slow512", 512, " --dp-bytes 268435456 --fabric-seed 21 --fault slow_link:40:41:5"));
  Scaled s;
  write_topology(work_dir() / "topo64.txt", 64);
  scaling(s, h5, "--topology " + (work_dir() / "topo64.txt").string(), "slow");
  auto rows = world_rows(s);
  for (int n : {64, 128, 256}) EXPECT_FALSE(bool(rows[n]["cliff"])) << n;
  ASSERT_TRUE(bool(rows[512]["cliff"])) << s.report;
  EXPECT_EQ(std::string_view(rows[512]["cause"]), "slow_link") << s.report;
  std::vector<std::string> hosts;
  for (auto h : simdjson::dom::array(rows[512]["hosts"])) hosts.emplace_back(std::string_view(h));
  EXPECT_NE(std::find(hosts.begin(), hosts.end(), "node-40"), hosts.end()) << s.report;
  EXPECT_NE(std::find(hosts.begin(), hosts.end(), "node-41"), hosts.end()) << s.report;
  EXPECT_EQ(std::find(hosts.begin(), hosts.end(), "node-00"), hosts.end()) << s.report;  // not a host of the smaller runs
}

// A run directory is scanned in place (no saved scan needed), and a bad input is one line.
TEST_F(ScalingRuns, RunDirectoriesAndBadInputs) {
  make_run("flat64", 64, " --dp-bytes 268435456 --fabric-seed 21");
  Scaled s;
  scaling(s, {work_dir() / "flat64", work_dir() / "flat64.h5"}, "", "dirs");
  EXPECT_EQ(simdjson::dom::array(s.rows).size(), 2u) << s.report;
  int st = 0;
  const fs::path bogus = work_dir() / "bogus.h5";
  std::ofstream(bogus) << "\x89HDF\r\n\x1a\n not really";
  auto out = testsh::sh(kScan + " scaling " + bogus.string() + " -o " + (work_dir() / "x.h5").string(), &st);
  EXPECT_EQ(st, 2) << out;
  EXPECT_NE(out.find("bogus.h5"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  out = testsh::sh(kScan + " scaling " + (work_dir() / "flat64.h5").string() + " --topology /nonexistent -o " +
                       (work_dir() / "x.h5").string(), &st);
  EXPECT_EQ(st, 2) << out;
  EXPECT_NE(out.find("/nonexistent: cannot read"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(work_dir() / "x.h5"));
  out = testsh::sh(kScan + " " + (work_dir() / "flat64").string() + " --fabric /nonexistent -o " + (work_dir() / "x.h5").string(), &st);
  EXPECT_EQ(st, 2) << out;
  EXPECT_NE(out.find("/nonexistent: cannot read"), std::string::npos) << out;
  // A scan saved before these analyses existed (the same format version, fewer groups): `report`
  // reads it as it was; `scaling` says in one line that it lacks the groups.
  const fs::path old = work_dir() / "old.h5";
  fs::copy_file(work_dir() / "flat64.h5", old, fs::copy_options::overwrite_existing);
  out = testsh::sh("/usr/bin/python3 -c \"import h5py, sys; f = h5py.File(sys.argv[1], 'a'); "
                   "[f.__delitem__(g) for g in ('scaling', 'mfu', 'walls', 'pipeline') if g in f]\" " + old.string(), &st);
  if (st != 0) GTEST_SKIP() << "h5py unavailable: " << out;
  out = testsh::sh(kScan + " report " + old.string(), &st);
  EXPECT_EQ(st, 0) << out;
  out = testsh::sh(kScan + " scaling " + old.string() + " -o " + (work_dir() / "x.h5").string(), &st);
  EXPECT_EQ(st, 2) << out;
  EXPECT_NE(out.find("old.h5: cannot read the scan back: no /scaling/groups table"), std::string::npos) << out;
}

// One scan with --fabric: its groups against the fabric's own figure (uncalibrated), with the
// bound; the same summary again from the saved scan (`report`).
TEST_F(ScalingRuns, OneScanAgainstTheFabric) {
  make_run("pod-pay64", 64, kDp + " --payloads --fabric-seed 11");
  const fs::path fab = work_dir() / "fabric.txt", h5 = work_dir() / "fab64.h5";
  std::ofstream(fab) << "# 8 GPUs per node\ninter_busbw_gbps = 45\n";
  int st = 0;
  const std::string js = (work_dir() / "fab64.json").string(), again = (work_dir() / "fab64-again.json").string();
  auto out = testsh::sh(kScan + " " + (work_dir() / "pod-pay64").string() + " --fabric " + fab.string() + " -o " + h5.string() +
                            " --summary " + js, &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(out.find("collectives by size and span"), std::string::npos) << out;
  out = testsh::sh(kScan + " report " + h5.string() + " --summary " + again, &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_EQ(testsh::slurp(js), testsh::slurp(again));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.load(js).get(doc), simdjson::SUCCESS);
  auto rows = simdjson::dom::array(doc["scaling"]);
  ASSERT_EQ(rows.size(), 1u);
  const auto r = rows.at(0);
  EXPECT_EQ(int64_t(r["group_size"]), 64);
  EXPECT_EQ(int64_t(r["nodes"]), 8);
  EXPECT_FALSE(r["expected_ms"].is_null());
  EXPECT_EQ(std::string_view(r["bound"]), "bandwidth");
  EXPECT_FALSE(r["busbw_gbps"].is_null());  // sizes from the payloads
  EXPECT_NEAR(double(r["expected_gbps"]), 45, 3);  // the fabric's inter-node class, latency aside
}

}  // namespace
