#include "payloads.hpp"

#include <cstring>

#include "rng.hpp"
#include "sqlite_insert.hpp"

namespace sim {
namespace {

// Verbatim from shared/docs/nsys-ddl/nsys-2026.2.1_schema-3.25.0_lazy-partial.sql.
const char* const kSchemasDdl = R"SQL(CREATE TABLE NVTX_PAYLOAD_SCHEMAS (
    -- NVTX payload schema attributes.

    domainId                    INTEGER,                               -- User-controlled ID that can be used to group events.
    schemaId                    INTEGER,                               -- Identifier of the payload schema.
    name                        TEXT,                                  -- Schema name.
    type                        INTEGER,                               -- Schema type.
    flags                       INTEGER,                               -- Schema flags.
    numEntries                  INTEGER,                               -- Number of payload schema entries.
    payloadSize                 INTEGER,                               -- Size of the static payload.
    alignTo                     INTEGER                                -- Field alignment in bytes.
);)SQL";
const char* const kEntriesDdl = R"SQL(CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (
    -- NVTX payload schema entries.

    domainId                    INTEGER   NOT NULL,                    -- User-controlled ID that can be used to group events.
    schemaId                    INTEGER   NOT NULL,                    -- Identifier of the payload schema.
    idx                         INTEGER   NOT NULL,                    -- Index of the entry in the payload schema.
    flags                       INTEGER,                               -- Payload entry flags.
    type                        INTEGER,                               -- Payload entry type.
    name                        TEXT,                                  -- Label of the payload entry.
    description                 TEXT,                                  -- Description of the payload entry.
    arrayOrUnionDetail          INTEGER,                               -- Array length (index) or selected union member.
    offset                      INTEGER                                -- Entry offset in the binary data in bytes.
);)SQL";

// NVTX entry types: UINT64 18, SIZE 22, INT 5; NCCL 2.27's reduction-op enum is START + 16.
constexpr int64_t kUint64 = 18, kSize = 22, kInt = 5, kRedOpEnum = (1 << 24) + 16;

void exec_ddl(sqlite3* db, const char* sql) { check_sqlite(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), db, "payload DDL"); }

}  // namespace

void write_payload_schemas(sqlite3* db, int processes, int64_t& rows) {
  exec_ddl(db, kSchemasDdl);
  exec_ddl(db, kEntriesDdl);
  Insert s(db, "NVTX_PAYLOAD_SCHEMAS", {{"domainId", "1"}, {"schemaId", ":id"}, {"name", ":n"}, {"type", "1"},
                                        {"flags", "0"}, {"numEntries", "3"}, {"payloadSize", "24"}, {"alignTo", "8"}});
  Insert e(db, "NVTX_PAYLOAD_SCHEMA_ENTRIES", {{"domainId", "1"}, {"schemaId", ":id"}, {"idx", ":i"}, {"type", ":t"},
                                               {"name", ":n"}, {"offset", ":o"}});
  struct Schema {
    int64_t id;
    const char* name;
    int64_t third_type;
    const char* third;
  };
  const Schema schemas[] = {{kSchemaAllReduce, "NCCL AllReduce", kRedOpEnum, "Reduction operation"},
                            {kSchemaSend, "NCCL Send", kInt, "Peer rank"},
                            {kSchemaRecv, "NCCL Recv", kInt, "Peer rank"}};
  for (int p = 0; p < processes; ++p)
    for (const Schema& sc : schemas) {
      s.i(s.p(":id"), sc.id), s.t(s.p(":n"), sc.name), s.run();
      const struct {
        int64_t type;
        const char* name;
        int64_t offset;
      } entries[] = {{kUint64, "NCCL communicator ID", -1}, {kSize, "Message size [bytes]", 8}, {sc.third_type, sc.third, 16}};
      for (int i = 0; i < 3; ++i) {
        e.i(e.p(":id"), sc.id), e.i(e.p(":i"), i), e.i(e.p(":t"), entries[i].type), e.t(e.p(":n"), entries[i].name);
        if (entries[i].offset < 0) e.null(e.p(":o"));  // NULL for the first entry, as in the samples
        else e.i(e.p(":o"), entries[i].offset);
        e.run();
      }
    }
  rows += s.rows + e.rows;
}

uint64_t comm_hash(const Simulation& sim, int key) {
  const CollKey& k = sim.keys[size_t(key)];
  const CommInfo& c = sim.comms[size_t(k.comm)];
  uint64_t h = 0xC0FFEE;
  for (char ch : c.name) h = hash4(h, uint64_t(uint8_t(ch)), 0, 0);
  if (c.kind == "pp")  // a p2p pair: its own communicator, the same in both directions
    h = hash4(h, uint64_t(std::min(k.members[0], k.members[1])), uint64_t(std::max(k.members[0], k.members[1])), 1);
  return h;
}

std::string nccl_payload(int64_t schema, uint64_t comm, int64_t bytes, int32_t third) {
  std::string b(32 + 24, '\0');
  auto put = [&](size_t at, const void* v, size_t n) { std::memcpy(&b[at], v, n); };
  const uint32_t domain = 1, sid = uint32_t(schema), zero = 0;
  const uint64_t payload = 24, total = 56, size = uint64_t(bytes);
  put(0, &domain, 4), put(4, &zero, 4), put(8, &sid, 4), put(12, &zero, 4), put(16, &payload, 8), put(24, &total, 8);
  put(32, &comm, 8), put(40, &size, 8), put(48, &third, 4);
  return b;
}

}  // namespace sim
