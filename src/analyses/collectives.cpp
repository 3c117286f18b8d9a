// Waits and blame per collective (collectives/decompose.hpp, replay.hpp): the communicators, their
// members, and per matched op its arrivals and decomposition. The per-op tables are never all in
// memory: each communicator's owner replays it again while writing (replay_owned).
#include "analyses/builtin.hpp"
#include "json_writer.hpp"
#include "tables/cross_tables.hpp"

namespace straggler::analyses {
namespace {
using namespace straggler::tables;

StreamedTables op_tables(const CrossRankResults& x, const std::vector<CommunicatorRow>& comms) {
  StreamedTables s;
  s.tables = {ops_table().materialize(std::vector<CommOp>{}), arrivals_table().materialize(std::vector<ArrivalRow>{})};
  s.rows = {0, 0};
  for (const auto& c : comms) {
    s.rows[0] += uint64_t(c.comm.matched_ops);
    s.rows[1] += uint64_t(c.comm.matched_ops) * c.comm.ranks.size();
  }
  s.produce = [&x, comms](const StreamedTables::Emit& emit) {
    replay_owned(x, [&](size_t ci, const ::collectives::CommReplay& rp) {
      if (rp.ops.empty()) return;
      std::vector<CommOp> ops;
      ops.reserve(rp.ops.size());
      for (const auto& o : rp.ops) ops.push_back({int32_t(ci), &o});
      emit(0, uint64_t(comms[ci].op_offset), ops_table().materialize(ops).columns);
      ops = {};
      std::vector<ArrivalRow> arrivals;
      for (const auto& a : rp.arrival)
        for (int64_t ns : a) arrivals.push_back({ns});
      emit(1, uint64_t(comms[ci].arrival_offset), arrivals_table().materialize(arrivals).columns);
    });
  };
  return s;
}

class Collectives : public Analysis {
 public:
  void tables(const RunResults& res, ResultTables& out) const override {
    if (!res.cross) return;
    const CrossRankResults& x = *res.cross;
    std::vector<CommunicatorRow> comms;
    std::vector<MemberRow> members;
    int64_t ops = 0, arrivals = 0;
    for (const auto& c : x.comms) {
      comms.push_back({c, ops, int64_t(members.size()), arrivals});
      ops += c.matched_ops, arrivals += c.matched_ops * int64_t(c.ranks.size());
      for (int32_t r : c.ranks) members.push_back({r});
    }
    TableData table = communicators_table().materialize(comms);
    table.attributes = {{"exchange_bytes", x.bytes_exchanged_total}};  // sent between processes, all together
    out.tables.push_back(std::move(table));
    std::vector<LayoutRow> layout;
    if (const auto& l = x.layout; l.layout)
      layout.push_back({l.layout->tp, l.layout->pp, l.layout->dp, topology::rank_order_name(l.layout->order), l.source,
                        l.how, l.consistency, l.notes});
    TableData layout_table_data = layout_table().materialize(layout);
    // The notes also when the layout is unknown (no row): `report` says them as the scan did.
    layout_table_data.attributes = {{"notes", x.layout.notes}};
    out.tables.push_back(std::move(layout_table_data));
    out.tables.push_back(members_table().materialize(members));
    out.streamed.push_back(op_tables(x, comms));
    std::vector<CollectiveHistogramBin> bins(ranks::LogHistogram::kBins);
    for (size_t b = 0; b < bins.size(); ++b)
      bins[b] = {x.acc.wait_hist.counts[b], x.acc.skew_hist.counts[b], x.acc.transfer_hist.counts[b]};
    out.tables.push_back(collective_histograms_table().materialize(bins));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults& res, const RunSummaryInput&) const override {
    if (!res.cross) return {};
    const CrossRankResults& x = *res.cross;
    std::vector<std::pair<std::string, std::string>> keys{{"layout", layout_json(x.layout)},
                                                          {"communicators", std::to_string(x.comms.size())},
                                                          {"exchange_bytes", std::to_string(x.bytes_exchanged_total)}};
    // Quantiles from the exactly merged log histograms (bin resolution, ~12%).
    const std::pair<const char*, const ranks::LogHistogram*> hists[] = {
        {"collective_wait_ms", &x.acc.wait_hist}, {"collective_skew_ms", &x.acc.skew_hist},
        {"collective_transfer_ms", &x.acc.transfer_hist}};
    for (const auto& [key, h] : hists) {
      JsonWriter j;
      j.begin_object();
      for (auto [name, q] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}}) j.key(name).value(h->quantile(q) / 1e6);
      keys.push_back({key, j.end_object().str()});
    }
    return keys;
  }

 private:
  // The parallel layout: given with --layout, or inferred from who talks to whom.
  static std::string layout_json(const ::collectives::LayoutFinding& f) {
    JsonWriter j;
    if (!f.layout) return j.null().str();
    const auto& l = *f.layout;
    j.begin_object().key("tp").value(l.tp).key("pp").value(l.pp).key("dp").value(l.dp);
    j.key("order").value(topology::rank_order_name(l.order)).key("source").value(f.source);
    j.key("consistency").value(f.consistency).key("notes").begin_array();
    if (!f.how.empty()) j.value("layout " + f.how);  // as before: first note
    for (const auto& n : f.notes) j.value(n);
    return j.end_array().end_object().str();
  }
};

}  // namespace

std::unique_ptr<Analysis> collectives() { return std::make_unique<Collectives>(); }

}  // namespace straggler::analyses
