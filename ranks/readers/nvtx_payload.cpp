#include "nvtx_payload.hpp"

#include <cstring>
#include <string>

namespace ranks::detail {
namespace {

// NVTX entry types (nvToolsExtPayload.h): INT 5, UINT32 16, INT64 17, UINT64 18, SIZE 22.
int size_of_type(int64_t type) {
  switch (type) {
    case 5: case 16: return 4;
    case 17: case 18: case 22: return 8;
    default: return 0;
  }
}

uint64_t read_le(std::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | uint8_t(b[at + size_t(i)]);
  return v;
}

}  // namespace

PayloadSchemas::PayloadSchemas(const Database& db) {
  if (!db.has_table("NVTX_PAYLOAD_SCHEMA_ENTRIES")) return;
  auto cols = db.columns("NVTX_PAYLOAD_SCHEMA_ENTRIES");
  for (const char* c : {"domainId", "schemaId", "idx", "type", "name", "offset"})
    if (!cols.count(c)) return;
  Statement s(db.handle(), "SELECT domainId, schemaId, idx, type, name, offset FROM NVTX_PAYLOAD_SCHEMA_ENTRIES", db.path());
  while (s.step()) {
    const int64_t idx = s.i64(2);
    // The first entry's offset is NULL (0); a later entry without one cannot be placed.
    if (s.null(5) && idx != 0) continue;
    const int64_t offset = s.null(5) ? 0 : s.i64(5);
    const int size = size_of_type(s.i64(3));
    if (offset < 0 || offset > (1 << 16) || size == 0) continue;
    const std::string_view name = s.text(4);
    Fields& f = fields_[{s.i64(0), s.i64(1)}];
    Field* to = name == "NCCL communicator ID" ? &f.comm : name == "Message size [bytes]" ? &f.bytes : name == "Peer rank" ? &f.peer : nullptr;
    if (to) *to = {offset, size};
  }
}

std::optional<NcclPayload> PayloadSchemas::decode(std::string_view b) const {
  constexpr size_t kHeader = 32;
  if (b.size() < kHeader) return std::nullopt;
  const int64_t domain = int64_t(read_le(b, 0, 4)), schema = int64_t(read_le(b, 8, 4));
  const uint64_t payload = read_le(b, 16, 8);
  if (payload > b.size() - kHeader) return std::nullopt;
  auto it = fields_.find({domain, schema});
  if (it == fields_.end()) return std::nullopt;
  auto get = [&](const Field& f) -> std::optional<uint64_t> {
    if (f.offset < 0 || uint64_t(f.offset) + uint64_t(f.size) > payload) return std::nullopt;
    return read_le(b, kHeader + size_t(f.offset), f.size);
  };
  NcclPayload p;
  if (auto v = get(it->second.bytes); v && *v < (uint64_t(1) << 50)) p.bytes = int64_t(*v);
  if (auto v = get(it->second.comm)) p.comm = *v;
  if (auto v = get(it->second.peer); v && int32_t(*v) >= 0 && int32_t(*v) < (1 << 24)) p.peer = int32_t(*v);
  if (p.bytes < 0 && p.comm == 0 && p.peer < 0) return std::nullopt;
  return p;
}

}  // namespace ranks::detail
