// Wall time of each stage of one analysis (--timings): where the time goes, measured, on every
// process; process 0 prints its own. One log per process.
#pragma once
#include <chrono>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace straggler {

class Timings {
 public:
  void start() { marks_.clear(), last_ = std::chrono::steady_clock::now(); }
  // The time since the previous mark (or start) was spent in `stage`.
  void mark(std::string stage) {
    const auto now = std::chrono::steady_clock::now();
    marks_.emplace_back(std::move(stage), std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  void print(std::ostream& os) const {
    double total = 0;
    for (const auto& [stage, s] : marks_) total += s;
    os << "timings (process 0):";
    for (const auto& [stage, s] : marks_) os << " " << stage << " " << int64_t(s * 1000 + 0.5) << " ms;";
    os << " total " << int64_t(total * 1000 + 0.5) << " ms\n";
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> marks_;
};

inline Timings& timings() {
  static Timings t;
  return t;
}

}  // namespace straggler
