#include "ranks/profile_reader.hpp"


#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/text.hpp"

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

std::vector<RankTimeline> read_profile(const std::string& path) {
  // Only a regular file is opened here (a FIFO would block the open); anything else, or a file
  // damaged beyond its first bytes, goes to the reader its name points to, which says what is wrong.
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  std::ifstream in;
  if (regular) in.open(path, std::ios::binary);
  if (!regular || !in) {
    if (const ProfileFormat* f = format_by_name(path)) return f->read(path);
    throw ProfileError(common::printable(path) + (regular ? ": cannot open the file" : ": not a regular file"));
  }
  char buf[kSniffBytes] = {};
  in.read(buf, sizeof buf);
  const std::string_view head(buf, size_t(in.gcount()));
  for (const auto& f : formats())
    if (f.sniff(head)) return f.read(path);
  if (const ProfileFormat* f = format_by_name(path)) return f->read(path);
  // A JSON object: what the PyTorch profiler (Kineto) writes. Its reader is still to come.
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '{')
    throw ProfileError(common::printable(path) +
                       ": looks like a JSON trace (PyTorch profiler); this version reads only the formats: " +
                       [] {
                         std::string names;
                         for (const auto& f : formats()) names += (names.empty() ? "" : ", ") + f.name;
                         return names;
                       }());
  throw ProfileError(common::printable(path) + ": not a profile in any known format (" +
                     (head.empty() ? std::string("empty file") : std::string("unrecognised first bytes")) + ")");
}

}  // namespace ranks
