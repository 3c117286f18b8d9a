// Problems, not ranks (src/problems.hpp): the summary key `problems`. No table of its own: every
// problem is derived from tables the scan writes (stragglers, slow links, desync, what-if rows),
// so a scan read back gives the same list.
#include "analyses/builtin.hpp"
#include "problems.hpp"
#include "rows.hpp"

namespace straggler::analyses {
namespace {

class Problems : public Analysis {
 public:
  void tables(const RunResults&, tables::ResultTables&) const override {}
  std::vector<std::pair<std::string, std::string>> summary(const RunResults& res, const RunSummaryInput& all) const override {
    if (!res.cross) return {};
    return {{"problems", problems_json(build_problems(*res.cross, all.ranks))}};
  }
};

}  // namespace

std::unique_ptr<Analysis> problems() { return std::make_unique<Problems>(); }

}  // namespace straggler::analyses
