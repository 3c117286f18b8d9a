// A RankTimeline written by hand for unit tests (test_metrics, test_iterations): rows appended in
// the reader's column layout, names interned.
#pragma once
#include "ranks/timeline.hpp"

namespace ranks {

struct TimelineBuilder {
  RankTimeline tl = annotated();  // by hand: each kernel says whether it is NCCL's
  static RankTimeline annotated() {
    RankTimeline t;
    t.nccl_annotated = true;
    return t;
  }
  void kernel(int64_t s, int64_t e, const char* name, bool nccl, int stream = 7, int64_t launch = kNoTime,
              uint32_t launch_dur = 0) {
    auto& k = tl.kernels;
    k.start.push_back(s), k.end.push_back(e), k.stream.push_back(stream), k.name.push_back(tl.names.intern(name));
    k.launch.push_back(launch), k.nccl_api.push_back(kNoName), k.is_nccl.push_back(nccl);
    k.launch_tid.push_back(0), k.launch_dur.push_back(launch_dur);
  }
  void marker(int64_t s, int64_t e, const char* name) {
    auto& n = tl.nvtx;
    n.start.push_back(s), n.end.push_back(e), n.name.push_back(tl.names.intern(name)), n.nccl_domain.push_back(0);
    n.domain.push_back(kNoName);
    n.tid.push_back(1);
  }
  void sync(int64_t s, int64_t e) {
    auto& a = tl.api;
    a.start.push_back(s), a.end.push_back(e), a.name.push_back(tl.names.intern("cudaStreamSynchronize_v3020"));
    a.kind.push_back(ApiKind::Sync);
  }
  void copy(int64_t s, int64_t e, int64_t bytes, CopyKind kind) {
    auto& c = tl.copies;
    c.start.push_back(s), c.end.push_back(e), c.bytes.push_back(bytes), c.stream.push_back(7), c.kind.push_back(kind);
  }
};

}  // namespace ranks
