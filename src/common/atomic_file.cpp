#include "common/atomic_file.hpp"

#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

namespace common {
namespace fs = std::filesystem;
namespace {

// Paths the signal handler removes: fixed buffers, since a handler may not allocate.
constexpr size_t kMaxTracked = 2, kMaxPath = 4096;
char g_tracked[kMaxTracked][kMaxPath];
volatile sig_atomic_t g_armed = 0;
const int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_and_reraise(int sig) {
  if (g_armed)
    for (auto& p : g_tracked)
      if (p[0]) unlink(p);  // async-signal-safe
  signal(sig, SIG_DFL);
  raise(sig);
}

fs::path dir_of(const std::string& path) {
  const fs::path p(path);
  return p.parent_path().empty() ? fs::path(".") : p.parent_path();
}

}  // namespace

void arm_cleanup(const std::vector<std::string>& paths) {
  g_armed = 0;
  for (size_t i = 0; i < kMaxTracked; ++i) {
    g_tracked[i][0] = '\0';
    if (i < paths.size() && paths[i].size() < kMaxPath) std::memcpy(g_tracked[i], paths[i].c_str(), paths[i].size() + 1);
  }
  g_armed = 1;
  for (int s : kSignals) {
    struct sigaction sa = {};
    sa.sa_handler = remove_and_reraise;
    sigemptyset(&sa.sa_mask);
    sigaction(s, &sa, nullptr);
  }
}

void disarm_cleanup() {
  g_armed = 0;
  for (int s : kSignals) signal(s, SIG_DFL);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h;
  for (const char* c = buf; *c; ++c)
    if (std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '.') h += *c;
  return h.empty() ? "host" : h;
}

std::string temp_path(const std::string& path, const std::string& host, int64_t pid) {
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp-" + host + "-" + std::to_string(pid))).string();
}

int remove_stale_temps(const std::string& path) {
  const std::string prefix = "." + fs::path(path).filename().string() + ".tmp-" + host_name() + "-";
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_of(path), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::stol(digits));
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    std::error_code rm;
    if (fs::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

int64_t free_bytes(const std::string& path) {
  struct statvfs s = {};
  if (statvfs(dir_of(path).c_str(), &s) != 0) return -1;
  return int64_t(s.f_bavail) * int64_t(s.f_frsize);
}

RenameFailure rename_all(const std::vector<std::pair<std::string, std::string>>& temp_to_final) {
  for (size_t i = 0; i < temp_to_final.size(); ++i) {
    std::error_code ec;
    fs::rename(temp_to_final[i].first, temp_to_final[i].second, ec);
    if (!ec) continue;
    const std::string reason = ec.message();
    for (size_t k = 0; k < i; ++k) fs::remove(temp_to_final[k].second, ec);  // taken back
    return {i, reason};
  }
  return {};
}

}  // namespace common
