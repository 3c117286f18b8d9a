// Issue 17, input side: the cases of ../shared/data/repro2 about what profiles and their names
// hold (N1 sentinel device id, N3 rank numbers that are process ids, N6 a stray process in a
// per-host file, N7 hot journals and WAL files, N10 control bytes in HDF5 strings, N11 a user
// regex on long names, N12 a huge node number), each as its README expects, plus made neighbours
// of each class from generated runs. Cases whose folder is absent skip with a message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "h5_read.hpp"
#include "shell.hpp"
#include "sqlite_edit.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN, kShared = SS_SHARED_DIR;

fs::path temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("ss-repro2-in-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

std::string repro(const std::string& name) {
  const fs::path p = fs::path(kShared) / "data/repro2" / name;
  return fs::exists(p / "README.md") ? p.string() : "";
}
#define REQUIRE_REPRO2(var, name)                                                                  \
  const std::string var = repro(name);                                                             \
  if (var.empty()) GTEST_SKIP() << "no " << kShared << "/data/repro2/" << name << " (set SS_SHARED_DIR)"

fs::path generate(const std::string& name, const std::string& args) {
  const fs::path dir = temp(name);
  int st = 0;
  const auto out = testsh::sh(kSim + " " + dir.string() + " " + args + " --seed 3", &st);
  EXPECT_EQ(st, 0) << out;
  return dir;
}

struct Scan {
  testsh::Result r;
  std::string h5, summary;  // kept until the test's end
};

// straggler-scan on `inputs` (a folder and options), outputs in a folder of their own.
Scan scan(const std::string& inputs, const std::string& tag, const std::string& prefix = "") {
  const fs::path out = temp("out-" + tag);
  fs::create_directories(out);
  Scan s{{}, (out / "s.h5").string(), (out / "s.json").string()};
  s.r = testsh::sh(prefix + kScan + " " + inputs + " -o " + s.h5 + " --summary " + s.summary);
  EXPECT_EQ(s.r.out.find("internal error"), std::string::npos) << s.r.out;
  EXPECT_NE(s.r.status, -1) << "killed by a signal:\n" << s.r.out;
  return s;
}

std::string slurp(const fs::path& path) { return testsh::slurp(path.string()); }

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

// ----------------------------------------------------------------- N1: an input equal to a sentinel

TEST(ReproN1, DeviceIdInt64MinOnTheFirstKernel) {
  REQUIRE_REPRO2(dir, "N_device_int64min");
  for (const char* prefix : {"", "mpirun -n 2 "}) {
    auto s = scan(dir, "n1", prefix);
    EXPECT_EQ(s.r.status, 0) << s.r.out;
    EXPECT_TRUE(has(s.r.out, "2 ranks from 2 files")) << s.r.out;
  }
}

// The class: every extreme value in the device, stream, pid and correlation columns, on the first
// row or all rows, never crashes and never loses the other rank.
TEST(ReproN1, ExtremeIdsInIntegerColumns) {
  const fs::path base = generate("n1-made", "--layout 1x1x2 --hosts 1 --iterations 3");
  int n = 0;
  for (const char* col : {"deviceId", "streamId", "globalPid", "correlationId"})
    for (const char* v : {"-9223372036854775808", "9223372036854775807", "-1", "4294967296"})
      for (const char* where : {"rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)", "1"}) {
        const fs::path d = temp("n1-case");
        fs::copy(base, d, fs::copy_options::recursive);
        testsql::sql(d / "rank_0.sqlite", std::string("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET ") + col + " = " + v +
                                              " WHERE " + where);
        auto s = scan(d.string(), "n1-case");
        EXPECT_TRUE(s.r.status == 0 || s.r.status == 2) << col << "=" << v << "\n" << s.r.out;
        EXPECT_FALSE(has(s.r.out, "rank_1.sqlite:")) << col << "=" << v << "\n" << s.r.out;  // the healthy rank
        fs::remove_all(d);
        ++n;
      }
  EXPECT_EQ(n, 32);
  fs::remove_all(base);
}

// ------------------------------------------------- N3: rank numbers from process ids in file names

TEST(ReproN3, RankNumbersFarBeyondTheFilesAreRefusedQuickly) {
  REQUIRE_REPRO2(dir, "N_rank_number_memory");
  const auto t0 = std::chrono::steady_clock::now();
  // 1 GiB of address space is far more than two 200 KB files need, far less than 9,999,999 ranks
  // took (not under AddressSanitizer, whose shadow memory needs terabytes of address space).
  auto s = scan(dir, "n3", "bash -c '[ -n \"$ASAN_OPTIONS\" ] || ulimit -v 1048576; exec \"$0\" \"$@\"' ");
  EXPECT_EQ(s.r.status, 2) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "file names give rank numbers up to 9999999 (rank_9999999.sqlite) for 2 ranks found: "
                           "process ids, not ranks")) << s.r.out;
  EXPECT_FALSE(fs::exists(s.h5));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(ReproN3, PidNamedFilesAreNumberedByHostAndPid) {
  const fs::path d = generate("n3-made", "--layout 1x1x2 --hosts 1 --iterations 3");
  fs::rename(d / "rank_0.sqlite", d / "report.2834571.sqlite");
  fs::rename(d / "rank_1.sqlite", d / "report.4190022.sqlite");
  // Names that hold process ids, profiles that name no rank: numbered by host, then process id, and
  // said so (issue 37: `<host>.<pid>` files are what `nsys -o %h.%p` writes).
  auto s = scan(d.string(), "n3-pid");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "the file names hold process ids, not ranks, and the profiles name no rank")) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/rank"), (std::vector<int64_t>{0, 1}));
  // A layout says how large the job is: then the numbers are checked against it.
  s = scan(d.string() + " --layout 1x1x2", "n3-layout");
  EXPECT_EQ(s.r.status, 2) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "--layout 1x1x2 covers 2 ranks, but rank 2834571 was found (report.2834571.sqlite)")) << s.r.out;
  // A rank map names them.
  std::ofstream(d.string() + ".map") << "report.2834571.sqlite,,0\nreport.4190022.sqlite,,1\n";
  s = scan(d.string() + " --rank-map " + d.string() + ".map", "n3-map");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "2 ranks from 2 files")) << s.r.out;
  // Sparse but plausible rank numbers (one rank per node profiled) stay ranks.
  fs::rename(d / "report.2834571.sqlite", d / "rank_0.sqlite");
  fs::rename(d / "report.4190022.sqlite", d / "rank_72.sqlite");
  s = scan(d.string(), "n3-sparse");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/rank"), (std::vector<int64_t>{0, 72}));
  fs::remove_all(d);
  fs::remove(d.string() + ".map");
}

// ------------------------------------------------------ N6 and N12: per-host files and their numbers

TEST(ReproN6, StrayProcessInAPerHostFileRenumbersNoOne) {
  REQUIRE_REPRO2(dir, "N_host_phantom");
  auto s = scan(dir, "n6");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "4 ranks from 2 files")) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "node-00.sqlite: process 0 (device 0, 1 kernels): rows without a process id (globalPid "
                           "NULL or 0); left out")) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/rank"), (std::vector<int64_t>{0, 1, 2, 3}));
  // The same ranks as the untouched run: pids by rank.
  const fs::path clean = generate("n6-clean", "--layout 2x1x2 --hosts 2 --iterations 3 --per-host-files");
  auto c = scan(clean.string(), "n6-clean");
  EXPECT_EQ(h5read::numbers<int64_t>(c.h5, "/ranks/pid"), h5read::numbers<int64_t>(s.h5, "/ranks/pid"));
  fs::remove_all(clean);
}

// The class: a helper process with a real pid that ran CUDA kernels but no NCCL.
TEST(ReproN6, HelperProcessWithoutNcclIsLeftOut) {
  const fs::path d = generate("n6-helper", "--layout 2x1x2 --hosts 2 --iterations 3 --per-host-files");
  const auto before = scan(d.string(), "n6-before");
  // pid 7 on device 1 (between the ranks' devices in sort order when devices are 0 and 1).
  testsql::sql(d / "node-01.sqlite",
               "CREATE TEMP TABLE h AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName NOT IN (SELECT id "
               "FROM StringIds WHERE value LIKE 'nccl%') LIMIT 50; UPDATE h SET globalPid = 7 << 24, deviceId = 0, "
               "streamId = 99, correlationId = 900000 + rowid; INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM h");
  auto s = scan(d.string(), "n6-after");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "node-01.sqlite: process 7 (device 0, 50 kernels): no NCCL kernel, while the file's other "
                           "processes ran some")) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/pid"), h5read::numbers<int64_t>(before.h5, "/ranks/pid"));
  fs::remove_all(d);
}

TEST(ReproN12, HugeNodeNumberNumbersTheHostByOrder) {
  REQUIRE_REPRO2(dir, "N_node_number_overflow");
  auto s = scan(dir, "n12");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "8 ranks from 2 files")) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "warning: node numbers in the per-host file names (0 to 999999999) are no node indices of "
                           "2 files: hosts numbered 0-1")) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/rank"), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(has(s.r.out, "runtime error"));  // UBSan, in the sanitizer build
}

// Hostname-like numbers keep their order; numbers that can be node indices stay indices.
TEST(ReproN12, NodeNumbersAsIndicesOrAsOrder) {
  const fs::path d = generate("n12-made", "--layout 2x1x2 --hosts 2 --iterations 3 --per-host-files");
  fs::rename(d / "node-00.sqlite", d / "gpu-1017.sqlite");
  fs::rename(d / "node-01.sqlite", d / "gpu-1018.sqlite");
  auto s = scan(d.string(), "n12-host");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/rank"), (std::vector<int64_t>{0, 1, 2, 3}));
  fs::rename(d / "gpu-1017.sqlite", d / "node-00.sqlite");
  fs::rename(d / "gpu-1018.sqlite", d / "node-02.sqlite");  // node 1 missing: its ranks stay missing
  s = scan(d.string(), "n12-gap");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_EQ(h5read::numbers<int64_t>(s.h5, "/ranks/rank"), (std::vector<int64_t>{0, 1, 4, 5}));
  fs::remove_all(d);
}

// --------------------------------------------------------------- N7: unfinished writes beside a file

TEST(ReproN7, HotJournalIsRefusedAndNeverTouched) {
  REQUIRE_REPRO2(dir, "N_hot_journal");
  const std::string journal = slurp(dir + "/rank_0.sqlite-journal"), db = slurp(dir + "/rank_0.sqlite");
  auto s = scan(dir, "n7");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "rank_0.sqlite: an unfinished write: its rollback journal rank_0.sqlite-journal is beside "
                           "it")) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "1 rank from 1 file")) << s.r.out;
  EXPECT_EQ(slurp(dir + "/rank_0.sqlite-journal"), journal);
  EXPECT_EQ(slurp(dir + "/rank_0.sqlite"), db);
}

// The class: a WAL holding commits not yet in the file is refused too (whatever the header says);
// a finished journal (zeroed header) or an empty WAL is no unfinished write.
TEST(ReproN7, WalAndFinishedJournals) {
  const fs::path d = generate("n7-made", "--layout 1x1x2 --hosts 1 --iterations 3");
  const fs::path f = d / "rank_0.sqlite";
  std::ofstream(f.string() + "-journal", std::ios::binary) << std::string(512, '\0');  // finished (PERSIST mode)
  auto s = scan(d.string(), "n7-zeroed");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "2 ranks from 2 files")) << s.r.out;
  fs::remove(f.string() + "-journal");
  // A -wal beside a rollback-mode file: SQLite would apply it all the same.
  std::ofstream(f.string() + "-wal", std::ios::binary) << std::string(4096, 'w');
  s = scan(d.string(), "n7-stray-wal");
  EXPECT_TRUE(has(s.r.out, "rank_0.sqlite: commits not yet in the file")) << s.r.out;
  fs::remove(f.string() + "-wal");
  testsql::sql(f, "PRAGMA journal_mode=WAL");  // the header now says WAL (bytes 18-19 = 2)
  std::ofstream(f.string() + "-wal", std::ios::binary) << "";  // empty: nothing pending
  s = scan(d.string(), "n7-empty-wal");
  EXPECT_TRUE(has(s.r.out, "2 ranks from 2 files")) << s.r.out;
  std::ofstream(f.string() + "-wal", std::ios::binary) << std::string(4096, 'w');
  s = scan(d.string(), "n7-wal");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "rank_0.sqlite: commits not yet in the file: its write-ahead log rank_0.sqlite-wal is "
                           "beside it")) << s.r.out;
  EXPECT_TRUE(has(s.r.out, "1 rank from 1 file")) << s.r.out;
  fs::remove_all(d);
}

// ------------------------------------------------------------ N10: control bytes in HDF5 strings

TEST(ReproN10, NoControlByteReachesAnHdf5String) {
  REQUIRE_REPRO2(dir, "N_control_chars_h5");
  auto s = scan(dir, "n10");
  EXPECT_EQ(s.r.status, 0) << s.r.out;
  size_t checked = 0;
  const h5read::File file(s.h5);  // opened once: a few hundred objects
  for (const auto& obj : file.objects()) {
    std::vector<std::string> values;
    try {
      values = file.raw_strings(obj);  // as the writer stored them
    } catch (const std::exception&) {
      continue;  // not a string dataset
    }
    for (const auto& v : values) {
      ++checked;
      for (unsigned char c : v) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << obj << ": " << int(c);
    }
  }
  EXPECT_GT(checked, 30u);
  const auto names = h5read::raw_strings(s.h5, "/kernels/top/name");
  bool escaped = false;
  for (const auto& n : names) escaped |= has(n, "\\x1b[2J\\x1b[31mEVIL") && has(n, "\\u202e");
  EXPECT_TRUE(escaped);
  for (unsigned char c : s.r.out) EXPECT_TRUE(c >= 0x20 || c == '\n') << int(c);
  for (unsigned char c : slurp(s.summary)) EXPECT_TRUE(c >= 0x20 || c == '\n') << int(c);
}

// --------------------------------------------------------------- N11: a user regex on long names

TEST(ReproN11, NestedQuantifiersEndAtOnce) {
  REQUIRE_REPRO2(dir, "N_marker_redos");
  for (const char* marker : {"'^(\\w+\\s?)+$'", "'(x+x+)+y'"}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto s = scan(dir + " -q --iteration-marker " + marker, "n11");
    EXPECT_EQ(s.r.status, 0) << marker << "\n" << s.r.out;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << marker;  // a hang guard
  }
  auto s = scan(dir + " -q --iteration-marker '(unclosed'", "n11-bad");
  EXPECT_EQ(s.r.status, 2);
  EXPECT_TRUE(has(s.r.out, "--iteration-marker: invalid regular expression '(unclosed' (missing )")) << s.r.out;
}
