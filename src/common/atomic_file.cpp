#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>

namespace common {
namespace fs = std::filesystem;
namespace {

// Paths the signal handler removes: fixed buffers, since a handler may not allocate.
constexpr size_t kMaxTracked = 2, kMaxPath = 4096;
char g_tracked[kMaxTracked][kMaxPath];
volatile sig_atomic_t g_armed = 0, g_committing = 0, g_noted = 0, g_continued = 0;
pid_t g_launcher = 0;
const int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void note_continue(int) { g_continued = 1; }

extern "C" void remove_and_reraise(int sig) {
  if (g_committing) {  // the commit decides (end_commit): never half of its renames
    g_noted = sig;
    return;
  }
  common::remove_armed_temps();
  signal(sig, SIG_DFL);
  raise(sig);
}

fs::path dir_of(const std::string& path) {
  const fs::path p(path);
  return p.parent_path().empty() ? fs::path(".") : p.parent_path();
}

}  // namespace

void remove_armed_temps() {
  if (g_armed)
    for (auto& p : g_tracked)
      if (p[0]) unlink(p);  // async-signal-safe
}

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
  struct sigaction sa = {};
  sa.sa_handler = note_continue;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGCONT, &sa, nullptr);
}

void disarm_cleanup() {
  g_armed = 0;
  for (int s : kSignals) signal(s, SIG_DFL);
  signal(SIGCONT, SIG_DFL);
}

int begin_commit() {
  g_committing = 1;
  // mpirun interrupted (Ctrl-C, SIGTERM) returns at once and ends its processes in steps: SIGCONT
  // first, SIGTERM about a second later, SIGKILL after (Open MPI's kill sequence). A SIGCONT under a
  // launcher may be that first step (or a job resumed after Ctrl-Z): wait for the step after it
  // before committing, as long as the launcher lives and nothing follows.
  if (g_continued && g_launcher != 0)
    for (int i = 0; i < 40 && !g_noted && !launcher_gone(); ++i) usleep(50'000);
  g_continued = 0;
  return int(g_noted);
}

void end_commit() {
  g_committing = 0;
  if (const int sig = int(g_noted)) {
    remove_armed_temps();
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

void note_launcher() { g_launcher = getppid(); }

bool launcher_gone() { return g_launcher != 0 && getppid() != g_launcher; }

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
  const std::string stem = "." + fs::path(path).filename().string(), tail = "-" + host_name() + "-";
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_of(path), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::string digits;  // the pid, after a prefix of ours
    for (const char* kind : {".tmp", ".bak"})  // temporaries, and backups of a commit cut short
      if (const std::string prefix = stem + kind + tail; name.rfind(prefix, 0) == 0) digits = name.substr(prefix.size());
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

std::string not_replaceable(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || st.type() == fs::file_type::not_found || st.type() == fs::file_type::regular) return "";
  return std::string("is ") + file_type_name(st.type());
}

const char* file_type_name(fs::file_type t) {
  switch (t) {
    case fs::file_type::regular: return "a regular file";
    case fs::file_type::directory: return "a directory";
    case fs::file_type::symlink: return "a symbolic link";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    default: return "not a file";
  }
}

namespace {
// ".NAME.bak-HOST-PID" beside `path`: a hard link to the file a commit replaces, until it is done.
std::string backup_path(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".bak-" + host_name() + "-" + std::to_string(getpid())))
      .string();
}
}  // namespace

std::string reserve_space(const std::string& path, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat st {};
  ::fstat(fd, &st);
  std::string why;
  // A reservation does not change the size, so the kernel does not hold it to the file size limit.
  if (struct rlimit lim {}; ::getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && bytes > lim.rlim_cur)
    why = "File too large: the file size limit (ulimit -f) is " + std::to_string(uint64_t(lim.rlim_cur)) + " bytes";
  else if (bytes > 0 && ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, off_t(std::min<uint64_t>(bytes, INT64_MAX))) != 0) {
    const int e = errno;
    if (e != EOPNOTSUPP && e != ENOSYS && e != EINVAL) why = std::strerror(e);
    // A failed reservation may hold part of the blocks: blocks past the end go with a truncate.
    if (ftruncate(fd, st.st_size) != 0 && why.empty()) why = std::strerror(errno);
  }
  ::close(fd);
  return why;
}

RenameFailure rename_all(const std::vector<std::pair<std::string, std::string>>& temp_to_final) {
  // The targets again, just before: any may have changed since the run started (repro N8: a
  // directory made in its place). Nothing is renamed unless every one is replaceable.
  for (size_t i = 0; i < temp_to_final.size(); ++i)
    if (std::string why = not_replaceable(temp_to_final[i].second); !why.empty()) return {i, why + " now"};
  // Each file a rename replaces keeps a second name until every rename is done, so that a failed
  // commit puts back what was there (a filesystem without hard links: no such guarantee).
  std::vector<std::string> backups(temp_to_final.size());
  for (size_t i = 0; i < temp_to_final.size(); ++i) {
    const std::string b = backup_path(temp_to_final[i].second);
    ::unlink(b.c_str());
    if (::link(temp_to_final[i].second.c_str(), b.c_str()) == 0) backups[i] = b;
  }
  auto drop_backups = [&] {
    for (const auto& b : backups)
      if (!b.empty()) ::unlink(b.c_str());
  };
  for (size_t i = 0; i < temp_to_final.size(); ++i) {
    std::error_code ec;
    fs::rename(temp_to_final[i].first, temp_to_final[i].second, ec);
    if (!ec) continue;
    const std::string reason = ec.message();
    for (size_t k = 0; k < i; ++k) {  // taken back: the earlier file where there was one, else nothing
      const std::string& final = temp_to_final[k].second;
      if (!backups[k].empty() && ::rename(backups[k].c_str(), final.c_str()) == 0) backups[k].clear();
      else if (backups[k].empty()) fs::remove(final, ec);
    }
    drop_backups();
    return {i, reason};
  }
  drop_backups();
  return {};
}

}  // namespace common
