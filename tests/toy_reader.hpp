// A toy input format, defined through the public reader interface only (ranks/profile_reader.hpp):
// one file and one registration line. "toy-trace v1", then lines "host NAME" and
// "kernel START END STREAM NAME". Used by the reader conformance suite and the toy analysis test.
#pragma once
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ranks/profile_reader.hpp"

namespace toy {

inline std::vector<ranks::RankTimeline> read_toy(const std::string& path) {
  std::ifstream in(path);
  ranks::RankTimeline tl;
  tl.file = path, tl.pid = 1, tl.device = 0, tl.source = {"toy-trace", "1", ""};
  std::string line, word;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream l(line);
    l >> word;
    if (word == "host") {
      l >> tl.host;
    } else if (word == "kernel") {
      int64_t s = 0, e = 0;
      int32_t stream = 0;
      std::string name;
      if (!(l >> s >> e >> stream >> name) || e < s) throw ranks::ProfileError(path + ": bad kernel line");
      auto& k = tl.kernels;
      k.start.push_back(s), k.end.push_back(e), k.stream.push_back(stream), k.name.push_back(tl.names.intern(name));
      k.launch.push_back(s - 5000), k.launch_tid.push_back(1), k.launch_dur.push_back(2000);
    }
  }
  if (tl.kernels.size() == 0) throw ranks::ProfileError(path + ": no kernel");
  tl.capture_start = tl.kernels.start.front(), tl.capture_end = *std::max_element(tl.kernels.end.begin(), tl.kernels.end.end());
  tl.launches_total = int64_t(tl.kernels.size());
  return {std::move(tl)};
}

inline ranks::ProfileFormat toy_format() {
  return {"toy-trace", {".toytrace"}, [](std::string_view head) { return head.substr(0, 13) == "toy-trace v1\n"; }, read_toy};
}
inline const bool kToyRegistered = ranks::register_format(toy_format());  // the one registration line

// Rank `rank`'s trace: 12 iterations of a gemm (longer by 0.1 ms per rank) and an all-reduce.
inline void write_toy(const std::filesystem::path& p, int rank) {
  std::ofstream out(p);
  out << "toy-trace v1\nhost node" << rank / 2 << "\n";
  for (int it = 0; it < 12; ++it) {
    const int64_t t = 1'000'000 + it * 10'000'000;
    out << "kernel " << t << " " << t + 6'000'000 + rank * 100'000 << " 7 gemm_kernel\n";
    out << "kernel " << t + 6'200'000 << " " << t + 8'000'000 << " 9 ncclDevKernel_AllReduce_Sum_f32_RING_LL\n";
  }
}

}  // namespace toy
