// Prints the generated part of docs/hdf5-layout.md (every declared table's columns), or with
// --check FILE compares it with what FILE holds between the markers (exit 1 when it differs).
// scripts/update_layout_doc.sh rewrites the doc; the ctest layout_doc_current runs --check.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "tables/catalog.hpp"

namespace {
constexpr const char* kBegin = "<!-- BEGIN GENERATED: src/tables (scripts/update_layout_doc.sh) -->\n";
constexpr const char* kEnd = "<!-- END GENERATED -->\n";
}  // namespace

int main(int argc, char** argv) {
  const std::string generated = straggler::tables::layout_markdown();
  if (argc == 1) {
    std::cout << kBegin << generated << kEnd;
    return 0;
  }
  if (argc != 3 || std::string(argv[1]) != "--check") {
    std::cerr << "usage: layout_doc [--check docs/hdf5-layout.md]\n";
    return 2;
  }
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t b = doc.find(kBegin), e = doc.find(kEnd);
  if (!in || b == std::string::npos || e == std::string::npos || e < b) {
    std::cerr << argv[2] << ": no generated section (markers missing)\n";
    return 1;
  }
  if (doc.substr(b + std::string(kBegin).size(), e - b - std::string(kBegin).size()) != generated) {
    std::cerr << argv[2] << ": the table column lists differ from the declarations in src/tables; run "
                 "scripts/update_layout_doc.sh\n";
    return 1;
  }
  return 0;
}
