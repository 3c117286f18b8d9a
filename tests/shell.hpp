// Runs a command line for the end-to-end tests: stdout and stderr together, its exit status, and
// what Open MPI needs on this kind of machine (root, more processes than cores). One place for
// test_cli, test_verdict, test_crash and test_iterations.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace testsh {

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr together
};

inline Result sh(const std::string& cmd) {
  Result r;
  FILE* p = ::popen(("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
                     "timeout 300 " + cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string sh(const std::string& cmd, int* status) {
  Result r = sh(cmd);
  *status = r.status;
  return std::move(r.out);
}

// A whole file's bytes ("" when unreadable).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace testsh
