#include "schedule.hpp"

#include "builder.hpp"
#include "rng.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <utility>

namespace sim {
namespace {

double with_faults(const RunCtx& c, const CollKey& k, bool p2p, double t);

double transfer_ns(const RunCtx& c, const CollKey& k, bool p2p) {
  const int n = int(k.members.size());
  if (c.fabric.on) {
    std::vector<int> hosts;
    for (int m : k.members) hosts.push_back(c.host_of(m));
    return with_faults(c, k, p2p, ring_transfer_ns(c.fabric, double(k.bytes) * k.algo_factor, hosts, !p2p));
  }
  const int h0 = c.host_of(k.members[0]);
  bool inter = false;
  for (int m : k.members) inter |= c.host_of(m) != h0;
  // NVLink inside a host, ~200 Gb/s NIC between hosts; ring latency grows with the step count.
  const double bw = inter ? 20e9 : 150e9;
  const double lat_us = p2p ? (inter ? 10.0 : 5.0) : (inter ? 15.0 + 2 * (n - 1) * 2.7 : 8.0 + 2 * (n - 1) * 0.6);
  return with_faults(c, k, p2p, lat_us * kUs + double(k.bytes) * k.algo_factor / bw * 1e9);
}

// slow_link and slow_p2p on top of the fabric's time.
double with_faults(const RunCtx& c, const CollKey& k, bool p2p, double t) {
  for (const Fault& f : c.o.faults) {
    if (f.kind != FaultKind::SlowLink) continue;
    bool on_a = false, on_b = false, off_a = false;
    for (int m : k.members) {
      const int h = c.host_of(m);
      on_a |= h == f.host_a;
      on_b |= h == f.host_b;
      off_a |= h != f.host_a;
    }
    if (f.host_a == f.host_b ? (on_a && off_a) : (on_a && on_b)) t *= f.factor;
  }
  if (p2p)
    for (const Fault& f : c.o.faults)
      if (f.kind == FaultKind::SlowP2P) t *= f.factor;
  return t;
}

RunCtx make_ctx(const Options& o) {
  RunCtx c;
  c.o = o;
  c.world = o.layout.world();
  c.hp.hosts = o.hosts;
  c.gph = c.hp.gpus_per_host(c.world);
  c.P = o.layout.pp;
  c.fabric = draw_fabric(o.fabric_seed.has_value() || o.nodes_per_pod > 0, o.fabric_seed.value_or(o.seed), o.nodes_per_pod);
  c.tp_key.assign(c.world, -1);
  c.dp_key.assign(c.world, -1);
  c.link_next.assign(c.world, -1);
  c.link_prev.assign(c.world, -1);
  c.wrap_out.assign(c.world, -1);
  c.wrap_in.assign(c.world, -1);
  for (const auto& g : topology::communicator_groups(o.layout)) {
    const int ci = int(c.comms.size());
    c.comms.push_back({g.name(), topology::group_kind_name(g.kind), g.ranks, 0});
    const int n = int(g.ranks.size());
    if (g.kind == topology::GroupKind::PP) {
      // One key per adjacent-stage link (1f1b: SendRecv both ways); gpipe / interleaved: two, the
      // forward direction and then the backward one (sends and receives pair per direction).
      const int per_link = o.schedule == "1f1b" ? 1 : 2;
      for (int s = 0; s + 1 < n; ++s) {
        c.link_next[g.ranks[s]] = c.link_prev[g.ranks[s + 1]] = int(c.keys.size());
        for (int d = 0; d < per_link; ++d) c.keys.push_back({ci, {g.ranks[s], g.ranks[s + 1]}, 8 << 20, 1.0, 0});
      }
      if (o.schedule == "interleaved" && n >= 2) {  // last stage's chunk k -> first stage's chunk k+1
        c.wrap_out[g.ranks[n - 1]] = c.wrap_in[g.ranks[0]] = int(c.keys.size());
        for (int d = 0; d < per_link; ++d) c.keys.push_back({ci, {g.ranks[0], g.ranks[n - 1]}, 8 << 20, 1.0, 0});
      }
      continue;
    }
    const bool tp = g.kind == topology::GroupKind::TP;
    for (int r : g.ranks) (tp ? c.tp_key : c.dp_key)[r] = int(c.keys.size());
    c.keys.push_back({ci, g.ranks, tp ? int64_t(16 << 20) : o.dp_bytes, 2.0 * (n - 1) / n, 0});
  }
  for (auto& k : c.keys) k.transfer_ns = transfer_ns(c, k, k.members.size() == 2 && c.comms[k.comm].kind == "pp");
  return c;
}

struct Inst {
  int64_t max_arrival = 0, end_base = 0;
  int32_t arrived = 0;
  bool done = false;
};

struct RankState {
  size_t cursor = 0;
  int64_t cpu = 0, compute_dep = 0, last_compute = 0, dp_done = 0, iter_begin = 0;
  int64_t sf[kStreamSlots] = {};  // when each stream is free (one per slot: kPpNextStream is 4)
  bool arrived = false;
  // --dp-overlap: gradient buckets launched whose kernels have not completed, in DP-stream order
  // (ops indices).
  // Also the isends of gpipe / interleaved runs (Op::async), each queued on its own stream.
  std::deque<size_t> dpq;
  bool q_arrived[kStreamSlots] = {};  // the first queued op of that stream has arrived
};

int hang_iteration(const Options& o, int rank) {
  int it = o.iterations;
  for (const Fault& f : o.faults)
    if ((f.kind == FaultKind::Hang || f.kind == FaultKind::Crash) && f.rank == rank) it = std::min(it, f.from_iter);
  return it;
}

bool crashed(const Options& o, int rank) {
  for (const Fault& f : o.faults)
    if (f.kind == FaultKind::Crash && f.rank == rank && f.from_iter < o.iterations && f.from_iter <= hang_iteration(o, rank))
      return true;
  return false;
}

// Crash runs: every desync an analyser can see. Per key, the first op not all members issued is a
// desync when some member launched it (it waits there: the launch exists, the kernel does not):
// the members that never issued it are missing. They are the crashed ranks (root cause) or victims
// blocked in another communicator. pp rows carry the group seq of the missing rank (all its p2p
// ops on every link of the group, as for hang) and the link's own index.
void crash_desync(Simulation& sim, const RunCtx& c) {
  // Ops each rank issued per key (written ones: completed, or launched and waiting).
  std::vector<std::vector<int32_t>> seq(c.world, std::vector<int32_t>(c.keys.size(), 0));
  for (int r = 0; r < c.world; ++r)
    for (const Op& op : sim.ranks[r].ops)
      if (op.type == OpType::Coll) ++seq[r][op.key];
  for (size_t k = 0; k < c.keys.size(); ++k) {
    const CollKey& key = c.keys[k];
    int32_t lo = INT32_MAX;
    for (int m : key.members) lo = std::min(lo, seq[m][k]);
    Desync d;
    d.crash = true;
    for (int m : key.members) (seq[m][k] == lo ? d.missing : d.blocked).push_back(m);
    if (d.blocked.empty()) continue;
    const CommInfo& ci = c.comms[key.comm];
    d.comm = ci.name;
    d.seq = d.link_seq = lo;
    if (ci.kind == "pp") {
      d.link = key.members;
      d.seq = 0;
      for (size_t j = 0; j < c.keys.size(); ++j)
        if (c.keys[j].comm == key.comm) d.seq += seq[d.missing[0]][j];
    } else {
      d.link_seq = -1;
    }
    for (int m : d.missing) d.root_cause |= sim.ranks[m].crashed_at >= 0;
    sim.desync.push_back(std::move(d));
  }
}

}  // namespace

int64_t kernels_per_iteration(const Options& opt) {
  Options o = opt;
  o.faults.clear();
  RunCtx c = make_ctx(o);
  RankTrace tr;
  std::vector<int32_t> seq(c.keys.size(), 0);
  build_ops(c, 0, tr, seq, 1, 2);
  int64_t n = 0;
  for (const Op& op : tr.ops) n += op.type == OpType::Compute || op.type == OpType::Coll;
  return n;
}

// Member r's kernel of a collective arrives at time t; the last arriver completes the collective
// (all members end at the last arrival + transfer) and puts the others back on `ready`.
void arrive(const RunCtx& c, const Options& opt, int r, const Op& op, Inst& in, int64_t t, std::vector<int>& ready) {
  const CollKey& key = c.keys[op.key];
  in.max_arrival = std::max(in.max_arrival, t);
  if (++in.arrived < int(key.members.size())) return;
  const double j =
      1.0 + 0.5 * opt.jitter * std::clamp(2.0 * unit_from_hash(hash4(opt.seed, op.key, op.seq, 1)) - 1.0, -1.0, 1.0);
  in.end_base = in.max_arrival + int64_t(key.transfer_ns * j);
  in.done = true;
  for (int m : key.members)
    if (m != r) ready.push_back(m);
}

// A completed collective on member r: its end, its stream, and what waits for it.
void complete(const RunCtx& c, const Options& opt, int r, RankState& s, Op& op, const Inst& in) {
  op.end = in.end_base + int64_t(hash4(opt.seed, op.key, op.seq, 2 + r) % 2001);  // 0..2 us per member
  s.sf[op.stream] = op.end;
  if (op.async) return;  // an isend: nothing waits for it
  if (op.key == c.dp_key[r]) s.dp_done = std::max(s.dp_done, op.end);  // (on the DP stream unless nccl_compute)
  else s.compute_dep = std::max(s.compute_dep, op.end);  // Megatron waits on TP / p2p results
}

// A collective op on rank r: arrives (once), and completes when its last member has arrived.
// Returns false while blocked; then the last arriver puts the others back on `ready`.
bool step_collective(const RunCtx& c, const Options& opt, int r, RankState& s, Op& op, std::vector<std::vector<Inst>>& inst,
                     std::vector<int>& ready) {
  Inst& in = inst[op.key][op.seq];
  if (!s.arrived) {
    const int64_t cost = op.cpu_end, gap = op.start;
    op.cpu_start = s.cpu;
    op.cpu_end = s.cpu + cost;
    s.cpu = op.cpu_end + gap;
    op.start = std::max({coll_launch_end(op) + 3 * kUs, s.sf[op.stream], s.last_compute});
    s.arrived = true;
    arrive(c, opt, r, op, in, op.start, ready);
  }
  if (!in.done) return false;  // blocked
  complete(c, opt, r, s, op, in);
  s.arrived = false;
  return true;
}

// --dp-overlap: a gradient bucket on the DP stream. The host launches it and goes on (the compute
// stream does not wait for it); its kernel queues on the DP stream (advance_dp).
bool overlapped(const RunCtx& c, int r, const Op& op) {
  return op.async || (c.o.dp_overlap && op.type == OpType::Coll && op.key == c.dp_key[r] && op.stream == kDpStream);
}
void launch_overlapped(RankState& s, Op& op, size_t i) {
  const int64_t cost = op.cpu_end, gap = op.start;
  op.cpu_start = s.cpu;
  op.cpu_end = s.cpu + cost;
  s.cpu = op.cpu_end + gap;
  op.start = std::max(coll_launch_end(op) + 3 * kUs, s.last_compute);  // launched, and its gradients computed
  s.dpq.push_back(i);
}
// Runs rank r's queued ops (DP buckets, isends) as far as they complete: per stream in queue
// order, each starting when the previous one on its stream ended.
void advance_dp(const RunCtx& c, const Options& opt, int r, RankState& s, RankTrace& tr,
                std::vector<std::vector<Inst>>& inst, std::vector<int>& ready) {
  for (bool progress = true; progress;) {
    progress = false;
    bool seen[kStreamSlots] = {};
    for (size_t qi = 0; qi < s.dpq.size(); ++qi) {
      Op& op = tr.ops[s.dpq[qi]];
      if (std::exchange(seen[op.stream], true)) continue;  // not the first of its stream
      Inst& in = inst[op.key][op.seq];
      if (!s.q_arrived[op.stream]) {
        op.start = std::max(op.start, s.sf[op.stream]);
        s.q_arrived[op.stream] = true;
        arrive(c, opt, r, op, in, op.start, ready);
      }
      if (!in.done) continue;
      complete(c, opt, r, s, op, in);
      s.q_arrived[op.stream] = false;
      s.dpq.erase(s.dpq.begin() + long(qi));
      progress = true;
      break;
    }
  }
}
bool queued_on(const RankState& s, const RankTrace& tr, uint8_t stream) {
  for (size_t i : s.dpq)
    if (tr.ops[i].stream == stream) return true;
  return false;
}

// Any other op: its times follow from the host cursor and the streams it waits on.
void step_local(RankState& s, RankTrace& tr, Op& op) {
  const int64_t cost = op.cpu_end, gap = op.start, dur = op.end;
  switch (op.type) {
    case OpType::IterBegin:
      s.iter_begin = s.cpu;
      s.cpu += cost;  // host stall (dataloader): the GPU runs dry
      op.cpu_start = s.iter_begin;
      op.cpu_end = s.cpu;
      op.start = op.end = 0;
      s.dp_done = 0;
      break;
    case OpType::H2D:
    case OpType::D2H:
    case OpType::Compute:
      op.cpu_start = s.cpu;
      op.cpu_end = s.cpu + cost;
      s.cpu = op.cpu_end + gap;
      if (op.waits_dp) s.compute_dep = std::max(s.compute_dep, s.dp_done);
      op.start = std::max({op.cpu_end + (op.type == OpType::Compute ? 3 * kUs : 2 * kUs), s.sf[kCompute],
                           op.type == OpType::Compute ? s.compute_dep : 0});
      op.end = op.start + std::max<int64_t>(dur, 1000);
      s.sf[kCompute] = op.end;
      if (op.type == OpType::Compute) s.last_compute = op.end;
      break;
    case OpType::Sync: {
      op.cpu_start = s.cpu;
      const int64_t busy = *std::max_element(std::begin(s.sf), std::end(s.sf));
      op.cpu_end = std::max(s.cpu + 1500, busy) + 2 * kUs;
      op.start = op.cpu_start;
      op.end = op.cpu_end;
      s.cpu = op.cpu_end + gap;
      if (!op.mid_iter) tr.iter_cpu.push_back({s.iter_begin, op.cpu_end + 10 * kUs});  // loss.item() ends it
      break;
    }
    case OpType::Stall:  // host time only; gc_pause first waits for the GPU to run dry, then idles it
      op.cpu_start = s.cpu;
      if (op.drain) s.cpu = std::max(s.cpu, *std::max_element(std::begin(s.sf), std::end(s.sf)));
      s.cpu += cost;
      op.cpu_end = s.cpu;
      op.start = op.end = 0;
      break;
    case OpType::Coll: break;
  }
}

// Discrete events: run each rank until it blocks in a collective not all members reached yet;
// the last arriver completes it and wakes the others. Timing depends only on the data flow.
std::vector<RankState> run_events(const RunCtx& c, const Options& opt, Simulation& sim, std::vector<std::vector<Inst>>& inst) {
  std::vector<RankState> st(c.world);
  std::vector<int> ready;
  for (int r = c.world - 1; r >= 0; --r) ready.push_back(r);
  while (!ready.empty()) {
    const int r = ready.back();
    ready.pop_back();
    RankState& s = st[r];
    RankTrace& tr = sim.ranks[r];
    advance_dp(c, opt, r, s, tr, inst, ready);
    while (s.cursor < tr.ops.size()) {
      Op& op = tr.ops[s.cursor];
      if (overlapped(c, r, op)) {
        launch_overlapped(s, op, s.cursor);
        advance_dp(c, opt, r, s, tr, inst, ready);
      } else if (op.type == OpType::Coll) {
        if (!s.arrived && queued_on(s, tr, op.stream)) break;  // a stream runs in order: after its queued isends
        if (!step_collective(c, opt, r, s, op, inst, ready)) break;
      } else {
        if (!s.dpq.empty() && (op.waits_dp || op.drain || op.type == OpType::Sync)) break;  // waits for the buckets
        step_local(s, tr, op);
      }
      ++s.cursor;
    }
  }
  return st;
}

// A rank blocked behind gradient buckets that never complete (--dp-overlap, a peer gone): the host
// issues on up to the iteration's sync, which never returns. Those launches and copies get no GPU
// rows (pending). Returns how many ops are written.
size_t host_runs_on(RankState& s, RankTrace& tr) {
  size_t i = s.cursor;
  for (; i < tr.ops.size(); ++i) {
    Op& op = tr.ops[i];
    if (op.type == OpType::Sync || op.type == OpType::Coll || op.type == OpType::IterBegin) break;
    const int64_t cost = op.cpu_end, gap = op.start;
    op.cpu_start = s.cpu;
    op.cpu_end = s.cpu + cost;  // Stall: host time (the GPU never runs dry: no drain)
    s.cpu = op.cpu_end + (op.type == OpType::Stall ? 0 : gap);
    op.start = op.end = 0;
    op.pending = op.type != OpType::Stall;
  }
  return i;
}

// Hang, crash: ranks that could not finish end their profile where the host blocks: in the
// collective it waits in, or (--dp-overlap) at the sync that waits for blocked gradient buckets.
void end_blocked_ranks(RunCtx& c, const Options& opt, Simulation& sim, std::vector<RankState>& st,
                       const std::vector<std::vector<Inst>>& inst) {
  bool any_hang = false, any_crash = false;
  for (const Fault& f : opt.faults) any_hang |= f.kind == FaultKind::Hang || f.kind == FaultKind::Crash;
  for (int r = 0; r < c.world; ++r)
    if (crashed(opt, r) && st[r].cursor == sim.ranks[r].ops.size())  // not blocked before it died
      sim.ranks[r].crashed_at = st[r].cpu, any_crash = true;
  for (int r = 0; r < c.world; ++r) {
    RankTrace& tr = sim.ranks[r];
    RankState& s = st[r];
    if (s.cursor < tr.ops.size()) {
      if (!any_hang) throw std::logic_error("straggler-sim: schedule deadlock (bug)");
      const bool launched = tr.ops[s.cursor].type == OpType::Coll && s.arrived;
      const size_t n = launched ? s.cursor + 1 : s.dpq.empty() ? s.cursor : host_runs_on(s, tr);
      tr.ops.resize(n);
      if (launched) tr.ops.back().pending = true;
    }
    for (size_t i : s.dpq) tr.ops[i].pending = true;  // launched buckets that never ran
    for (const Op& op : tr.ops)
      if (op.pending) {
        tr.pending_since = op.cpu_start;
        break;
      }
    tr.iterations_written = int(tr.iter_cpu.size());
  }
  for (size_t k = 0; k < c.keys.size(); ++k)
    for (const Inst& in : inst[k]) c.comms[c.keys[k].comm].ops += in.done;
  if (any_crash) crash_desync(sim, c);
}

// The truth of a hang: on each communicator of the hung rank, the op it never issued.
void record_hang_desyncs(const RunCtx& c, const Options& opt, const std::vector<std::vector<int32_t>>& seq, Simulation& sim) {
  for (const Fault& f : opt.faults) {
    if (f.kind != FaultKind::Hang) continue;
    for (const CommInfo& ci : c.comms) {
      if (std::find(ci.ranks.begin(), ci.ranks.end(), f.rank) == ci.ranks.end()) continue;
      int64_t n = 0;  // the hung rank's own issue count on this communicator (pp: its p2p ops)
      for (size_t k = 0; k < c.keys.size(); ++k)
        if (c.comms[c.keys[k].comm].name == ci.name) n += seq[f.rank][k];
      Desync d;
      d.comm = ci.name, d.seq = n, d.missing = {f.rank};
      sim.desync.push_back(std::move(d));
    }
  }
}

void host_clocks(const Options& opt, Simulation& sim) {
  Rng clock(hash4(opt.seed, 0xC10C, 0, 0));
  for (int h = 0; h < opt.hosts; ++h) {
    const double e = clock.uniform(-opt.clock_offset_ms, opt.clock_offset_ms);
    sim.host_offset_ns.push_back(h == 0 ? 0 : int64_t(std::llround(e * 1e6)));
  }
  Rng rate(hash4(opt.seed, 0xD21F, 0, 0));  // its own stream: offsets stay as without drift
  for (int h = 0; h < opt.hosts; ++h) {
    const double d = rate.uniform(-opt.clock_drift_ppm, opt.clock_drift_ppm);
    sim.host_drift_ppm.push_back(h == 0 ? 0.0 : d);
  }
}

Simulation simulate(const Options& opt) {
  Simulation sim;
  sim.opt = opt;
  RunCtx c = make_ctx(opt);
  sim.world = c.world;
  sim.gpus_per_host = c.gph;
  sim.iterations = opt.iterations;
  sim.ranks.resize(c.world);

  // Op lists; each rank has its own RNG stream, so the result is independent of any ordering.
  std::vector<std::vector<int32_t>> seq(c.world);
  for (int r = 0; r < c.world; ++r) {
    seq[r].assign(c.keys.size(), 0);
    build_ops(c, r, sim.ranks[r], seq[r], 0, hang_iteration(opt, r));
  }
  std::vector<std::vector<Inst>> inst(c.keys.size());
  for (size_t k = 0; k < c.keys.size(); ++k) {
    int32_t n = 0;
    for (int m : c.keys[k].members) n = std::max(n, seq[m][k]);
    inst[k].resize(n);
  }
  std::vector<RankState> st = run_events(c, opt, sim, inst);
  end_blocked_ranks(c, opt, sim, st, inst);
  record_hang_desyncs(c, opt, seq, sim);
  host_clocks(opt, sim);
  sim.comms = std::move(c.comms);
  sim.keys = std::move(c.keys);
  return sim;
}

}  // namespace sim
