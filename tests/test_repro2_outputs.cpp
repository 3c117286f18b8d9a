// Issue 17, outputs and processes, end to end: the cases of ../shared/data/repro2 about where the
// outputs go (N4 special files, N5 an input reached through a link), faults during the write (N2:
// write errors injected with tests/fault/write_faults.c, and a file system that fills), and a
// stopped process (N9). The commit transaction itself (N8) is tested in test_output_files.cpp.
// Parts that need root, mknod or mount skip with a message where they are not allowed.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "shell.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN, kShared = SS_SHARED_DIR, kFaults = SS_WRITE_FAULTS;

fs::path temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("ss-repro2-out-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

fs::path generate(const std::string& name, const std::string& args = "--layout 1x1x2 --hosts 1 --iterations 3") {
  const fs::path dir = temp(name);
  int st = 0;
  const auto out = testsh::sh(kSim + " " + dir.string() + " " + args + " --seed 5", &st);
  EXPECT_EQ(st, 0) << out;
  return dir;
}

std::string slurp(const fs::path& path) { return testsh::slurp(path.string()); }
void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::vector<std::string> leftovers(const fs::path& dir) {  // temporaries and backups of ours
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (has(n, ".tmp-") || has(n, ".bak-")) v.push_back(n);
  }
  return v;
}

// The sanitizer runtime must come first; an injected library after it is fine for these runs.
const std::string kPreload = "env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD=" + kFaults;

}  // namespace

// ----------------------------------------------------------- N5: an input reached through a link

TEST(ReproN5, OutputsNeverOverwriteAnInputReachedThroughALink) {
  const fs::path real = generate("n5-real"), run = temp("n5-run");
  fs::create_directories(run);
  fs::create_symlink(real / "rank_0.sqlite", run / "rank_0.sqlite");
  fs::create_hard_link(real / "rank_1.sqlite", run / "rank_1.sqlite");
  const std::string r0 = slurp(real / "rank_0.sqlite"), r1 = slurp(real / "rank_1.sqlite");
  const fs::path out = temp("n5-out");
  fs::create_directories(out);
  for (const std::string& args : {"-o " + (real / "rank_0.sqlite").string(),
                                  "-o " + (out / "s.h5").string() + " --summary " + (real / "rank_0.sqlite").string(),
                                  "-o " + (real / "rank_1.sqlite").string()}) {
    auto r = testsh::sh(kScan + " " + run.string() + " " + args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "would overwrite an input (" + run.string())) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  EXPECT_EQ(slurp(real / "rank_0.sqlite"), r0);
  EXPECT_EQ(slurp(real / "rank_1.sqlite"), r1);
  // A run folder of links with the outputs elsewhere is an ordinary run.
  auto r = testsh::sh(kScan + " " + run.string() + " -o " + (out / "s.h5").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "2 ranks from 2 files")) << r.out;
  fs::remove_all(real), fs::remove_all(run), fs::remove_all(out);
}

// ------------------------------------------------------------ N4: special files as output targets

TEST(ReproN4, SpecialFilesAreRefusedAndLeftAlone) {
  const fs::path run = generate("n4-run"), dev = temp("n4-dev");
  fs::create_directories(dev);
  ::mkfifo((dev / "fifo").c_str(), 0600);
  fs::create_symlink("/proc/self/fd/1", dev / "stdout");
  fs::create_symlink(dev / "target.h5", dev / "link.h5");
  struct Case {
    std::string args, shown, kind;
  };
  std::vector<Case> cases = {{"--summary " + (dev / "fifo").string(), (dev / "fifo").string(), "a FIFO"},
                             {"--summary " + (dev / "stdout").string(), (dev / "stdout").string(), "a symbolic link"},
                             {"-o " + (dev / "link.h5").string(), (dev / "link.h5").string(), "a symbolic link"}};
  const bool device = ::mknod((dev / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  if (device) cases.push_back({"-o " + (dev / "null").string(), (dev / "null").string(), "a character device"});
  for (const auto& c : cases) {
    auto r = testsh::sh(kScan + " " + run.string() + " -q " + c.args + (has(c.args, "-o ") ? "" : " -o " + (dev / "x.h5").string()));
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, c.shown + ": ")) << r.out;
    EXPECT_TRUE(has(r.out, "is " + c.kind + ", which writing would replace")) << r.out;
  }
  EXPECT_TRUE(fs::is_fifo(dev / "fifo"));
  EXPECT_TRUE(fs::is_symlink(dev / "stdout"));
  EXPECT_TRUE(fs::is_symlink(dev / "link.h5"));
  EXPECT_FALSE(fs::exists(dev / "x.h5"));
  if (device) {
    EXPECT_TRUE(fs::is_character_file(dev / "null"));
  }
  fs::remove_all(run), fs::remove_all(dev);
  if (!device) GTEST_SKIP() << "mknod not allowed here: the device-node part did not run";
}

// ----------------------------------------------------------------- N2: faults during the write

// Every write to the temporaries fails from the k-th on, alone and under MPI: exit 1 with one line,
// no crash, no temporaries, the outputs of an earlier run as they were.
TEST(ReproN2, WriteErrorsEndCleanly) {
  const fs::path run = generate("n2-run", "--layout 2x2x2 --hosts 2 --iterations 4"), out = temp("n2-out");
  fs::create_directories(out);
  for (const char* launcher : {"", "mpirun -n 2 "})
    for (const char* err : {"28", "5"})
      for (int after : {1, 4, 40}) {
        put(out / "s.h5", "OLDH5"), put(out / "s.json", "OLDJSON");
        const std::string env = std::string(*launcher ? "-x SS_FAULT_PATH -x SS_FAULT_AFTER -x SS_FAULT_ERRNO -x LD_PRELOAD -x ASAN_OPTIONS " : "");
        auto r = testsh::sh(kPreload + " SS_FAULT_PATH=.tmp- SS_FAULT_AFTER=" + std::to_string(after) + " SS_FAULT_ERRNO=" +
                            err + " " + launcher + (*launcher ? env : "") + kScan + " " + run.string() +
                            " -q --timeout 5 -o " + (out / "s.h5").string() + " --summary " + (out / "s.json").string());
        const std::string what = std::string(launcher) + "errno " + err + " after " + std::to_string(after);
        EXPECT_EQ(r.status, 1) << what << "\n" << r.out.substr(0, 3000);
        // Under MPI a metadata write failing on one process only strands the others inside
        // H5Fclose: the close's short bound ends the job, saying so.
        EXPECT_TRUE(has(r.out, (out / "s.h5").string() + ": cannot write HDF5 output (") ||
                    has(r.out, (out / "s.json").string() + ": cannot write the summary (") ||
                    (*launcher && has(r.out, "no progress closing " + (out / "s.h5").string() +
                                                 " (cannot write HDF5 output: a write failed on some process only")))
            << what << "\n" << r.out.substr(0, 3000);
        EXPECT_FALSE(has(r.out, "Segmentation fault") || has(r.out, "signal 11")) << what;
        EXPECT_EQ(slurp(out / "s.h5"), "OLDH5") << what;
        EXPECT_EQ(slurp(out / "s.json"), "OLDJSON") << what;
        EXPECT_EQ(leftovers(out), std::vector<std::string>{}) << what;
      }
  fs::remove_all(run), fs::remove_all(out);
}

// The repro itself: another writer fills the file system as soon as the temporary appears.
TEST(ReproN2, FileSystemFillingDuringTheWrite) {
  const fs::path script = fs::path(kShared) / "data/repro2/N_fs_full_during_write/fillrace.sh";
  if (!fs::exists(script)) GTEST_SKIP() << "no " << script;
  const fs::path run = generate("n2-fill", "--layout 2x4x4 --hosts 4 --iterations 10"), mnt = temp("n2-mnt");
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=12m") != 0) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
  for (const char* np : {"1", "2"}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = testsh::sh("env RUN=" + run.string() + " R=" + kScan + " bash " + script.string() + " " + np + " " +
                        mnt.string() + " " + temp("n2-log").string() + " --timeout 30 --summary " + (mnt / "s.json").string() +
                        " && cat " + temp("n2-log").string());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(100)) << r.out;
    // The run either finished before the disk filled (rc 0) or failed cleanly (rc 1); nothing else.
    EXPECT_TRUE(has(r.out, "np=" + std::string(np) + " rc=0 ") || has(r.out, "np=" + std::string(np) + " rc=1 "))
        << r.out.substr(0, 3000);
    EXPECT_TRUE(has(r.out, "left=[]") || has(r.out, "left=[s.h5 s.json ]") || has(r.out, "left=[s.json s.h5 ]"))
        << r.out.substr(0, 3000);
  }
  ::umount(mnt.c_str());
  fs::remove_all(run), fs::remove(temp("n2-log"));
}

// ------------------------------------------------------------------------ N9: a stopped process

// The straggler-scan processes (not the shells or mpirun around them) whose command line holds
// `tag`, newest first.
std::vector<std::string> scan_pids(const std::string& tag) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  const fs::path exe = fs::canonical(kScan, ec);
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    if (fs::read_symlink(e.path() / "exe", ec2) != exe) continue;
    if (has(slurp(e.path() / "cmdline"), tag)) found.emplace_back(std::stoi(pid), pid);
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> pids;
  for (auto& f : found) pids.push_back(f.second);
  return pids;
}

// Once two processes of the job with `tag` exist, after `delay`, runs `action` on the newest.
std::thread on_second_process(const std::string& tag, std::chrono::milliseconds delay, const std::string& action) {
  return std::thread([=] {
    for (int i = 0; i < 2000; ++i) {
      if (const auto pids = scan_pids(tag); pids.size() >= 2) {
        std::this_thread::sleep_for(delay);
        testsh::sh(action + " " + pids.front());
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
}

// One process of two stopped while reading: the job ends within the timeout (plus the watchdog's
// grace), exit 1, one line naming it (or, stopped before MPI was up, the stretch that made no
// progress), no temporary left, no process left behind.
TEST(ReproN9, StoppedProcessEndsTheJobWithinTheTimeout) {
  const fs::path run = generate("n9-run", "--layout 2x4x16 --hosts 16 --iterations 10"), out = temp("n9-out");
  fs::create_directories(out);
  const std::string tag = "n9tag" + std::to_string(::getpid());
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper = on_second_process(tag, std::chrono::milliseconds(300), "kill -STOP");
  auto r = testsh::sh("mpirun -n 2 " + kScan + " " + run.string() + " --iteration-marker " + tag +
                      " -q --timeout 3 -o " + (out / "s.h5").string() + " --summary " + (out / "s.json").string());
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << r.out;
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "has given no sign of life for") || has(r.out, "no progress")) << r.out;
  EXPECT_TRUE(has(r.out, "(--timeout")) << r.out;
  EXPECT_EQ(leftovers(out), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(out / "s.h5"));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(scan_pids(tag), std::vector<std::string>{}) << "a process was left behind";
  fs::remove_all(run), fs::remove_all(out);
}

// Slow is not silent: a process stopped for less than the timeout, then continued, finishes the job.
TEST(ReproN9, ShortPauseIsNoTimeout) {
  const fs::path run = generate("n9-pause", "--layout 2x4x16 --hosts 16 --iterations 10"), out = temp("n9p-out");
  fs::create_directories(out);
  const std::string tag = "n9pause" + std::to_string(::getpid());
  std::thread pauser = on_second_process(tag, std::chrono::milliseconds(300), "sh -c 'kill -STOP $0; sleep 2; kill -CONT $0'");
  auto r = testsh::sh("mpirun -n 2 " + kScan + " " + run.string() + " --iteration-marker " + tag +
                      " -q --timeout 6 -o " + (out / "s.h5").string());
  pauser.join();
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "s.h5"));
  fs::remove_all(run), fs::remove_all(out);
}
