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
  void start() { marks_.clear(), last_ = began_ = std::chrono::steady_clock::now(); }
  // Progress (--progress, or stderr a terminal): a line per stage on `os` once the run has taken
  // `after_s` (short scans stay silent); null: none. Process 0 only.
  void progress_to(std::ostream* os, double after_s = 2.0) { progress_ = os, progress_after_s_ = after_s; }
  // Within a long stage: "reading profiles: 12 of 64", at most one line per 2 s.
  void progress(const std::string& what, size_t done, size_t of) {
    const auto now = std::chrono::steady_clock::now();
    if (!progress_ || seconds(now - began_) < progress_after_s_ || seconds(now - last_line_) < 2.0) return;
    last_line_ = now;
    *progress_ << "straggler-scan: " << elapsed(now) << " " << what << ": " << done << " of " << of << std::endl;
  }
  // The time since the previous mark (or start) was spent in `stage`.
  void mark(std::string stage) {
    const auto now = std::chrono::steady_clock::now();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    marks_.push_back({std::move(stage), std::chrono::duration<double>(now - last_).count(),
                      double(mallinfo2().uordblks) / 1e6, double(ru.ru_maxrss) / 1024});
    last_ = now;
    // Stages that took a noticeable time only: a dozen "finish X" lines of 1 ms say nothing.
    if (progress_ && seconds(now - began_) >= progress_after_s_ && marks_.back().seconds >= 0.25) {
      last_line_ = now;
      *progress_ << "straggler-scan: " << elapsed(now) << " " << marks_.back().stage << ": done in " << int64_t(marks_.back().seconds * 1000 + 0.5)
                 << " ms" << std::endl;
    }
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
  static double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
  std::string elapsed(std::chrono::steady_clock::time_point now) const {
    const double s = seconds(now - began_);
    return "[" + std::to_string(int64_t(s)) + "." + std::to_string(int64_t(s * 10) % 10) + " s]";
  }
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now(), began_ = last_, last_line_{};
  std::ostream* progress_ = nullptr;
  double progress_after_s_ = 2.0;
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
