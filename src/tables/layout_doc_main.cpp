// The column lists of docs/hdf5-layout.md, generated from the table declarations (src/tables).
// The doc holds them in blocks `<!-- BEGIN GENERATED: /group -->` ... `<!-- END GENERATED -->`,
// each listing the tables of that group and the groups below it.
//   layout_doc --check FILE   exit 1 when a block differs or a declared table is in no block
//   layout_doc --update FILE  rewrite the blocks (scripts/update_layout_doc.sh)
// With a second file (scripts/scan_tables.json), the same for the tables as JSON (tables_json()).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "tables/catalog.hpp"

namespace {
const std::string kBegin = "<!-- BEGIN GENERATED: ", kBeginEnd = " -->\n", kEnd = "<!-- END GENERATED -->\n";

struct Result {
  std::string text;      // the doc with every block regenerated
  std::string problems;  // one line each
};

Result regenerate(const std::string& doc) {
  Result r;
  std::vector<std::string> prefixes;
  size_t at = 0;
  for (size_t b; (b = doc.find(kBegin, at)) != std::string::npos;) {
    const size_t name_end = doc.find(kBeginEnd, b), e = doc.find(kEnd, b);
    if (name_end == std::string::npos || e == std::string::npos) {
      r.problems += "a block has no end marker\n";
      break;
    }
    const std::string prefix = doc.substr(b + kBegin.size(), name_end - b - kBegin.size());
    prefixes.push_back(prefix);
    r.text += doc.substr(at, name_end + kBeginEnd.size() - at) + straggler::tables::layout_markdown(prefix) + kEnd;
    at = e + kEnd.size();
  }
  r.text += doc.substr(at);
  for (const auto& s : straggler::tables::all_schemas()) {
    bool listed = false;
    for (const auto& p : prefixes) listed = listed || straggler::tables::under(s.path, p);
    if (!listed) r.problems += "table " + s.path + " (" + s.description + ") is in no generated block\n";
  }
  return r;
}
}  // namespace

// The JSON list of tables in `path`: rewritten (--update) or compared; false when it differs.
bool json_current(const std::string& mode, const std::string& path) {
  const std::string want = straggler::tables::tables_json();
  if (mode == "--update") {
    std::ofstream(path) << want;
    return true;
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str() == want) return true;
  std::cerr << path << ": differs from the declarations in src/tables; run scripts/update_layout_doc.sh\n";
  return false;
}

int main(int argc, char** argv) {
  const std::string mode = argc == 3 || argc == 4 ? argv[1] : "";
  if (mode != "--check" && mode != "--update") {
    std::cerr << "usage: layout_doc --check|--update docs/hdf5-layout.md [scripts/scan_tables.json]\n";
    return 2;
  }
  const bool json_ok = argc < 4 || json_current(mode, argv[3]);
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) {
    std::cerr << argv[2] << ": cannot read\n";
    return 1;
  }
  const Result r = regenerate(ss.str());
  if (mode == "--update") std::ofstream(argv[2]) << r.text;
  else if (r.text != ss.str())
    std::cerr << argv[2] << ": the column lists differ from the declarations in src/tables; run "
                 "scripts/update_layout_doc.sh\n";
  std::cerr << r.problems;
  return json_ok && r.problems.empty() && (mode == "--update" || r.text == ss.str()) ? 0 : 1;
}
