// OutputFiles (src/output_files.hpp) alone, on the local transport: what a killed run leaves (D9).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "output_files.hpp"
#include "transport.hpp"

namespace fs = std::filesystem;
using namespace straggler;

namespace {

fs::path fresh_dir(const std::string& name) {  // under the temp folder, named by pid
  const fs::path d = fs::temp_directory_path() / ("ss-outfiles-" + std::to_string(::getpid())) / name;
  fs::remove_all(d), fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

}  // namespace

// D9: a temporary file whose process is gone (a SIGKILLed run) is removed by the next run on the
// host; one whose process lives is left alone.
TEST(OutputFiles, StaleTemporariesOfDeadProcessesAreRemoved) {
  const fs::path dir = fresh_dir("stale");
  auto local = local_transport();
  const std::string out = (dir / "x.h5").string();
  std::string live_name;
  {
    OutputFiles f(*local, out, "");
    live_name = f.h5_temp();  // .x.h5.tmp-HOST-<own pid>
  }
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a pid that no longer exists
  const std::string stem = live_name.substr(0, live_name.rfind('-') + 1);
  const std::string dead = stem + std::to_string(child), other_host = (dir / ".x.h5.tmp-elsewhere-1").string();
  for (const auto& p : {live_name, dead, other_host}) std::fclose(std::fopen(p.c_str(), "w"));
  EXPECT_EQ(common::remove_stale_temps(out), 1);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live_name));
  EXPECT_TRUE(fs::exists(other_host));  // another host's run: not ours to judge
}

// D9: SIGTERM (what mpirun sends the others when one process dies) removes the temporary files.
TEST(OutputFiles, TerminationRemovesTemporaries) {
  const fs::path dir = fresh_dir("sigterm");
  const std::string out = (dir / "x.h5").string(), summary = (dir / "s.json").string();
  const pid_t child = fork();
  if (child == 0) {
    auto local = local_transport();
    OutputFiles f(*local, out, summary);
    for (const auto& p : {f.h5_temp(), f.summary_temp()}) std::fclose(std::fopen(p.c_str(), "w"));
    raise(SIGTERM);
    _exit(3);  // not reached
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(listing(dir), std::vector<std::string>{});
}


// N8: a commit renames nothing unless every target is replaceable: the target made a directory
// during the run (the repro's race) leaves the summary that existed before.
TEST(OutputFiles, CommitRenamesNothingUnlessEveryTargetIsReplaceable) {
  const fs::path dir = fresh_dir("n8-check");
  put(dir / "s.json", "OLDJSON"), put(dir / ".s.json.tmp", "NEW"), put(dir / ".x.h5.tmp", "H5");
  fs::create_directories(dir / "x.h5");
  const auto fail = common::rename_all({{(dir / ".s.json.tmp").string(), (dir / "s.json").string()},
                                        {(dir / ".x.h5.tmp").string(), (dir / "x.h5").string()}});
  EXPECT_EQ(fail.index, 1u);
  EXPECT_EQ(fail.reason, "is a directory now");
  EXPECT_EQ(slurp(dir / "s.json"), "OLDJSON");
  for (const auto& f : listing(dir)) EXPECT_EQ(f.find(".bak-"), std::string::npos) << f;
}

// N8: a rename that fails after the check (here: across file systems) gives back what the earlier
// renames replaced, from their hard-linked backups; a target that was absent is removed again.
TEST(OutputFiles, FailedCommitGivesBackTheEarlierFiles) {
  const fs::path dir = fresh_dir("n8-rollback"), other = "/dev/shm";
  struct stat a {}, b {};
  if (::stat(dir.c_str(), &a) != 0 || ::stat(other.c_str(), &b) != 0 || a.st_dev == b.st_dev)
    GTEST_SKIP() << "needs " << other << " on another file system than " << dir;
  const fs::path far = other / ("ss-outfiles-" + std::to_string(::getpid()) + ".tmp");
  put(dir / "s.json", "OLDJSON"), put(dir / ".s.json.tmp", "NEW"), put(dir / "x.h5", "OLDH5"), put(far, "H5");
  auto fail = common::rename_all({{(dir / ".s.json.tmp").string(), (dir / "s.json").string()},
                                  {far.string(), (dir / "x.h5").string()}});
  EXPECT_EQ(fail.index, 1u);
  EXPECT_FALSE(fail.reason.empty());
  EXPECT_EQ(slurp(dir / "s.json"), "OLDJSON");
  EXPECT_EQ(slurp(dir / "x.h5"), "OLDH5");
  // No earlier summary: the one renamed is taken back.
  fs::remove(dir / "s.json");
  put(dir / ".s.json.tmp", "NEW");
  fail = common::rename_all({{(dir / ".s.json.tmp").string(), (dir / "s.json").string()},
                             {far.string(), (dir / "x.h5").string()}});
  EXPECT_EQ(fail.index, 1u);
  EXPECT_FALSE(fs::exists(dir / "s.json"));
  for (const auto& f : listing(dir)) EXPECT_EQ(f.find(".bak-"), std::string::npos) << f;
  fs::remove(far);
  // And a commit that succeeds leaves no backup.
  put(dir / ".s.json.tmp", "NEW"), put(dir / "s.json", "OLDJSON");
  EXPECT_TRUE(common::rename_all({{(dir / ".s.json.tmp").string(), (dir / "s.json").string()}}).reason.empty());
  EXPECT_EQ(slurp(dir / "s.json"), "NEW");
  EXPECT_EQ(listing(dir).size(), 2u);  // s.json and x.h5
}

// N4: what a commit must never rename over, without following links.
TEST(OutputFiles, NotReplaceableTargets) {
  const fs::path dir = fresh_dir("n4");
  put(dir / "plain", "x");
  ::mkfifo((dir / "fifo").c_str(), 0600);
  fs::create_symlink("plain", dir / "link");
  fs::create_directories(dir / "sub");
  EXPECT_EQ(common::not_replaceable((dir / "plain").string()), "");
  EXPECT_EQ(common::not_replaceable((dir / "absent").string()), "");
  EXPECT_EQ(common::not_replaceable((dir / "fifo").string()), "is a FIFO");
  EXPECT_EQ(common::not_replaceable((dir / "link").string()), "is a symbolic link");
  EXPECT_EQ(common::not_replaceable((dir / "sub").string()), "is a directory");
  EXPECT_EQ(common::not_replaceable("/dev/null"), "is a character device");  // only looked at
}

// A commit's backup left by a killed run is removed like its temporaries.
TEST(OutputFiles, StaleBackupsOfDeadProcessesAreRemoved) {
  const fs::path dir = fresh_dir("stale-bak");
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const fs::path bak = dir / (".x.h5.bak-" + common::host_name() + "-" + std::to_string(child));
  put(bak, "old");
  EXPECT_EQ(common::remove_stale_temps((dir / "x.h5").string()), 1);
  EXPECT_FALSE(fs::exists(bak));
}

// N2: the space reserved for the HDF5 file, or why not, with nothing left reserved on failure.
TEST(OutputFiles, ReserveSpaceOrSayWhy) {
  const fs::path dir = fresh_dir("reserve");
  put(dir / "f", "x");
  EXPECT_EQ(common::reserve_space((dir / "f").string(), 1 << 20), "");
  EXPECT_EQ(fs::file_size(dir / "f"), 1u);  // the size is unchanged
  // The file size limit is no reservation's business in the kernel: checked here.
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit low = old;
  low.rlim_cur = 1 << 20;
  if (old.rlim_max == RLIM_INFINITY || old.rlim_max >= low.rlim_cur) {
    ::setrlimit(RLIMIT_FSIZE, &low);
    EXPECT_EQ(common::reserve_space((dir / "f").string(), 2 << 20).rfind("File too large: the file size limit", 0), 0u);
    ::setrlimit(RLIMIT_FSIZE, &old);
  }
  // A small file system: more than it has is refused, and its free space is as before.
  const fs::path mnt = dir / "mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m") != 0) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
  put(mnt / "f", "x");
  struct statvfs before {}, after {};
  ::statvfs(mnt.c_str(), &before);
  const std::string why = common::reserve_space((mnt / "f").string(), 64 << 20);
  ::statvfs(mnt.c_str(), &after);
  EXPECT_EQ(why, "No space left on device");
  EXPECT_EQ(after.f_bavail, before.f_bavail);
  EXPECT_EQ(common::reserve_space((mnt / "f").string(), 1 << 20), "");
  ::statvfs(mnt.c_str(), &after);
  EXPECT_LT(after.f_bavail, before.f_bavail);  // held, though the file is 1 byte
  ::umount(mnt.c_str());
}

// N8 through OutputFiles, as the driver commits: the HDF5 target made a directory during the run
// fails the commit with one line, the summary written before the run stays, no temporary is left.
TEST(OutputFiles, CommitOverADirectoryKeepsTheEarlierSummary) {
  const fs::path dir = fresh_dir("n8-commit");
  put(dir / "race.json", "OLDJSON");
  auto local = local_transport();
  try {
    OutputFiles f(*local, (dir / "race.h5").string(), (dir / "race.json").string());
    put(f.h5_temp(), "H5"), put(f.summary_temp(), "NEW");
    fs::create_directories(dir / "race.h5");
    f.commit("");
    FAIL() << "no error";
  } catch (const common::OutputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "race.h5").string() + ": cannot write HDF5 output (the path is a directory now)");
  }
  EXPECT_EQ(slurp(dir / "race.json"), "OLDJSON");
  EXPECT_EQ(listing(dir).size(), 2u);  // race.json and the directory race.h5
}
