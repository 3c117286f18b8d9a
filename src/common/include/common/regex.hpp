// Regular expressions over untrusted text, in time linear in the text (RE2): the patterns are the
// user's (--iteration-marker, --rank-pattern) but the text comes from other people's profiles and
// file names, and a backtracking engine (std::regex) ran for hours on `^(\w+\s?)+$` against one
// long NVTX name (repro N11) and overflowed its stack on 30,000 characters (repro D2). RE2 syntax:
// Perl-like classes (\d, \w, \s), (?:...), (?i); no backreferences or lookaround.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace common {

class Regex {
 public:
  // Throws std::invalid_argument naming RE2's reason when the pattern is not valid.
  explicit Regex(const std::string& pattern, bool ignore_case = false);
  // Whether the pattern matches anywhere in `text` (^ and $ anchor at its ends).
  bool search(std::string_view text) const;
  // The first capture group (in group order) that took part in the leftmost match; nullopt when
  // nothing matched or no group did.
  std::optional<std::string> first_group(std::string_view text) const;
  int groups() const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::shared_ptr<const re2::RE2> re_;  // immutable and thread-safe: copies share it
  std::string pattern_;
};

}  // namespace common
