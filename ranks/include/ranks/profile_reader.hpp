// Profile formats and the reader that turns each into RankTimelines. A reader only reads: it fills
// the raw facts of ranks/timeline.hpp and leaves meaning (which kernels are NCCL's, ...) to the
// format-independent passes after it. Adding a format is one reader file plus one registration
// line (register_format, or the built-in list in ranks/readers/builtin.cpp).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "ranks/timeline.hpp"

namespace ranks {

// A profile that cannot be used; what() is one line naming the file and the problem.
class ProfileError : public common::InputError {
 public:
  using common::InputError::InputError;
};

struct ProfileFormat {
  std::string name;                     // the reader's name: RankTimeline::source.format
  std::vector<std::string> extensions;  // file names a directory search picks up (".sqlite")
  // Whether the file's first bytes (up to kSniffBytes; fewer for a short file; decompressed for a
  // gzip file) are this format.
  std::function<bool(std::string_view head)> sniff;
  // Every rank process in the file, ordered by device then pid, rank numbers left at -1 (the
  // caller assigns them: discovery.hpp). Throws ProfileError.
  std::function<std::vector<RankTimeline>(const std::string& path)> read;
  // Whether the reader takes a gzip-compressed file (it reads through InputStream, input_stream.hpp):
  // the sniff then sees the decompressed first bytes. A reader that needs random access (SQLite)
  // does not, and such a file is refused with a hint to decompress it.
  bool reads_compressed = false;
  // Other tools write files with these extensions too (.json): a directory search passes over such
  // a file when no format's sniff takes it (a config or a summary beside the traces).
  bool shared_extension = false;
  // Name endings only this format's tool writes (".pt.trace.json"): a file so named is its
  // profile whatever it holds, so a directory search never passes it over (an empty or damaged one
  // is read and reported, repro3 K_empty_trace_silent).
  std::vector<std::string> own_suffixes = {};
  // Files of the same tool that this reader cannot read but an export can make readable: extension
  // -> what to run. A directory search lists them as skipped with that hint.
  std::vector<std::pair<std::string, std::string>> convert_first = {};
};
inline constexpr size_t kSniffBytes = 64;

// Adds a format (the later of two with one name replaces the earlier). Returns true, so that a
// registration can initialise a static.
bool register_format(ProfileFormat f);
const std::vector<ProfileFormat>& profile_formats();
// Whether a directory search takes this file name as a profile (by the formats' extensions).
bool has_profile_extension(std::string_view file_name);
// For a directory search: why a file with a profile extension is no profile (every format with
// that extension shares it with other tools, and no format's sniff takes its first bytes), or ""
// when it is to be read (and any error is the reader's to report).
// A name with a format's own suffix is always to be read.
std::string not_a_profile(const std::string& path);
// Reads `path` with the format its first bytes identify. Throws ProfileError (unreadable, or no
// format recognises it, or the reader's own errors).
std::vector<RankTimeline> read_profile(const std::string& path);

}  // namespace ranks
