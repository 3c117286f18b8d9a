// Hangs (collectives/desync.hpp): per communicator the first op some members never reached, who
// stopped by itself, and communicators whose members' captures merely ended early.
#include "analyses/builtin.hpp"
#include "tables/cross_tables.hpp"

namespace straggler::analyses {
namespace {

class Desync : public Analysis {
 public:
  void tables(const RunResults& res, tables::ResultTables& out) const override {
    if (!res.cross) return;
    out.tables.push_back(tables::desync_table().materialize(res.cross->desync));
    out.tables.push_back(tables::capture_ended_table().materialize(res.cross->capture_ended));
  }
};

}  // namespace

std::unique_ptr<Analysis> desync() { return std::make_unique<Desync>(); }

}  // namespace straggler::analyses
