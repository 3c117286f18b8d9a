#include "common/regex.hpp"

#include <re2/re2.h>

#include <stdexcept>
#include <vector>

namespace common {

Regex::Regex(const std::string& pattern, bool ignore_case) : pattern_(pattern) {
  RE2::Options o;
  o.set_log_errors(false);  // its reason goes into our one-line error, not to stderr
  o.set_case_sensitive(!ignore_case);
  auto re = std::make_shared<const re2::RE2>(pattern, o);
  if (!re->ok()) throw std::invalid_argument(re->error());
  re_ = std::move(re);
}

bool Regex::search(std::string_view text) const { return RE2::PartialMatch(text, *re_); }

int Regex::groups() const { return re_->NumberOfCapturingGroups(); }

std::optional<std::string> Regex::first_group(std::string_view text) const {
  const int n = groups();
  if (n < 1) return std::nullopt;
  std::vector<re2::StringPiece> sub(size_t(n) + 1);
  if (!re_->Match(text, 0, text.size(), RE2::UNANCHORED, sub.data(), n + 1)) return std::nullopt;
  for (int g = 1; g <= n; ++g)
    if (sub[size_t(g)].data() != nullptr) return std::string(sub[size_t(g)].data(), sub[size_t(g)].size());
  return std::nullopt;
}

}  // namespace common
