// The table declaration API (src/table.hpp): materializing, ragged lists, packing with a schema check.
#include <gtest/gtest.h>

#include "table.hpp"

using namespace straggler;
using namespace straggler::tables;

namespace {
enum class Color : uint8_t { Red, Blue };
const char* color_name(Color c) { return c == Color::Red ? "red" : "blue"; }

struct Row {
  int32_t rank = -1;
  std::string host;
  double wait_ns = 0;
  std::vector<int32_t> peers;
  Color color = Color::Red;
};

Table<Row> table() {
  return {"/t", "test rows", Distribution::ByRank,
          {col("rank", &Row::rank), col("host", &Row::host), col("peers", &Row::peers),
           enum_col("color", &Row::color, color_name),
           computed<Row>("wait_ms", [](const Row& r) { return r.wait_ns / 1e6; }, "ms", "waits")},
          [](const Row& r) { return r.rank; }};
}
const std::vector<Row> kRows = {{3, "a", 2e6, {1, 2}, Color::Blue}, {5, "b", 0, {}, Color::Red}};
}  // namespace

TEST(Tables, MaterializesScalarRaggedEnumAndComputedColumns) {
  TableData d = table().materialize(kRows);
  EXPECT_EQ(d.row_ranks, (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(std::get<std::vector<int32_t>>(d.column("rank").values), (std::vector<int32_t>{3, 5}));
  const ColumnData& peers = d.column("peers");
  EXPECT_EQ(peers.info.shape, Shape::Ragged);
  EXPECT_EQ(std::get<std::vector<int32_t>>(peers.values), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(peers.offsets, (std::vector<int64_t>{0, 2, 2}));
  EXPECT_EQ(peers.rows(), 2u);
  EXPECT_EQ(std::get<std::vector<std::string>>(d.column("color").values), (std::vector<std::string>{"blue", "red"}));
  EXPECT_EQ(std::get<std::vector<double>>(d.column("wait_ms").values), (std::vector<double>{2.0, 0.0}));
  EXPECT_EQ(d.column("wait_ms").info.unit, "ms");
}

TEST(Tables, PacksAndUnpacksRows) {
  ByteWriter w;
  table().pack(w, kRows);
  ByteReader b(w.bytes());
  auto rows = table().unpack(b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(b.done());
  EXPECT_EQ(rows[0].host, "a");
  EXPECT_EQ(rows[0].peers, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(rows[0].color, Color::Blue);
  EXPECT_EQ(rows[1].rank, 5);
  EXPECT_EQ(rows[0].wait_ns, 0);  // computed columns are not shipped
}

TEST(Tables, UnpackRejectsAnotherSchema) {
  ByteWriter w;
  table().pack(w, kRows);
  Table<Row> other = table();
  other.columns.erase(other.columns.begin() + 1);  // no host
  ByteReader b(w.bytes());
  EXPECT_THROW(other.unpack(b), std::logic_error);
}
