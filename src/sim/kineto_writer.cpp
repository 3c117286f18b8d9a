// --format kineto: one Chrome-trace JSON per rank, streamed (no document is built: a rank may
// have millions of events). A pass merges the CPU thread with each GPU stream by time and writes
// the events of some categories, so each event order Kineto may write costs no memory beyond the
// per-op ids (kineto_events.hpp). Event shapes follow the real samples: SPEC.md "Kineto output".
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kineto_events.hpp"
#include "rng.hpp"

namespace sim {
namespace {

using namespace kineto;

// The output file: traceEvents joined as Kineto does, optionally gzip'd, optionally shuffled in
// windows (the only buffering: one window of formatted events).
class Sink {
 public:
  Sink(const std::string& path, bool gz) : path_(path) {
    if (gz) gz_ = gzopen(path.c_str(), "wb1");
    else file_ = std::fopen(path.c_str(), "wb");
    if (!gz_ && !file_) throw std::runtime_error("straggler-sim: cannot create " + path);
  }
  ~Sink() {
    if (gz_) gzclose(gz_);
    if (file_) std::fclose(file_);
  }
  void raw(std::string_view s) {
    buf_ += s;
    if (buf_.size() > (1 << 20)) flush();
  }
  void event(const std::string& e) {
    if (window_ == 0) return put(e);
    win_.push_back(e);
    if (win_.size() >= window_) drain();
  }
  void shuffle(size_t window, uint64_t seed) {
    drain();
    window_ = window, rng_ = Rng(seed);
  }
  void drain() {  // the window in a random order
    for (size_t k = win_.size(); k > 1; --k) std::swap(win_[k - 1], win_[size_t(rng_.range(0, int64_t(k) - 1))]);
    for (const std::string& e : win_) put(e);
    win_.clear();
  }
  void close() {
    drain();
    flush();
    const bool ok = gz_ ? gzclose(gz_) == Z_OK : std::fclose(file_) == 0;
    gz_ = nullptr, file_ = nullptr;
    if (!ok) throw std::runtime_error("straggler-sim: cannot write " + path_);
  }
  int64_t events = 0;

 private:
  void put(std::string_view e) {
    if (events++) buf_ += ",\n";
    raw(e);
  }
  void flush() {
    const bool ok = gz_ ? gzwrite(gz_, buf_.data(), unsigned(buf_.size())) == int(buf_.size()) || buf_.empty()
                        : std::fwrite(buf_.data(), 1, buf_.size(), file_) == buf_.size();
    if (!ok) throw std::runtime_error("straggler-sim: cannot write " + path_);
    buf_.clear();
  }
  std::string path_, buf_;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
  size_t window_ = 0;
  std::vector<std::string> win_;
  Rng rng_{0};
};

// Walks the ops of one source (the CPU thread, or one GPU stream) and yields the events of the
// kinds in `mask`, in time order.
struct Cursor {
  const RankCtx* rc;
  int slot;  // -1: the CPU thread
  uint16_t mask;
  size_t i = 0, k = 0;
  std::vector<Ev> evs;
  void load() {
    for (; i < rc->ops.size(); ++i) {
      if (slot < 0) cpu_events(*rc, i, evs);
      else gpu_events(*rc, i, slot, evs);
      evs.erase(std::remove_if(evs.begin(), evs.end(), [&](const Ev& e) { return !(e.kind & mask); }), evs.end());
      if (!evs.empty()) return void(k = 0);
    }
    evs.clear();
  }
  const Ev* peek() const { return k < evs.size() ? &evs[k] : nullptr; }
  void pop() {
    if (++k >= evs.size()) ++i, load();
  }
};


// H100 SXM as cudaGetDeviceProperties reports it (--gpu-name renames it).
constexpr int kSms = 132, kSmemPerSm = 233472;

// Formats the events of one rank into the sink, in the order its conventions ask for.
struct Writer {
  const RankCtx& rc;
  Sink& sink;
  std::string ev;  // the event being formatted

  template <class... A>
  void out(fmt::format_string<A...> f, A&&... a) {
    fmt::format_to(std::back_inserter(ev), f, std::forward<A>(a)...);
  }
  // Integer epoch us (2023: sub-us lost as Kineto truncates), or "<us>.<3 digits>" after the base,
  // written from integer ns so that no double rounds it.
  void ts(int64_t t) {
    const int64_t u = rc.unix(t);
    if (!rc.kc.relative_time) return out("{}", u / kUsNs);
    out("{}.{:03}", (u - rc.base) / kUsNs, (u - rc.base) % kUsNs);
  }
  void dur(int64_t a, int64_t b) {
    const int64_t d = rc.unix(b) - rc.unix(a);
    if (!rc.kc.relative_time) return out("{}", d / kUsNs);
    out("{}.{:03}", d / kUsNs, d % kUsNs);
  }
  void x_head(const char* cat, std::string_view name, int64_t pid, int64_t tid, int64_t t0, int64_t t1) {
    out("  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n    \"ts\": ", cat, name, pid, tid);
    ts(t0);
    ev += ", \"dur\": ";
    dur(t0, t1);
    ev += ",\n    \"args\": {\n      ";
  }
  void x_tail() { ev += "\n    }\n  }"; }
  // 2023 builds link runtime and GPU events to the call itself (External id = correlation).
  int64_t linked(const Ev& e, int64_t corr) const { return rc.kc.relative_time ? e.ext : corr; }
  int64_t corr_of(size_t i) const { return rc.corr(size_t(rc.head[i] >= 0 ? rc.head[i] : int32_t(i))); }

  void cpu_event(const Ev& e);
  void runtime(const Ev& e);
  void kernel(const Ev& e);
  void memcpy(const Ev& e);
  void flow(const Ev& e);
  void emit(const Ev& e);
  void pass(uint16_t mask);
  void meta();
  void span(bool head, bool tail);
  void body(uint64_t seed);
  std::string header();
  std::string footer(const FileSpec& f);
};

void Writer::cpu_event(const Ev& e) {
  const Op& op = rc.ops[e.op];
  const KinetoConventions& kc = rc.kc;
  const bool annot = e.kind == kAnnot;
  std::string name;
  switch (e.what) {
    case W::Step: name = fmt::format("ProfilerStep#{}", e.aux); break;
    case W::Loader: name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"; break;
    case W::OptStep: name = "Optimizer.step#FusedAdam.step"; break;
    case W::Aten: name = kAten[e.aux].name; break;
    case W::C10d: name = kColl[e.aux].c10d; break;
    case W::Rpc: name = "record_param_comms"; break;
    default: name = kColl[e.aux].annot; break;
  }
  x_head(annot ? "user_annotation" : "cpu_op", name, rc.pid, rc.tid, e.ts, e.end);
  out("\"External id\": {}, ", e.ext);
  if (kc.relative_time) out("\"Record function id\": {}, ", e.ext - kc.rf_offset);
  out("\"Ev Idx\": {}", e.ext - kc.ext_base);
  const bool coll = e.what == W::C10d || e.what == W::Rpc || e.what == W::NcclAnnot;
  const CollKey* key = coll ? &rc.sim.keys[size_t(op.key)] : nullptr;
  if (e.what == W::Rpc && kc.nccl_metadata) {  // 2024: the collective's metadata (also on its kernel)
    const auto& ranks = rc.sim.comms[size_t(key->comm)].ranks;
    const int stride = ranks.size() > 1 ? ranks[1] - ranks[0] : 1;
    out(R"(, "Collective name": "{}", {}, "Global rank start": {}, "Global rank stride": {})", kColl[e.aux].coll,
        rc.kc.key_args[size_t(op.key)], ranks[0], stride);
  } else if (kc.record_shapes && e.what == W::Rpc) {
    out(R"(, "Input Dims": {}, "Input type": {})", kRpcDims, kRpcTypes);
  }
  if (kc.record_shapes && e.what == W::C10d) out(R"(, "Input Dims": {}, "Input type": {})", kC10dDims, kColl[e.aux].c10d_types);
  if (kc.record_shapes && e.what == W::NcclAnnot) {  // 2023: the message size shows only here
    const bool bf16 = key->bytes % 2 == 0;
    out(R"(, "Input Dims": [[{}]], "Input type": ["{}"])", key->bytes / (bf16 ? 2 : 1), bf16 ? "c10::BFloat16" : "unsigned char");
  }
  if (kc.record_shapes && e.what == W::Aten) {
    if (e.aux != kACopy) out(R"(, "Input Dims": {}, "Input type": {})", kAten[e.aux].dims, kAten[e.aux].types);
    else if (op.bytes <= 4) out(R"(, "Input Dims": [[], [], []], "Input type": ["float", "float", "Scalar"])");
    else out(R"(, "Input Dims": [[{0}], [{0}], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"])", op.bytes / 2);
  }
  x_tail();
}

void Writer::runtime(const Ev& e) {
  const CudaCall& c = kCalls[e.aux];
  const int64_t corr = rc.corr(e.op);
  x_head(c.driver ? "cuda_driver" : "cuda_runtime", c.name, rc.pid, rc.tid, e.ts, e.end);
  out("\"External id\": {},\n      \"cbid\": {}, \"correlation\": {}", linked(e, corr), c.cbid, corr);
  x_tail();
}

void Writer::kernel(const Ev& e) {
  const Op& op = rc.ops[e.op];
  const KernelDesc k = kernel_desc(op.kernel, rc.old_nccl);
  const int sid = rc.stream[op.stream];
  const int64_t corr = corr_of(e.op);
  // Kineto's estimates from the launch shape: blocks and warps per SM, occupancy when resident.
  const int warps = (k.block_x + 31) / 32;
  const float blocks = float(k.grid_x * k.grid_y) / kSms;
  const int fit = std::min({32, 65536 / std::max(1, k.regs * k.block_x), k.shared_mem > 0 ? kSmemPerSm / k.shared_mem : 32,
                            64 / std::max(1, warps)});
  const int occupancy = std::clamp(int(std::min(blocks, float(fit)) * float(warps) * 100.0f / 64.0f), 0, 100);
  x_head("kernel", k.demangled, rc.dev, sid, e.ts, e.end);
  out("\"External id\": {},\n      \"queued\": 0, \"device\": {}, \"context\": 1,\n      \"stream\": {}, \"correlation\": {},\n"
      "      \"registers per thread\": {},\n      \"shared memory\": {},\n      \"blocks per SM\": {},\n"
      "      \"warps per SM\": {},\n      \"grid\": [{}, {}, 1],\n      \"block\": [{}, 1, 1],\n"
      "      \"est. achieved occupancy %\": {}",
      linked(e, corr), rc.dev, sid, corr, k.regs, k.shared_mem, blocks, blocks * float(warps), k.grid_x, k.grid_y,
      k.block_x, occupancy);
  if (op.type == OpType::Coll && rc.kc.nccl_metadata)
    out(R"(, "Collective name": "{}", {})", kColl[coll_index(op)].coll, rc.kc.key_args[size_t(op.key)]);
  x_tail();
}

void Writer::memcpy(const Ev& e) {
  const Op& op = rc.ops[e.op];
  const int sid = rc.stream[op.stream];
  const int64_t corr = corr_of(e.op);
  // The input batch comes from pinned memory (the dataloader pins it); other copies are pageable.
  const char* name = op.type == OpType::D2H                                 ? "Memcpy DtoH (Device -> Pageable)"
                     : e.op > 0 && rc.ops[e.op - 1].type == OpType::IterBegin ? "Memcpy HtoD (Pinned -> Device)"
                                                                             : "Memcpy HtoD (Pageable -> Device)";
  x_head("gpu_memcpy", name, rc.dev, sid, e.ts, e.end);
  out("\"External id\": {},\n      \"device\": {}, \"context\": 1,\n      \"stream\": {}, \"correlation\": {},\n"
      "      \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
      linked(e, corr), rc.dev, sid, corr, op.bytes, double(op.bytes) / double(std::max<int64_t>(1, e.end - e.ts)));
  x_tail();
}

void Writer::flow(const Ev& e) {
  const bool gpu = e.what == W::GpuFlow;
  const int64_t id = gpu ? corr_of(e.op) : rc.corr(e.op);
  out("  {{\n    \"ph\": \"{}\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", e.what == W::FlowS ? "s" : "f", id,
      gpu ? rc.dev : rc.pid, gpu ? rc.stream[rc.ops[e.op].stream] : rc.tid);
  ts(e.ts);
  out(",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"{}\n  }}", e.what == W::FlowS ? "" : ", \"bp\": \"e\"");
}

void Writer::emit(const Ev& e) {
  ev.clear();
  switch (e.what) {
    case W::Runtime: runtime(e); break;
    case W::Kernel: kernel(e); break;
    case W::Memcpy: memcpy(e); break;
    case W::FlowS: case W::FlowF: case W::GpuFlow: flow(e); break;
    case W::GpuAnnot:
      x_head("gpu_user_annotation", "Optimizer.step#FusedAdam.step", rc.dev, rc.stream[kCompute], e.ts, e.end);
      out("\"External id\": {}", e.ext);
      x_tail();
      break;
    default: cpu_event(e); break;
  }
  sink.event(ev);
}

// The events of the kinds in `mask`: the CPU thread and each stream merged by time (ties: CPU first).
void Writer::pass(uint16_t mask) {
  std::vector<Cursor> cur;
  if (mask & kCpuKinds) cur.push_back({&rc, -1, mask, 0, 0, {}});
  if (mask & kGpuKinds)
    for (int s = 0; s < kStreamSlots; ++s)
      if (rc.stream[s] >= 0) cur.push_back({&rc, s, mask, 0, 0, {}});
  for (Cursor& c : cur) c.load();
  for (;;) {
    Cursor* best = nullptr;
    for (Cursor& c : cur)
      if (c.peek() && (!best || c.peek()->ts < best->peek()->ts)) best = &c;
    if (!best) return;
    emit(*best->peek());
    best->pop();
  }
}

std::vector<int> visible_devices(const RankCtx& rc) {
  std::vector<int> d;  // CUDA_VISIBLE_DEVICES=<own GPU> shows one device, numbered 0
  for (int k = 0; k < (rc.cv.device_zero ? 1 : rc.sim.gpus_per_host); ++k) d.push_back(k);
  return d;
}

// ph "M": process and thread names Kineto writes for the CPU process, every GPU and stream used.
void Writer::meta() {
  if (!rc.kc.meta) return;
  auto m = [&](const char* what, int64_t pid, int64_t tid, const char* key, std::string_view val) {
    ev.clear();
    out("  {{\n    \"name\": \"{}\", \"ph\": \"M\", \"ts\": ", what);
    ts(-rc.cv.capture_lead[rc.rank]);
    out(", \"pid\": {}, \"tid\": {},\n    \"args\": {{\n      \"{}\": {}\n    }}\n  }}", pid, tid, key, val);
    sink.event(ev);
  };
  m("process_name", rc.pid, 0, "name", "\"python3\"");
  m("process_labels", rc.pid, 0, "labels", "\"CPU\"");
  m("process_sort_index", rc.pid, 0, "sort_index", std::to_string(rc.pid));
  for (int d : visible_devices(rc)) {
    m("process_name", d, 0, "name", "\"python3\"");
    m("process_labels", d, 0, "labels", fmt::format("\"GPU {}\"", d));
    m("process_sort_index", d, 0, "sort_index", std::to_string(16777216 + d));
  }
  std::vector<int> ids;
  for (uint8_t s : rc.cv.created[rc.rank]) ids.push_back(rc.stream[s]);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int id : ids) {
    m("thread_name", rc.dev, id, "name", fmt::format("\"stream {} \"", id));
    m("thread_sort_index", rc.dev, id, "sort_index", std::to_string(id));
  }
  m("thread_name", rc.pid, rc.tid, "name", fmt::format("\"thread {} (python3)\"", rc.tid));
  m("thread_sort_index", rc.pid, rc.tid, "sort_index", std::to_string(rc.tid));
}

// The profiler's own span over the capture (every sample has it), and its instants (start, end of
// the record window; optional: the sampled HTA traces have none).
void Writer::span(bool head, bool tail) {
  const int64_t t0 = -rc.cv.capture_lead[rc.rank], t1 = rc.kc.end_ns[size_t(rc.rank)];
  if (head) {
    ev.clear();
    out("  {{\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    ts(t0);
    ev += ", \"dur\": ";
    dur(t0, t1);
    out(",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n"
        "    \"args\": {{\n      \"Op count\": 0\n    }}\n  }}");
    sink.event(ev);
    if (rc.kc.meta) {
      ev.clear();
      out("  {{\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
      ts(t0);
      out(",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {{\n      \"sort_index\": 536870912\n    }}\n  }}");
      sink.event(ev);
    }
    if (!rc.kc.instants) return;
    ev.clear();
    out("  {{\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n"
        "    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
    ts(t0);
    ev += "\n  }";
    sink.event(ev);
  }
  if (tail && rc.kc.instants) {
    ev.clear();
    out("  {{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
    ts(t1);
    ev += "\n  }";
    sink.event(ev);
  }
}

void Writer::body(uint64_t seed) {
  switch (rc.kc.order) {
    case KinetoOrder::Sorted:  // metadata at the capture start, then everything by time
      meta();
      span(true, false);
      pass(kCpuKinds | kGpuKinds);
      return span(false, true);
    case KinetoOrder::Grouped:
      for (uint16_t k : {kCpuOp, kAnnot, kRuntime, kKernel, kMemcpy, kGpuAnnot, kFlowCpu, kFlowGpu}) pass(k);
      break;
    case KinetoOrder::Shuffled:
      sink.shuffle(size_t(rc.kc.shuffle_window), seed);
      [[fallthrough]];
    case KinetoOrder::Kineto:  // CPU ops, then the CUPTI activity (calls and GPU work) by time
      pass(kCpuOp | kAnnot);
      pass(kRuntime | kFlowCpu | kGpuKinds);
      break;
  }
  meta();
  span(true, true);
}

std::string Writer::header() {
  const KinetoConventions& kc = rc.kc;
  const Simulation& sim = rc.sim;
  const std::string gpu = sim.opt.gpu_name.empty() ? "NVIDIA H100 80GB HBM3" : sim.opt.gpu_name;
  ev.clear();
  out("{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
  const std::vector<int> devs = visible_devices(rc);
  for (size_t k = 0; k < devs.size(); ++k)
    out("    {{\n      \"id\": {}, \"name\": \"{}\", \"totalGlobalMem\": 85031714816,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n"
        "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
        "      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n"
        "      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": {},\n"
        "      \"numSms\": {}, \"sharedMemPerBlockOptin\": 232448\n    }}{}\n",
        devs[k], gpu, kSmemPerSm, kSms, k + 1 < devs.size() ? "," : "");
  out("  ],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}", rc.rank, sim.world);
  if (kc.nccl_metadata) {  // 2024: the default group and every group this rank belongs to
    std::vector<std::pair<int, size_t>> mine;
    for (size_t c = 0; c < sim.comms.size(); ++c) {
      const auto& r = sim.comms[c].ranks;
      if (kc.pg[c].name != "0" && std::binary_search(r.begin(), r.end(), rc.rank)) mine.push_back({std::stoi(kc.pg[c].name), c});
    }
    std::sort(mine.begin(), mine.end());
    out(", \"pg_count\": {}, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", "
        "\"pg_size\": {}, \"ranks\": [", mine.size() + 1, sim.world);
    for (int r = 0; r < sim.world; ++r) out("{}{}", r ? ", " : "", r);
    ev += "]}";
    for (const auto& [name, c] : mine)
      out(", {{\"pg_name\": \"{}\", \"pg_desc\": \"{}\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {}, \"ranks\": [{}]}}",
          name, kc.pg[c].desc, sim.comms[c].ranks.size(), fmt::join(sim.comms[c].ranks, ", "));
    out("], \"nccl_version\": \"{}\"", rc.old_nccl ? "2.18.6" : "2.21.5");
  }
  ev += "},\n";
  if (kc.record_shapes) ev += "  \"record_shapes\": 1,\n";
  ev += "  \"traceEvents\": [\n";
  return ev;
}

std::string Writer::footer(const FileSpec& f) {
  const KinetoConventions& kc = rc.kc;
  ev = "\n  ]";
  if (kc.trace_name) {  // export_chrome_trace("x.json.gz") writes a temporary .json, then compresses it
    std::string tmp;
    for (uint64_t h = hash4(conventions_seed(rc.sim.opt), 0x7E4D, uint64_t(rc.rank), 0); tmp.size() < 8; h /= 36)
      tmp += "abcdefghijklmnopqrstuvwxyz0123456789"[h % 36];
    const std::string base = f.path.substr(f.path.find_last_of('/') + 1);
    out(",\n  \"traceName\": \"{}\"", kc.gzip ? "/tmp/tmp" + tmp + ".json" : "./traces/" + base);
  }
  if (kc.relative_time) out(",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {}", rc.base);
  ev += "\n}\n";
  return ev;
}

}  // namespace

int64_t write_kineto_file(const Simulation& sim, const Conventions& cv, const KinetoConventions& kc, const FileSpec& f) {
  const RankCtx rc(sim, cv, kc, f.ranks.front());
  Sink sink(f.path, kc.gzip);
  Writer w{rc, sink, {}};
  sink.raw(w.header());
  w.body(hash4(conventions_seed(sim.opt), 0x5AFF1E, uint64_t(rc.rank), 0));
  sink.drain();
  sink.raw(w.footer(f));
  sink.close();
  return sink.events;
}

}  // namespace sim
