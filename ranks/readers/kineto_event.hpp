// One Kineto trace event as the reader needs it, parsed by simdjson On-Demand in one pass over its
// fields (any order, unknown fields skipped, fields of the wrong type left unset). Views point
// into the parser's buffers: valid until its next parse.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

namespace ranks::detail {

struct KinetoArgs {
  std::optional<int64_t> stream, device, correlation, bytes, in_nelems, out_nelems, group_size;
  std::string_view collective, dtype, pg_name, pg_ranks;  // 2024+: kernels' NCCL metadata
  int64_t input_numel = -1;                               // "Input Dims": elements of the first tensor
  std::string_view input_type;                            // "Input type": the first tensor's
};

struct KinetoEvent {
  std::string_view ph, cat, name;
  int64_t ts = 0, dur = 0;  // ns
  bool has_ts = false;
  bool has_dur = false;      // a number of microseconds within +-2^61 ns (else dur is 0)
  int64_t pid = 0, tid = 0;
  bool pid_int = false, tid_int = false;  // pids and tids may be strings ("Spans", "PyTorch Profiler")
  KinetoArgs args;
};

// False when the text is no JSON object (or breaks off inside one).
bool parse_event(simdjson::ondemand::parser& p, std::string_view padded_text, KinetoEvent& e);

struct KinetoHeader {
  std::optional<int> rank;
  std::optional<int> world;  // distributedInfo.world_size
  std::optional<int64_t> base_ns;
  std::optional<std::string> schema;
  std::vector<std::pair<int64_t, std::string>> gpus;  // deviceProperties: id, name
};
// One top-level member (distributedInfo, baseTimeNanoseconds, deviceProperties, schemaVersion);
// false when it is not of the shape the profiler writes.
bool parse_header_member(simdjson::ondemand::parser& p, std::string_view key, std::string_view padded_raw,
                         KinetoHeader& h);

// Element size of a dtype as PyTorch names it in kernel args ("Float", "BFloat16") or in "Input
// type" ("float", "c10::Half"); 0 when unknown.
int dtype_size(std::string_view dtype);

struct CollectiveMeta {
  bool present = false;
  std::string call;    // "nccl:" + Collective name, printable, bounded; "" unknown
  int64_t bytes = -1;  // the smaller of the input and output buffers (one rank's share)
  uint64_t comm = 0;   // hash of the process group's name and ranks, never 0 when known
};
CollectiveMeta collective_meta(const KinetoArgs& a);

// One rank's message size of a "nccl:*" range from its "Input Dims" / "Input type" (2023 traces),
// -1 when unknown.
int64_t range_bytes(const KinetoArgs& a);

}  // namespace ranks::detail
