// NCCL's NVTX payloads in an nsys export (../shared/docs/nsys-export-notes.md 2.6, 4.3-4.4).
// NCCL (2.16+) attaches a binary payload to each API range: communicator id (2.25+), message size,
// reduction op or peer. nsys exports the schemas (NVTX_PAYLOAD_SCHEMAS*) and, only when blobs are
// included, the values (NVTX_EVENTS.binaryData): a 32-byte header <IIIIQQ> (domainId, reserved,
// schemaId, reserved, payloadSize, totalSize) then the payload at the entries' offsets. That layout
// is documented only by a third-party decoder, so decoding is defensive: sizes and schema ids are
// checked, fields are found by their entry names and types, and a payload that does not fit is
// ignored (never an error). Internal to the nsys reader.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "sqlite_db.hpp"

namespace ranks::detail {

struct NcclPayload {
  int64_t bytes = -1;  // message size [bytes] of one rank's buffer
  uint64_t comm = 0;   // NCCL communicator ID
  int32_t peer = -1;   // Peer rank (Send, Recv)
};

class PayloadSchemas {
 public:
  // Reads NVTX_PAYLOAD_SCHEMA_ENTRIES (deduplicated on domain, schema, idx); empty when absent.
  explicit PayloadSchemas(const Database& db);
  bool empty() const { return fields_.empty(); }
  // The fields of a binaryData blob; nullopt when it cannot be decoded with a known schema.
  std::optional<NcclPayload> decode(std::string_view blob) const;

 private:
  struct Field {
    int64_t offset = -1;
    int size = 0;  // bytes (4 or 8)
  };
  struct Fields {
    Field comm, bytes, peer;
  };
  std::map<std::pair<int64_t, int64_t>, Fields> fields_;  // (domainId, schemaId) -> fields
};

}  // namespace ranks::detail
