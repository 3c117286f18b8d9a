#include "op_records.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace straggler {
namespace c = collectives;
namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) out.push_back(char(uint8_t(v) | 0x80)), v >>= 7;
  out.push_back(char(uint8_t(v)));
}

// Differences in wrap-around (unsigned) arithmetic, zigzag-folded so small negatives stay short.
void put_delta(std::string& out, int64_t now, int64_t before) {
  const uint64_t d = uint64_t(now) - uint64_t(before);
  put_varint(out, (d << 1) ^ uint64_t(int64_t(d) >> 63));
}

struct Cursor {
  const std::string& b;
  size_t pos = 0;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= b.size()) throw std::logic_error("op records: truncated");
      const uint8_t byte = uint8_t(b[pos++]);
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    throw std::logic_error("op records: bad varint");
  }
  int64_t delta(int64_t before) {
    const uint64_t z = varint();
    return int64_t(uint64_t(before) + ((z >> 1) ^ (0 - (z & 1))));
  }
  uint8_t byte() {
    if (pos >= b.size()) throw std::logic_error("op records: truncated");
    return uint8_t(b[pos++]);
  }
};

uint64_t fnv(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

}  // namespace

std::vector<StreamRecords> encode_streams(const std::vector<c::CollectiveOp>& ops) {
  std::map<int32_t, size_t> index;
  std::vector<StreamRecords> out;
  std::vector<c::CollectiveOp> last;
  for (const auto& op : ops) {
    auto [it, fresh] = index.try_emplace(op.stream, out.size());
    if (fresh) out.push_back({op.stream, 0, {}}), last.push_back({});
    auto& s = out[it->second];
    auto& prev = last[it->second];
    put_delta(s.bytes, op.start, prev.start);
    put_delta(s.bytes, op.end, op.start);
    put_delta(s.bytes, op.launch, op.start);  // the what-if replay orders a rank's ops by it
    put_delta(s.bytes, op.iteration, prev.iteration);
    s.bytes.push_back(char(op.type));
    s.bytes.push_back(char(op.dtype));
    s.bytes.push_back(char(op.overlap));
    put_delta(s.bytes, op.bytes, prev.bytes);  // one byte while the size repeats
    prev = op, ++s.ops;
  }
  for (auto& s : out) s.bytes.shrink_to_fit();
  return out;
}

std::vector<c::CollectiveOp> decode_stream(const std::string& bytes, uint32_t n, int32_t rank) {
  std::vector<c::CollectiveOp> ops(n);
  Cursor cur{bytes};
  c::CollectiveOp prev;
  for (uint32_t i = 0; i < n; ++i) {
    auto& op = ops[i];
    op.start = cur.delta(prev.start);
    op.end = cur.delta(op.start);
    op.launch = cur.delta(op.start);
    op.iteration = int32_t(cur.delta(prev.iteration));
    op.type = c::CollectiveType(cur.byte());
    op.dtype = c::NcclDtype(cur.byte());
    op.overlap = cur.byte();
    op.bytes = cur.delta(prev.bytes);
    op.rank = rank, op.seq = i;
    prev = op;
  }
  if (cur.pos != bytes.size()) throw std::logic_error("op records: trailing bytes");
  return ops;
}

std::vector<c::StreamSummary> summarize_streams(const std::vector<c::CollectiveOp>& ops) {
  std::map<int32_t, c::StreamSummary> by_stream;
  std::map<int32_t, std::map<int32_t, uint32_t>> per_iteration;  // stream -> iteration -> ops
  std::set<int32_t> mixed;  // streams whose ops carry different communicator ids (or some none)
  for (const auto& op : ops) {
    auto& s = by_stream[op.stream];
    if (s.ops == 0) s.stream = op.stream, s.first_type = op.type, s.type_prefix_hash = 1469598103934665603ull, s.comm_id = op.comm;
    if (op.comm != s.comm_id) mixed.insert(op.stream);
    if (s.ops < c::StreamSummary::kPrefix) s.type_prefix_hash = fnv(s.type_prefix_hash, uint64_t(op.type));
    if (s.first_ends.size() < c::StreamSummary::kFingerprint) s.first_ends.push_back(op.end);
    ++s.ops;
    if (op.iteration >= 1) per_iteration[op.stream][op.iteration]++;
  }
  std::vector<c::StreamSummary> out;
  for (auto& [stream, s] : by_stream) {
    if (mixed.count(stream)) s.comm_id = 0;
    std::vector<uint32_t> counts;
    for (auto [it, n] : per_iteration[stream]) counts.push_back(n);
    if (!counts.empty()) {
      std::nth_element(counts.begin(), counts.begin() + long(counts.size() / 2), counts.end());
      s.ops_per_iteration = counts[counts.size() / 2];
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace straggler
