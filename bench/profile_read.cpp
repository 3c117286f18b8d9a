// straggler-scan's per-profile work (read + per-rank metrics + root-cause findings, as the driver
// does them) on one file, timed.
// Usage: profile_read FILE -> one JSON line (seconds, kernels, peak RSS).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "ranks/findings.hpp"
#include "ranks/metrics.hpp"
#include "collectives/nccl_annotate.hpp"
#include "ranks/profile_reader.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: profile_read FILE\n"), 2;
  auto t0 = std::chrono::steady_clock::now();
  auto tls = collectives::read_annotated(argv[1]);
  auto t1 = std::chrono::steady_clock::now();
  size_t kernels = 0;
  double busy = 0;
  size_t findings = 0;
  for (const auto& tl : tls) {
    kernels += tl.kernels.size();
    const auto m = ranks::compute_metrics(tl);
    busy += double(m.whole.busy_ns);
    findings += ranks::find_rank_findings(tl, m).size();
  }
  auto t2 = std::chrono::steady_clock::now();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  std::printf("{\"kernels\": %zu, \"read_seconds\": %.6f, \"metrics_seconds\": %.6f, \"seconds\": %.6f, "
              "\"cpu_seconds\": %.6f, \"max_rss_kb\": %ld, \"busy_ns\": %.0f, \"findings\": %zu}\n",
              kernels, std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
              std::chrono::duration<double>(t2 - t0).count(), cpu, ru.ru_maxrss, busy, findings);
}
