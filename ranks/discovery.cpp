#include "ranks/discovery.hpp"

#include <cctype>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "common/atomic_file.hpp"
#include "common/regex.hpp"
#include "ranks/profile_reader.hpp"

namespace ranks {
// The leaf library's text, errors and statistics (common/).
using common::printable;
using common::UsageError;
namespace fs = std::filesystem;

namespace {

// The profile formats' file extensions, as "*.sqlite, *.json" and as a regex "(?:\.sqlite|\.json)".
std::string extension_list() {
  std::string out;
  for (const auto& f : profile_formats())
    for (const auto& e : f.extensions) out += (out.empty() ? "*" : ", *") + e;
  return out;
}
// What to run first for a file of a reader's tool it cannot read itself (ProfileFormat::convert_first).
std::optional<std::string> convert_hint(const std::string& name) {
  for (const auto& f : profile_formats())
    for (const auto& [ext, hint] : f.convert_first)
      if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) return hint;
  return std::nullopt;
}
std::string extension_pattern() {
  std::string out;
  for (const auto& f : profile_formats())
    for (const auto& e : f.extensions) {
      out += out.empty() ? "(?:" : "|";
      for (char c : e) out += std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c) : std::string("\\") + c;
    }
  return out.empty() ? "(?!)" : out + ")";
}

// The number in `text` that the first matching group of `re` captures (at most 9 digits).
std::optional<int> capture_int(const std::string& text, const common::Regex& re) {
  const std::optional<std::string> s = re.first_group(text);
  if (!s || s->empty() || s->size() > 9 || !std::all_of(s->begin(), s->end(), ::isdigit)) return std::nullopt;
  return std::stoi(*s);
}

void add_file(const fs::path& p, std::vector<ProfileFile>& out) {
  ProfileFile f;
  f.path = p.string();
  std::error_code ec;
  f.size = int64_t(fs::file_size(p, ec));
  if (ec) f.size = 0;
  out.push_back(std::move(f));
}

std::string trim(std::string s) {
  auto ws = [](unsigned char c) { return std::isspace(c); };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), ws));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), ws).base(), s.end());
  return s;
}

std::map<std::string, std::vector<RankMapEntry>> read_rank_map(const std::string& file,
                                                                const std::vector<ProfileFile>& files) {
  std::ifstream in(file);
  if (!in) throw UsageError(printable(file) + ": cannot read rank map");
  std::map<std::string, std::vector<RankMapEntry>> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    size_t pos = 0;
    for (size_t comma; (comma = line.find(',', pos)) != std::string::npos; pos = comma + 1)
      cells.push_back(trim(line.substr(pos, comma - pos)));
    cells.push_back(trim(line.substr(pos)));
    if (lineno == 1 && cells.size() == 3 && cells[2] == "rank") continue;  // header
    auto bad = [&](const std::string& why) {
      return UsageError(printable(file + ":" + std::to_string(lineno) + ": " + why + " (expected file,key,rank)"));
    };
    if (cells.size() != 3) throw bad("need 3 columns");
    RankMapEntry e;
    try {
      size_t used = 0;
      e.rank = std::stoi(cells[2], &used);
      if (used != cells[2].size() || e.rank < 0) throw bad("rank must be a non-negative integer");
      const std::string& key = cells[1];
      if (key.rfind("pid=", 0) == 0) e.pid = std::stoll(key.substr(4));
      else if (key.rfind("device=", 0) == 0) e.device = std::stoll(key.substr(7));
      else if (!key.empty()) e.device = std::stoll(key);
    } catch (const std::logic_error&) {
      throw bad("unreadable number");
    }
    // Match the listed file by path, or by file name when unique.
    std::string match;
    for (const auto& f : files)
      if (f.path == cells[0] || fs::path(f.path).filename() == cells[0]) {
        if (!match.empty() && fs::path(f.path).filename() == cells[0] && f.path != cells[0])
          throw bad("file name '" + cells[0] + "' is ambiguous: give the path");
        match = f.path;
      }
    if (match.empty()) throw bad("no discovered profile matches '" + cells[0] + "'");
    out[match].push_back(e);
  }
  return out;
}

}  // namespace

namespace {

// A regular file (or a link to one) is a profile; a name that does not resolve (broken link,
// permission) is kept so that reading it says why; anything else is skipped.
void consider(const fs::path& p, Discovery& d) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (ec || st.type() == fs::file_type::not_found || fs::is_regular_file(st)) {
    add_file(p, d.files);
  } else {
    d.skipped.push_back({p.string(), std::string("not a regular file (") + common::file_type_name(st.type()) + ")", std::nullopt});
  }
}

}  // namespace

namespace {

// What names a rank in a file name: --rank-pattern, or rank_12 / x.12.<ext>.
common::Regex rank_regex(const DiscoveryOptions& opt) {
  try {
    return common::Regex(opt.rank_pattern.empty() ? R"(rank[-_]?(\d+)|\.(\d+))" + extension_pattern() + "$" : opt.rank_pattern,
                         opt.rank_pattern.empty());
  } catch (const std::invalid_argument& e) {
    throw UsageError("--rank-pattern: invalid regular expression '" + printable(opt.rank_pattern) + "' (" +
                     printable(e.what()) + ")");
  }
}

// The rank (or node) each file name gives: --rank-pattern, or rank_12 / x.12.<ext>; node_3, host-3.
void name_ranks(Discovery& d, const DiscoveryOptions& opt) {
  const common::Regex node_re(R"((?:node|host|nid)[-_]?(\d+))", true),
      trailing_re(R"((\d+))" + extension_pattern() + "$");
  const common::Regex rank_re = rank_regex(opt);
  auto rank_of = [&](const std::string& path) { return capture_int(fs::path(path).filename().string(), rank_re); };
  for (auto& f : d.files) {
    const std::string name = fs::path(f.path).filename().string();
    f.rank_from_name = rank_of(f.path);
    if (!f.rank_from_name) {
      f.node_from_name = capture_int(name, node_re);
      if (!f.node_from_name) f.node_from_name = capture_int(name, trailing_re);
    }
  }
  for (auto& s : d.skipped) s.rank_from_name = rank_of(s.path);
  if (!opt.rank_pattern.empty() &&
      std::none_of(d.files.begin(), d.files.end(), [](auto& f) { return f.rank_from_name.has_value(); }))
    throw UsageError("--rank-pattern '" + printable(opt.rank_pattern) + "' gives a rank for no file name (e.g. " +
                     printable(fs::path(d.files[0].path).filename().string()) +
                     "): it needs a match whose first matching capture group is a number");
}

}  // namespace

Discovery discover(const std::vector<std::string>& inputs, const DiscoveryOptions& opt) {
  Discovery d;
  const common::Regex rank_re = rank_regex(opt);
  for (const auto& in : inputs) {
    std::error_code ec;
    fs::path p(in);
    if (fs::is_directory(p, ec)) {
      fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
      if (ec) throw UsageError(printable(in) + ": cannot list directory (" + ec.message() + ")");
      for (; it != end; it.increment(ec)) {
        if (ec) throw UsageError(printable(in) + ": cannot list directory (" + ec.message() + ")");
        const auto name = it->path().filename().string();
        if (!name.empty() && name[0] == '.') {
          if (it->is_directory(ec)) it.disable_recursion_pending();
          continue;
        }
        // A .json beside the traces that is none (a config, a summary, truth.json) is no profile
        // of the run: passed over like any other file, neither read nor reported. One whose name
        // gives a rank (rank-3.json) is a rank's profile whatever it holds: read, and reported
        // when unreadable (an empty file of a profiler killed before it wrote).
        if (has_profile_extension(name) &&
            (not_a_profile(it->path().string()).empty() || capture_int(name, rank_re)))
          consider(it->path(), d);
        else if (const auto hint = convert_hint(name)) d.skipped.push_back({it->path().string(), *hint, std::nullopt});
      }
    } else if (fs::exists(fs::symlink_status(p, ec))) {
      consider(p, d);
    } else {
      throw UsageError(printable(in) + ": no such file or directory");
    }
  }
  std::sort(d.files.begin(), d.files.end(), [](auto& a, auto& b) { return a.path < b.path; });
  // One name given twice (`run` and `./run/rank_0.sqlite`): silently once.
  auto same_name = [](const ProfileFile& a, const ProfileFile& b) {
    return a.path == b.path || fs::absolute(a.path).lexically_normal() == fs::absolute(b.path).lexically_normal();
  };
  d.files.erase(std::unique(d.files.begin(), d.files.end(), same_name), d.files.end());
  // Two names of one file (a symlink, a hard link): the first in path order is read, the others
  // are reported (otherwise one profile would be analysed as two ranks).
  {
    std::map<std::pair<dev_t, ino_t>, std::string> first;
    std::vector<ProfileFile> kept;
    for (auto& f : d.files) {
      struct stat st {};
      if (::stat(f.path.c_str(), &st) == 0) {
        auto [it, fresh] = first.emplace(std::make_pair(st.st_dev, st.st_ino), f.path);
        if (!fresh) {
          d.skipped.push_back({f.path, "same file as " + printable(it->second) + " (a second name of it)", std::nullopt});
          continue;
        }
      }
      kept.push_back(std::move(f));
    }
    d.files = std::move(kept);
  }
  std::sort(d.skipped.begin(), d.skipped.end(), [](auto& a, auto& b) { return a.path < b.path; });
  if (d.files.empty()) {
    std::string where = inputs.empty() ? "" : printable(inputs[0]);
    if (!d.skipped.empty())
      where += " (skipped " + printable(d.skipped[0].path) + ": " + d.skipped[0].reason +
               (d.skipped.size() > 1 ? ", and " + std::to_string(d.skipped.size() - 1) + " more" : "") + ")";
    throw UsageError("no profile (" + extension_list() + ") found in " + where);
  }

  name_ranks(d, opt);
  if (!opt.rank_map_file.empty()) d.rank_map = read_rank_map(opt.rank_map_file, d.files);
  return d;
}

}  // namespace ranks
