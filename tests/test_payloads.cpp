// NCCL's NVTX payloads (ranks/readers/nvtx_payload.hpp): the generator writes them as an nsys
// export with blobs included has them (--payloads); the reader gives each NCCL kernel the message
// size and communicator id of the API range that launched it, and ignores payloads it cannot decode
// (never an error). Runs without payloads have no payload columns.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <set>
#include <string>

#include "collectives/nccl_annotate.hpp"
#include "collectives/nccl_kernel.hpp"
#include "sim.hpp"
#include "sim_fixture.hpp"

namespace {

using namespace simtest;

void exec(const std::string& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Message size and communicator id of each NCCL kernel of the rank in `file`, by collective type.
struct Seen {
  std::map<std::string, std::set<int64_t>> bytes;
  std::map<std::string, std::set<uint64_t>> comm;
  size_t nccl = 0, unknown = 0;
  bool columns = false;
};
Seen seen(const std::string& file) {
  Seen s;
  auto tls = collectives::read_annotated(file);
  EXPECT_EQ(tls.size(), 1u);
  const auto& k = tls.at(0).kernels;
  s.columns = !k.nccl_bytes.empty();
  for (size_t i = 0; i < k.size(); ++i) {
    if (!k.is_nccl[i]) continue;
    ++s.nccl;
    if (!s.columns || k.nccl_bytes[i] < 0) {
      ++s.unknown;
      continue;
    }
    const auto info = collectives::classify_nccl_kernel(tls[0].names.str(k.name[i]));
    const std::string type = info ? collectives::collective_name(info->type) : "?";
    s.bytes[type].insert(k.nccl_bytes[i]);
    s.comm[type].insert(k.nccl_comm[i]);
  }
  return s;
}

TEST(Payloads, EachNcclKernelGetsItsMessageSizeAndCommunicator) {
  const fs::path dir = tmp_dir("payloads");
  sim::Options o = tiny(dir);  // 2x2x2: rank 0 is in tp-0, dp-0 and the pipeline link 0-4
  o.payloads = true;
  sim::generate(o);
  const Seen r0 = seen((dir / "rank_0.sqlite").string()), r1 = seen((dir / "rank_1.sqlite").string());
  ASSERT_TRUE(r0.columns);
  EXPECT_EQ(r0.unknown, 0u);
  // The generator's sizes: TP all-reduce 16 MiB, DP buckets 25 MiB, pipeline p2p 8 MiB.
  EXPECT_EQ(r0.bytes.at("AllReduce"), (std::set<int64_t>{16 << 20, 25 << 20}));
  EXPECT_EQ(r0.bytes.at("SendRecv"), (std::set<int64_t>{8 << 20}));
  // Two all-reduce communicators (TP and DP) and one p2p link; rank 1 shares rank 0's TP group only.
  EXPECT_EQ(r0.comm.at("AllReduce").size(), 2u);
  EXPECT_EQ(r0.comm.at("SendRecv").size(), 1u);
  std::set<uint64_t> shared;
  for (uint64_t c : r0.comm.at("AllReduce")) shared.insert(r1.comm.at("AllReduce").count(c) ? c : 0);
  shared.erase(0);
  EXPECT_EQ(shared.size(), 1u);
  // nsys writes the schemas once per process: a per-host file holds them several times.
  EXPECT_EQ(scalar((dir / "rank_0.sqlite").string(), "SELECT COUNT(*) FROM NVTX_PAYLOAD_SCHEMA_ENTRIES"), 9);
  fs::remove_all(dir);
}

TEST(Payloads, WithoutPayloadsNoColumns) {
  const fs::path dir = tmp_dir("no_payloads");
  sim::generate(tiny(dir));
  const Seen r0 = seen((dir / "rank_0.sqlite").string());
  EXPECT_FALSE(r0.columns);
  EXPECT_GT(r0.nccl, 0u);
  fs::remove_all(dir);
}

// Truncated blobs, an unknown schema id, a payload size beyond the blob, text instead of bytes,
// entries without offsets: those ranges have no payload; the rest still do; nothing fails.
TEST(Payloads, UndecodablePayloadsAreIgnored) {
  const fs::path dir = tmp_dir("bad_payloads");
  sim::Options o = tiny(dir);
  o.payloads = true;
  sim::generate(o);
  const std::string f = (dir / "rank_0.sqlite").string();
  const int64_t with = scalar(f, "SELECT COUNT(*) FROM NVTX_EVENTS WHERE binaryData IS NOT NULL");
  ASSERT_GT(with, 20);
  exec(f, "UPDATE NVTX_EVENTS SET binaryData = substr(binaryData, 1, 20) WHERE rowid IN "
          "(SELECT rowid FROM NVTX_EVENTS WHERE binaryData IS NOT NULL LIMIT 3);"
          "UPDATE NVTX_EVENTS SET binaryData = x'01000000000000000100000500000000ffffffffffffff7f38000000000000000000000000000000' "
          "WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS WHERE binaryData IS NOT NULL LIMIT 2 OFFSET 3);"
          "UPDATE NVTX_EVENTS SET binaryData = 'not a payload' WHERE rowid IN "
          "(SELECT rowid FROM NVTX_EVENTS WHERE length(binaryData) = 56 LIMIT 2 OFFSET 5);"
          "UPDATE NVTX_EVENTS SET binaryData = x'01000000000000004242424200000000' || zeroblob(40) WHERE rowid IN "
          "(SELECT rowid FROM NVTX_EVENTS WHERE length(binaryData) = 56 LIMIT 2 OFFSET 7);");
  const Seen r0 = seen(f);
  ASSERT_TRUE(r0.columns);
  EXPECT_GT(r0.unknown, 0u);
  EXPECT_LT(r0.unknown, r0.nccl);
  EXPECT_EQ(r0.bytes.at("AllReduce").count(16 << 20) + r0.bytes.at("AllReduce").count(25 << 20), 2u);
  for (const auto& [type, sizes] : r0.bytes)
    for (int64_t b : sizes) EXPECT_TRUE(b == 8 << 20 || b == 16 << 20 || b == 25 << 20) << type << " " << b;
  // Schema entries with offsets removed: no field can be placed, no payload at all.
  exec(f, "UPDATE NVTX_PAYLOAD_SCHEMA_ENTRIES SET offset = NULL");
  const Seen none = seen(f);
  EXPECT_EQ(none.unknown, none.nccl);
  fs::remove_all(dir);
}

}  // namespace
