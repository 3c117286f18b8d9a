#include "topology/pipeline_theory.hpp"

#include <algorithm>
#include <numeric>

namespace topology {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::GPipe: return "gpipe";
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::Interleaved: return "interleaved_1f1b";
  }
  return "1f1b";
}

double theoretical_bubble(int p, int m, int v) {
  if (p < 2 || m < 1 || v < 1) return 0;
  return double(p - 1) / (double(v) * double(m));
}

double imbalance_excess(const std::vector<double>& u, int n) {
  if (u.empty() || n < 1) return 0;
  const double p = double(u.size()), sum = std::accumulate(u.begin(), u.end(), 0.0);
  const double span = sum + double(n - 1) * *std::max_element(u.begin(), u.end());
  return p * span - (double(n) + p - 1) * sum;
}

}  // namespace topology
