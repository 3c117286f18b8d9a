// --payloads: NCCL's NVTX payloads as nsys 2026.2 exports them with blobs included
// (../shared/docs/nsys-export-notes.md 2.6, 4.3-4.4): the schema tables, and per NCCL API range a
// binaryData blob of a 32-byte header <IIIIQQ> (domainId, 0, schemaId, 0, payloadSize, totalSize)
// followed by the payload at the schema's entry offsets (NCCL 2.27's AllReduce, Send, Recv).
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "schedule.hpp"

namespace sim {

// NCCL's schema ids: (1 << 24) + the API's offset.
constexpr int64_t kSchemaAllReduce = (1 << 24) + 5, kSchemaSend = (1 << 24) + 9, kSchemaRecv = (1 << 24) + 10;

// Creates NVTX_PAYLOAD_SCHEMAS and _ENTRIES (schema 3.25 only) and writes NCCL's three schemas
// once per rank process of the file, as nsys does (no process column: duplicates across processes).
void write_payload_schemas(sqlite3* db, int processes, int64_t& rows);

// The communicator id NCCL puts in the payload: one per communicator, identical on its members
// (a p2p link is its own communicator, as PyTorch creates one per pair).
uint64_t comm_hash(const Simulation& sim, int key);

// The blob of one range: `third` is the reduction op (AllReduce) or the peer rank (Send, Recv).
std::string nccl_payload(int64_t schema, uint64_t comm, int64_t bytes, int32_t third);

}  // namespace sim
