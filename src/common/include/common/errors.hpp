// One taxonomy of the errors the tool reports, and their exit statuses in one place (README,
// "Exit status"). Every what() is one line that names the file or argument and the problem, its
// untrusted parts passed through common::printable.
#pragma once
#include <exception>
#include <stdexcept>

namespace common {

// Unusable arguments: no profile found, a bad rank map or pattern, no usable profile.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One input that cannot be used (a damaged or foreign profile): reported and skipped, the run
// goes on (it fails only with --strict, as a UsageError).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An output that cannot be written, raised on every process alike (so callers may return instead
// of aborting the job): nothing is left behind.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ExitStatus : int {
  Ok = 0,
  Failed = 1,  // an output could not be written, or an internal error
  Usage = 2,   // unusable arguments, no usable profile, or any failure under --strict
};

// The exit status of a run that ended with `e` (anything not in the taxonomy is internal).
inline ExitStatus exit_status_of(const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return ExitStatus::Usage;
  return ExitStatus::Failed;
}

constexpr int code(ExitStatus s) { return static_cast<int>(s); }

}  // namespace common
