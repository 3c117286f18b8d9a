// The op list of each rank: the 1F1B pipeline of a Megatron-style transformer, with the original
// faults and the root-cause patterns (gc_pause .. slow_host) planted into it.
#include "builder.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "rng.hpp"

namespace sim {
namespace {

// One transformer layer's work in issue order: compute kernels (base duration, us) and TP
// all-reduces (kNcclAllReduce). The last pipeline stage adds the loss around them.
struct Step {
  Kernel k;
  double us;
};
constexpr Step kFwdLayer[] = {{kLnFwd, 25}, {kGemmFwd, 180}, {kFlashFwd, 140}, {kGemmFwd, 70}, {kNcclAllReduce, 0},
                              {kLnFwd, 25}, {kGemmFwd, 240}, {kElementwise, 35}, {kGemmFwd, 240}, {kNcclAllReduce, 0}};
constexpr Step kBwdLayer[] = {{kGemmDgrad, 240}, {kGemmWgrad, 240}, {kElementwise, 45}, {kGemmDgrad, 240},
                              {kGemmWgrad, 240}, {kNcclAllReduce, 0}, {kLnBwd, 40}, {kGemmDgrad, 70},
                              {kGemmWgrad, 70}, {kFlashBwd, 330}, {kGemmDgrad, 180}, {kGemmWgrad, 180},
                              {kNcclAllReduce, 0}, {kLnBwd, 40}};
constexpr Step kLossFwd = {kSoftmax, 30}, kLossBwd = {kElementwise, 20};
constexpr int kDpBuckets = 4;  // gradient buckets all-reduced per iteration

// What the root-cause faults (kinds GcPause .. SlowHost) do to one rank.
struct Patterns {
  struct Gc {
    double every = 0, ms = 0;
    int k = 0;          // next pause
    double next = -1;   // its position in compute launches counted from iteration 1; -1: not drawn yet
  };
  std::vector<Gc> gc;
  double sync_ms = 0, compile_ms = 0, slow_host_us = 0, hot_share = 0;
  bool nccl_compute = false;
  std::vector<int32_t> h2d;  // bytes of each extra copy before a forward (one per h2d fault)
  int small = 0;
  Patterns(const Options& o, int rank) {
    for (const Fault& f : o.faults) {
      if (!is_pattern(f.kind) || !f.on(rank)) continue;
      switch (f.kind) {
        case FaultKind::GcPause: gc.push_back({f.every, f.ms}); break;
        case FaultKind::Sync: sync_ms += f.ms; break;
        case FaultKind::NcclCompute: nccl_compute = true; break;
        case FaultKind::H2D: h2d.push_back(int32_t(std::llround(f.mib * (1 << 20)))); break;
        case FaultKind::SmallKernels: small += f.count; break;
        case FaultKind::Compile: compile_ms += f.ms; break;
        case FaultKind::Hotspot: hot_share = f.share; break;
        case FaultKind::SlowHost: slow_host_us = f.us; break;
        default: break;
      }
    }
  }
};

// Builds one rank's op list in CPU issue order. Healthy runs and the original faults draw only
// from rng_ (their output is fixed); the root-cause patterns draw from xr_, so a pattern leaves
// the rank's other draws (kernel jitter, launch costs) as in the healthy run of the same seed.
class Builder {
 public:
  Builder(const RunCtx& c, int rank, RankTrace& tr, std::vector<int32_t>& seq)
      : c_(c), o_(c.o), rank_(rank), stage_(o_.layout.pp_rank(rank)), rng_(hash4(o_.seed, 0x5EED, rank, 0)),
        xr_(hash4(o_.seed, 0xF14D, rank, 0)), nr_(hash4(o_.seed, 0x401E, rank, 0)), pat_(o_, rank), ops_(tr.ops),
        seq_(seq) {
    if (pat_.hot_share > 0) hotspot_factors();
    if (o_.gpu_spread > 0) speed_ = 1.0 + nr_.uniform(-o_.gpu_spread, o_.gpu_spread);
  }

  void iteration(int it) {
    it_ = it;
    double stall_ms = 0;
    for (const Fault& f : o_.faults)
      if (f.kind == FaultKind::HostDelay && f.rank == rank_ && it >= f.from_iter) stall_ms += f.ms;
    stall_ms += draw_noise();
    push(OpType::IterBegin, 0, int64_t(stall_ms * 1e6), 0, 0);
    forwards_in_it_ = 0;
    push(OpType::H2D, 0, int64_t(rng_.uniform(9, 12) * kUs), int64_t(kH2DBytes / 24e9 * 1e9 * jit()), gap()).bytes =
        kH2DBytes;
    backwards_in_it_ = 0;
    pipeline();
    if (c_.dp_key[rank_] >= 0 && !o_.dp_overlap)  // gradient buckets after the last backward, on the DP stream
      for (int b = 0; b < kDpBuckets; ++b) dp_bucket();
    for (int k = 0; k < 4; ++k) compute(kOptimizer, 90, false, k == 0);
    push(OpType::D2H, 0, int64_t(rng_.uniform(7, 9) * kUs), int64_t(2.2 * kUs), gap()).bytes = kD2HBytes;
    push(OpType::Sync, 0, 0, 0, int64_t(rng_.uniform(40, 90) * kUs));
  }

 private:
  double jit() {
    const double z = std::clamp(rng_.normal(), -3.0, 3.0);
    return std::max(0.2, 1.0 + o_.jitter * z);
  }
  int64_t gap() { return int64_t(rng_.uniform(4, 10) * kUs); }
  double xjit() {  // as jit(), from the patterns' own stream
    const double z = std::clamp(xr_.normal(), -3.0, 3.0);
    return std::max(0.2, 1.0 + o_.jitter * z);
  }
  Op& push(OpType t, uint8_t kernel, int64_t cpu_cost, int64_t dur, int64_t gap_after) {
    Op op;
    op.type = t;
    op.kernel = kernel;
    op.cpu_end = cpu_cost;
    op.end = dur;
    op.start = gap_after;
    op.iter = it_;
    ops_.push_back(op);
    return ops_.back();
  }
  // Options::hiccup_prob etc.: this iteration's GPU speed wobble and host hiccup (from nr_ only,
  // drawn only when asked for). Returns the hiccup's ms when it falls on the iteration start;
  // otherwise it comes before the forward of microbatch hiccup_forward_.
  double draw_noise() {
    wobble_ = 1.0, hiccup_forward_ = -1, hiccup_ms_ = 0;
    if (it_ == 0) return 0;
    if (o_.iteration_wobble > 0) wobble_ = std::max(0.5, 1.0 + o_.iteration_wobble * std::clamp(nr_.normal(), -3.0, 3.0));
    if (o_.hiccup_prob <= 0 || !nr_.coin(o_.hiccup_prob)) return 0;
    const double ms = std::min(8.0, std::exp(0.8 * nr_.normal())) * o_.hiccup_ms;
    if (nr_.coin()) return ms;
    hiccup_forward_ = int(nr_.range(0, o_.microbatches - 1)), hiccup_ms_ = ms;
    return 0;
  }
  double compute_factor(bool in_mb) const {
    double f = (it_ == 0 ? 1.5 : wobble_) * speed_;  // warm-up iteration
    for (const Fault& x : o_.faults) {
      if (x.kind == FaultKind::SlowGpu && x.rank == rank_ && it_ >= x.from_iter) f *= x.factor;
      if (x.kind == FaultKind::StageImbalance && in_mb && x.stage == stage_) f *= x.factor;
    }
    return f;
  }
  double extra_work() const {
    double f = 1.0;
    for (const Fault& x : o_.faults)
      if (x.kind == FaultKind::ExtraWork && x.rank == rank_ && it_ >= x.from_iter) f *= x.factor;
    return f;
  }
  void compute(Kernel k, double base_us, bool in_mb, bool waits_dp = false) {
    double f = compute_factor(in_mb) * (in_mb ? hot_[k == kFlashBwd] : 1.0);
    for (const Fault& x : o_.faults)
      if (x.kind == FaultKind::SlowKernel && x.count == int(k)) f *= x.factor;
    auto one = [&](bool dp) {
      before_launch();
      Op& op = push(OpType::Compute, k, int64_t(rng_.uniform(5, 8) * kUs), int64_t(base_us * kUs * f * jit()), gap());
      op.waits_dp = dp;
      slow_launch(op);
    };
    one(waits_dp);
    if (!in_mb) return;
    extra_acc_ += extra_work() - 1.0;  // extra launches of the same kernel, spread evenly
    for (; extra_acc_ >= 1.0 - 1e-9; extra_acc_ -= 1.0) one(false);
  }
  Op& coll(int key, Api api, uint8_t stream, Kernel k) {
    const bool group = api != Api::AllReduce;
    Op& op = push(OpType::Coll, k, int64_t((group ? rng_.uniform(18, 24) : rng_.uniform(12, 16)) * kUs), 0, gap());
    op.key = key;
    op.seq = seq_[key]++;
    op.api = api;
    op.stream = pat_.nccl_compute ? uint8_t(kCompute) : stream;  // nccl_compute: NCCL on the compute stream
    return op;
  }
  void tp_ar() {
    if (c_.tp_key[rank_] >= 0) coll(c_.tp_key[rank_], Api::AllReduce, kTpStream, kNcclAllReduce);
  }
  void layer(const Step* steps, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (steps[i].k == kNcclAllReduce) tp_ar();
      else compute(steps[i].k, steps[i].us, true);
    }
  }
  // Layers of one model chunk (all of the stage's layers unless interleaved).
  int chunk_layers() const { return o_.layers / o_.virtual_stages; }
  bool last_chunk(int chunk) const { return stage_ == c_.P - 1 && chunk == o_.virtual_stages - 1; }
  void forward(int chunk = 0) {
    if (hiccup_forward_ >= 0 && forwards_in_it_++ == hiccup_forward_) push(OpType::Stall, 0, int64_t(hiccup_ms_ * 1e6), 0, 0);
    h2d();
    for (int l = 0; l < chunk_layers(); ++l) {
      if (it_ == 0 && forwards_ == 0 && pat_.compile_ms > 0) stall(pat_.compile_ms, false);  // first call: compile
      layer(kFwdLayer, std::size(kFwdLayer));
      mid_sync();
    }
    if (last_chunk(chunk)) compute(kLossFwd.k, kLossFwd.us, true);
    small_kernels();
    ++forwards_;
  }
  void dp_bucket() { coll(c_.dp_key[rank_], Api::AllReduce, kDpStream, kNcclAllReduce); }
  // --dp-overlap: in the iteration's last backward, bucket b is all-reduced as soon as its layers'
  // gradients exist: after the backward of the layer floor((b + 1) L / 4) - 1 in backward order
  // (the last bucket after the last layer), while the backward goes on.
  void backward(int chunk = 0) {
    const int n = chunk_layers();
    const bool last =
        ++backwards_in_it_ == o_.microbatches * o_.virtual_stages && o_.dp_overlap && c_.dp_key[rank_] >= 0;
    if (last_chunk(chunk)) compute(kLossBwd.k, kLossBwd.us, true);
    for (int l = 0, b = 0; l < n; ++l) {
      layer(kBwdLayer, std::size(kBwdLayer));
      for (; last && b < kDpBuckets && (b + 1) * n / kDpBuckets - 1 <= l; ++b) dp_bucket();
      mid_sync();
    }
  }
  // p2p on the link to the next (dir=+1) or previous (dir=-1) stage.
  void p2p(int dir, Api api) {
    const int key = dir > 0 ? c_.link_next[rank_] : c_.link_prev[rank_];
    if (key >= 0) coll(key, api, dir > 0 && !o_.p2p_one_stream ? kPpNextStream : kPpStream, kNcclSendRecv);
  }
  void pipeline() {
    if (o_.schedule == "gpipe") return gpipe();
    if (o_.schedule == "interleaved") return interleaved();
    one_f_one_b();
  }
  // gpipe and interleaved: separate isend / irecv kernels (one peer each); the host waits for a
  // receive (the next compute needs it), not for a send. Link: +1 next stage, -1 previous; the
  // wrap-around link of interleaved runs counts as the last stage's next and the first's previous.
  // Each direction has its own key (forward: the link's key, backward: the one after it) and its
  // own stream: a send and a receive of one link on one stream, each waiting for the peer's
  // kernel queued behind the other, would deadlock (Megatron batches them into one kernel).
  int link_key(int dir) const {
    return dir > 0 ? (c_.link_next[rank_] >= 0 ? c_.link_next[rank_] : c_.wrap_out[rank_])
                   : (c_.link_prev[rank_] >= 0 ? c_.link_prev[rank_] : c_.wrap_in[rank_]);
  }
  void recv(int dir) {  // activations from the previous stage (dir -1), gradients from the next (+1)
    const int key = link_key(dir);
    if (key >= 0) coll(key + (dir > 0), Api::Recv, dir > 0 ? kPpNextRecv : kPpStream, kNcclSendRecv);
  }
  void send(int dir) {  // activations to the next stage (+1), gradients to the previous (-1)
    const int key = link_key(dir);
    if (key >= 0) coll(key + (dir < 0), Api::Send, dir > 0 ? kPpNextStream : kPpPrevSend, kNcclSendRecv).async = true;
  }
  // GPipe: every microbatch's forward, then every backward (one flush).
  void gpipe() {
    const int M = o_.microbatches;
    for (int i = 0; i < M; ++i) recv(-1), forward(), send(+1);
    for (int i = 0; i < M; ++i) recv(+1), backward(), send(-1);
  }
  // Megatron's forward_backward_pipelining_with_interleaving: virtual microbatch k runs model chunk
  // (k / P) % v forward (v - 1 - that backward); warm-up (P - s - 1) * 2 + (v - 1) * P forwards,
  // then one forward and one backward each, then the remaining backwards. Virtual stage j = c P + s
  // receives from j - 1 and sends to j + 1 (the first and last of all receive / send nothing).
  void interleaved() {
    const int P = c_.P, s = stage_, v = o_.virtual_stages, total = o_.microbatches * v;
    const int warm = std::min((P - s - 1) * 2 + (v - 1) * P, total);
    auto fwd = [&](int k) {
      const int c = (k / P) % v, j = c * P + s;
      if (j > 0) recv(-1);
      forward(c);
      if (j < P * v - 1) send(+1);
    };
    auto bwd = [&](int k) {
      const int c = v - 1 - (k / P) % v, j = c * P + s;
      if (j < P * v - 1) recv(+1);
      backward(c);
      if (j > 0) send(-1);
    };
    for (int k = 0; k < warm; ++k) fwd(k);
    for (int k = 0; k + warm < total; ++k) fwd(k + warm), bwd(k);
    for (int k = std::max(0, total - warm); k < total; ++k) bwd(k);
  }
  // Megatron 1F1B without interleaving; grouped send/recv pairs are one SendRecv kernel.
  void one_f_one_b() {
    const int P = c_.P, s = stage_, M = o_.microbatches;
    const int warm = std::min(P - s - 1, M), steady = M - warm;
    for (int i = 0; i < warm; ++i) {
      p2p(-1, Api::Recv);
      forward();
      p2p(+1, Api::Send);
    }
    if (steady > 0) p2p(-1, Api::Recv);
    for (int i = 0; i < steady; ++i) {
      forward();
      p2p(+1, Api::SendRecv);  // send activations, receive gradients
      backward();
      p2p(-1, i == steady - 1 ? Api::Send : Api::SendRecv);
    }
    for (int i = 0; i < warm; ++i) {
      p2p(+1, Api::Recv);
      backward();
      p2p(-1, Api::Send);
    }
  }

  // ---- root-cause patterns (no-ops unless a pattern fault names this rank) ----
  void stall(double ms, bool drain) {
    const double cost = ms * 1e6 * xr_.uniform(0.95, 1.05);
    push(OpType::Stall, 0, int64_t(cost), 0, 0).drain = drain;
  }
  // hotspot: flash-attention backward takes hot_share of the microbatch's compute time, every other
  // microbatch kernel shrinks so that the total stays that of the base durations.
  void hotspot_factors() {
    double total = 0, flash = 0;
    for (const Step& s : kFwdLayer) total += s.k == kNcclAllReduce ? 0 : s.us;
    for (const Step& s : kBwdLayer) {
      total += s.k == kNcclAllReduce ? 0 : s.us;
      flash += s.k == kFlashBwd ? s.us : 0;
    }
    total *= o_.layers, flash *= o_.layers;
    if (stage_ == c_.P - 1) total += kLossFwd.us + kLossBwd.us;
    hot_[1] = pat_.hot_share * total / flash;
    hot_[0] = (1.0 - pat_.hot_share) * total / (total - flash);
  }
  // Before every compute launch. gc_pause: iteration 0 counts the launches per iteration (n); from
  // iteration 1 the k-th pause comes before launch (floor((k + 0.4) * every) + u) * n, u uniform in
  // [0.2, 0.8]: inside an iteration, never at its start.
  void before_launch() {
    if (pat_.gc.empty()) return;
    if (it_ == 0) {
      ++launches_per_iter_;
      return;
    }
    for (auto& g : pat_.gc) {
      auto draw = [&] {
        const double u = xr_.uniform(0.2, 0.8);
        g.next = (std::floor((g.k + 0.4) * g.every) + u) * double(std::max<int64_t>(1, launches_per_iter_));
      };
      if (g.next < 0) draw();
      for (; g.next <= double(launches_); ++g.k, draw()) stall(g.ms, true);
    }
    ++launches_;
  }
  void slow_launch(Op& op) {  // slow_host: Python overhead makes every compute launch this slow
    if (pat_.slow_host_us > 0) op.cpu_end = int64_t(pat_.slow_host_us * kUs * xr_.uniform(0.97, 1.03));
  }
  void h2d() {  // h2d: an extra host-to-device copy before each microbatch's forward (~24 GB/s)
    for (const int32_t bytes : pat_.h2d) {
      const int64_t cpu = int64_t(xr_.uniform(9, 12) * kUs);
      const int64_t dur = int64_t(double(bytes) / 24e9 * 1e9 * xjit());
      const int64_t gap = int64_t(xr_.uniform(4, 10) * kUs);
      push(OpType::H2D, 0, cpu, dur, gap).bytes = bytes;
    }
  }
  void mid_sync() {  // sync: .item() after every layer, then host work
    if (pat_.sync_ms <= 0) return;
    push(OpType::Sync, 0, 0, 0, int64_t(xr_.uniform(3, 6) * kUs)).mid_iter = true;
    stall(pat_.sync_ms, false);
  }
  void small_kernels() {  // small_kernels: tiny elementwise kernels, each launch costlier than the kernel
    const double f = compute_factor(true);
    for (int i = 0; i < pat_.small; ++i) {
      before_launch();
      const int64_t cpu = int64_t(xr_.uniform(6, 9) * kUs);
      const int64_t dur = int64_t(xr_.uniform(2, 4) * kUs * f);
      const int64_t gap = int64_t(xr_.uniform(0.5, 1.5) * kUs);
      slow_launch(push(OpType::Compute, kSmallElementwise, cpu, dur, gap));
    }
  }

  const RunCtx& c_;
  const Options& o_;
  int rank_, stage_;
  Rng rng_, xr_, nr_;  // nr_: Options' noise only
  Patterns pat_;
  std::vector<Op>& ops_;
  std::vector<int32_t>& seq_;  // per key: next issue index
  int it_ = 0;
  double extra_acc_ = 0;
  double hot_[2] = {1.0, 1.0};  // hotspot duration factors: other microbatch kernels, flash backward
  double speed_ = 1.0, wobble_ = 1.0, hiccup_ms_ = 0;  // this iteration's noise (draw_noise)
  int hiccup_forward_ = -1, forwards_in_it_ = 0, backwards_in_it_ = 0;
  int forwards_ = 0;            // forward passes issued (compile: the first call of each layer)
  int64_t launches_per_iter_ = 0, launches_ = 0;  // gc_pause: compute launches in iteration 0, since iteration 1
};

}  // namespace

void build_ops(const RunCtx& c, int rank, RankTrace& tr, std::vector<int32_t>& seq, int first, int end) {
  Builder b(c, rank, tr, seq);
  for (int it = first; it < end; ++it) b.iteration(it);
}

}  // namespace sim
