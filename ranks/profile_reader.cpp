#include "ranks/profile_reader.hpp"


#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/text.hpp"
#include "ranks/input_stream.hpp"

namespace ranks {

void register_builtin_formats(std::vector<ProfileFormat>& out);  // ranks/readers/builtin.cpp

namespace {
std::vector<ProfileFormat>& formats() {
  static std::vector<ProfileFormat> f = [] {
    std::vector<ProfileFormat> v;
    register_builtin_formats(v);
    return v;
  }();
  return f;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

bool register_format(ProfileFormat f) {
  auto& v = formats();
  auto it = std::find_if(v.begin(), v.end(), [&](const ProfileFormat& x) { return x.name == f.name; });
  if (it != v.end()) *it = std::move(f);
  else v.push_back(std::move(f));
  return true;
}

const std::vector<ProfileFormat>& profile_formats() { return formats(); }

bool has_profile_extension(std::string_view name) {
  for (const auto& f : formats())
    for (const auto& e : f.extensions)
      if (ends_with(name, e) && name.size() > e.size()) return true;
  return false;
}

// The reader a file's name points to, or nullptr.
const ProfileFormat* format_by_name(const std::string& path) {
  for (const auto& f : formats())
    for (const auto& e : f.extensions)
      if (ends_with(path, e)) return &f;
  return nullptr;
}

namespace {
// The first bytes of a regular file as its readers see them (decompressed for gzip); false when it
// cannot be opened.
bool sniff_head(const std::string& path, std::string& head, bool& gz, std::string* gz_error = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char buf[kSniffBytes] = {};
  in.read(buf, sizeof buf);
  head.assign(buf, size_t(in.gcount()));
  gz = is_gzip_magic(head.data(), head.size());
  if (gz) {
    char inner[kSniffBytes] = {};
    try {
      InputStream s(path);
      head.assign(inner, s.read(inner, sizeof inner));
    } catch (const ProfileError& e) {
      head.clear();
      if (!gz_error) return false;  // damaged: the reader's to report, never passed over
      *gz_error = e.what();
    }
  }
  return true;
}
}  // namespace

std::string not_a_profile(const std::string& path) {
  bool shared_only = true, named = false;
  for (const auto& f : formats())
    for (const auto& e : f.extensions)
      if (ends_with(path, e)) named = true, shared_only = shared_only && f.shared_extension;
  std::error_code ec;
  if (!named || !shared_only || !std::filesystem::is_regular_file(path, ec)) return "";
  for (const auto& f : formats())
    for (const auto& e : f.own_suffixes)
      if (ends_with(path, e)) return "";
  std::string head;
  bool gz = false;
  if (!sniff_head(path, head, gz)) return "";
  for (const auto& f : formats())
    if (f.sniff(head)) return "";
  return "not a profile: no format recognises its first bytes (a JSON file other than a PyTorch profiler trace?)";
}

std::vector<RankTimeline> read_profile(const std::string& path) {
  // Only a regular file is opened here (a FIFO would block the open); anything else, or a file
  // damaged beyond its first bytes, goes to the reader its name points to, which says what is wrong.
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  std::string head;
  bool gz = false;  // the container step: a gzip file is sniffed by what it holds
  std::string gz_error;
  if (!regular || !sniff_head(path, head, gz, &gz_error)) {
    if (const ProfileFormat* f = format_by_name(path)) return f->read(path);
    throw ProfileError(common::printable(path) + (regular ? ": cannot open the file" : ": not a regular file"));
  }
  if (!gz_error.empty()) throw ProfileError(gz_error);
  for (const auto& f : formats()) {
    if (!f.sniff(head)) continue;
    if (gz && !f.reads_compressed)
      throw ProfileError(common::printable(path) + ": a gzip-compressed " + f.name +
                         " file; decompress it first (gunzip), this format needs random access");
    return f.read(path);
  }
  if (const ProfileFormat* f = format_by_name(path); f && !gz) return f->read(path);
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '{')
    throw ProfileError(common::printable(path) + ": a JSON object that is not a PyTorch profiler trace (its first "
                       "member is none the profiler writes: schemaVersion, traceEvents, deviceProperties, ...)");
  throw ProfileError(common::printable(path) + ": not a profile in any known format (" +
                     (head.empty() ? std::string("empty file") : std::string("unrecognised first bytes")) + ")");
}

}  // namespace ranks
