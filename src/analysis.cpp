#include "analysis.hpp"

namespace straggler {

std::vector<AnalysisInfo> builtin_analyses();  // analyses/builtin.cpp

namespace {
std::vector<AnalysisInfo>& registered() {
  static std::vector<AnalysisInfo> r;
  return r;
}
}  // namespace

bool register_analysis(AnalysisInfo info) {
  registered().push_back(std::move(info));
  return true;
}

std::vector<AnalysisInfo> analysis_registry() {
  auto all = builtin_analyses();
  all.insert(all.end(), registered().begin(), registered().end());
  return all;
}

std::vector<std::unique_ptr<Analysis>> make_analyses(const Options& spec) {
  std::vector<std::unique_ptr<Analysis>> out;
  for (const auto& a : analysis_registry()) out.push_back(a.make(spec));
  return out;
}

}  // namespace straggler
