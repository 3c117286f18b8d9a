// OutputFiles (src/output_files.hpp) alone, on the local transport: what a killed run leaves (D9).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
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

