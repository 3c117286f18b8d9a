#include "output_files.hpp"

#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "exchange.hpp"
#include "ranks/discovery.hpp"

namespace straggler {
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

void arm(const std::vector<std::string>& paths) {
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

void disarm() {
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

}  // namespace

std::string temp_path(const std::string& path, const std::string& host, int64_t pid) {
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp-" + host + "-" + std::to_string(pid))).string();
}

int remove_stale_temps(const std::string& path) {
  const fs::path p(path);
  const std::string prefix = "." + p.filename().string() + ".tmp-" + host_name() + "-";
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
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
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  struct statvfs s = {};
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return int64_t(s.f_bavail) * int64_t(s.f_frsize);
}

OutputFiles::OutputFiles(Transport& t, const std::string& h5_path, const std::string& summary_path)
    : t_(t), h5_(h5_path), summary_(summary_path) {
  ByteWriter w;
  if (t.root()) w.str(host_name()), w.pod<int64_t>(int64_t(getpid()));
  const std::string blob = t.broadcast(w.bytes(), 0);
  ByteReader r(blob);
  const std::string host = r.str();
  const int64_t pid = r.pod<int64_t>();
  if (!h5_.empty()) h5_temp_ = temp_path(h5_, host, pid);
  if (!summary_.empty()) summary_temp_ = temp_path(summary_, host, pid);
  if (t.root()) {
    for (const auto* p : {&h5_, &summary_})
      if (!p->empty()) remove_stale_temps(*p);
    arm({h5_temp_, summary_temp_});
  }
}

OutputFiles::~OutputFiles() {
  if (!done_ && t_.root()) remove_temps();
  if (t_.root()) disarm();
}

void OutputFiles::remove_temps() {
  std::error_code ec;
  for (const auto* p : {&h5_temp_, &summary_temp_})
    if (!p->empty()) fs::remove(*p, ec);
}

void OutputFiles::commit(const std::string& error) {
  ByteWriter w;
  std::string why = error;
  if (t_.root() && why.empty()) {
    std::error_code ec;
    // The summary first: if the HDF5 rename then failed, the summary is taken back.
    if (!summary_.empty()) {
      fs::rename(summary_temp_, summary_, ec);
      if (ec) why = ranks::printable(summary_) + ": cannot write the summary (" + ec.message() + ")";
    }
    if (why.empty() && !h5_.empty()) {
      fs::rename(h5_temp_, h5_, ec);
      if (ec) {
        why = ranks::printable(h5_) + ": cannot write HDF5 output (rename: " + ec.message() + ")";
        if (!summary_.empty()) fs::remove(summary_, ec);
      }
    }
  }
  if (t_.root()) {
    if (!why.empty()) remove_temps();
    w.str(why);
  }
  const std::string blob = t_.broadcast(w.bytes(), 0);
  done_ = true;
  ByteReader r(blob);
  if (std::string msg = r.str(); !msg.empty()) throw OutputError(msg);
}

}  // namespace straggler
