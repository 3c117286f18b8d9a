// Wall time of each stage of one analysis (--timings), with the heap in use after it and the
// peak RSS so far: where the time and the memory go, measured, on every process; process 0 prints
// its own. One log per process.
#pragma once
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace straggler {

class Timings {
 public:
  void start() { marks_.clear(), last_ = std::chrono::steady_clock::now(); }
  // The time since the previous mark (or start) was spent in `stage`.
  void mark(std::string stage) {
    const auto now = std::chrono::steady_clock::now();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    marks_.push_back({std::move(stage), std::chrono::duration<double>(now - last_).count(),
                      double(mallinfo2().uordblks) / 1e6, double(ru.ru_maxrss) / 1024});
    last_ = now;
  }
  // The last stage marked ("" before the first): where a silent process was last seen.
  const std::string& last_stage() const {
    static const std::string none;
    return marks_.empty() ? none : marks_.back().stage;
  }
  void print(std::ostream& os) const {
    double total = 0;
    os << "timings (process 0): stage, ms, heap in use after it MB, peak RSS so far MB\n";
    for (const auto& m : marks_) {
      total += m.seconds;
      os << "  " << m.stage << ": " << int64_t(m.seconds * 1000 + 0.5) << " ms, heap " << int64_t(m.heap_mb + 0.5)
         << " MB, peak " << int64_t(m.peak_mb + 0.5) << " MB\n";
    }
    os << "  total: " << int64_t(total * 1000 + 0.5) << " ms\n";
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  struct Mark {
    std::string stage;
    double seconds, heap_mb, peak_mb;
  };
  std::vector<Mark> marks_;
};

inline Timings& timings() {
  static Timings t;
  return t;
}

}  // namespace straggler
