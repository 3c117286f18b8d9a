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
           enum_col("color", &Row::color, color_name, 2),
           computed<Row>("wait_ms", [](const Row& r) { return r.wait_ns / 1e6; }, "ms", "waits")},
          [](const Row& r) { return r.rank; }};
}
const std::vector<Row> kRows = {{3, "a", 2e6, {1, 2}, Color::Blue}, {5, "b", 0, {}, Color::Red}};
}  // namespace

TEST(Tables, RowsReadBackAreTheRowsMaterialized) {
  // What a file gives back (TableData) is turned into the same rows: scalars, ragged lists and
  // enums by name; computed columns are derived, not read.
  const auto rows = table().rows_of(table().materialize(kRows));
  ASSERT_EQ(rows.size(), kRows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].rank, kRows[i].rank);
    EXPECT_EQ(rows[i].host, kRows[i].host);
    EXPECT_EQ(rows[i].peers, kRows[i].peers);
    EXPECT_EQ(rows[i].color, kRows[i].color);
    EXPECT_EQ(rows[i].wait_ns, 0.0);  // computed: not read back
  }
  TableData broken = table().materialize(kRows);
  std::get<std::vector<std::string>>(broken.column("color").values)[1] = "green";
  EXPECT_THROW(table().rows_of(broken), std::runtime_error);
  broken.columns.pop_back();  // wait_ms
  broken.columns.erase(broken.columns.begin());  // rank
  EXPECT_THROW(table().rows_of(broken), std::runtime_error);
}

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

// ---- The generic HDF5 writer over hand-made ResultTables (one process, no MPI) ----
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>

#include "hdf5_writer.hpp"

namespace {
struct Link {
  std::vector<std::string> hosts;
  std::vector<int32_t> ranks;
};
struct Bin {
  std::array<uint64_t, 3> counts{};
  int32_t rank = 0;
};

template <class T>
std::vector<T> read(hid_t f, const char* path, hid_t type) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  EXPECT_GE(d, 0) << path;
  if (d < 0) return {};
  hid_t s = H5Dget_space(d);
  std::vector<T> v(size_t(H5Sget_simple_extent_npoints(s)));
  if (!v.empty()) H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Sclose(s), H5Dclose(d);
  return v;
}

std::vector<std::string> read_strings(hid_t f, const char* path) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  hid_t t = H5Dget_type(d), s = H5Dget_space(d);
  const size_t len = H5Tget_size(t), n = size_t(H5Sget_simple_extent_npoints(s));
  std::vector<char> buf(n * len + 1, '\0');
  if (n) H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(buf.data() + i * len, strnlen(buf.data() + i * len, len));
  H5Tclose(t), H5Sclose(s), H5Dclose(d);
  return out;
}

ResultTables sample_tables() {
  ResultTables rt;
  rt.file_attributes = {{"tool", std::string("test")}, {"ranks", int64_t(2)}};
  Table<Link> links{"/links", "", Distribution::Replicated, {col("hosts", &Link::hosts), col("ranks", &Link::ranks)}};
  rt.tables.push_back(links.materialize(std::vector<Link>{{{"a", "bb"}, {1}}, {{}, {}}, {{"c"}, {2, 3}}}));
  rt.tables.back().attributes = {{"note", 1.5}};
  Table<Bin> summed{"/h", "", Distribution::Summed, {col("counts_all", &Bin::counts, "count")}};
  rt.tables.push_back(summed.materialize(std::vector<Bin>{{{1, 2, 3}, 0}, {{10, 20, 30}, 1}}));
  Table<Bin> per_rank{"/h", "", Distribution::ByRank, {col("counts", &Bin::counts)}, [](const Bin& b) { return b.rank; }};
  rt.tables.push_back(per_rank.materialize(std::vector<Bin>{{{4, 5, 6}, 1}, {{1, 2, 3}, 0}}));
  Table<Bin> ops{"/s/ops", "", Distribution::Streamed, {col("rank", &Bin::rank)}};
  StreamedTables s;
  s.tables = {ops.materialize(std::vector<Bin>{})};
  s.rows = {4};
  s.produce = [ops](const StreamedTables::Emit& emit) {  // blocks out of order
    emit(0, 2, ops.materialize(std::vector<Bin>{{{}, 7}, {{}, 8}}).columns);
    emit(0, 0, ops.materialize(std::vector<Bin>{{{}, 5}, {{}, 6}}).columns);
  };
  rt.streamed.push_back(s);
  return rt;
}
}  // namespace

TEST(Tables, WriterWritesRaggedSummedByRankAndStreamedTables) {
  const auto dir = std::filesystem::temp_directory_path() / ("tables-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.h5").string();
  auto t = local_transport();
  write_hdf5(*t, path, path, sample_tables());
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_EQ(read_strings(f, "/links/hosts"), (std::vector<std::string>{"a", "bb", "c"}));
  EXPECT_EQ(read<int64_t>(f, "/links/hosts_offsets", H5T_NATIVE_INT64), (std::vector<int64_t>{0, 2, 2, 3}));
  EXPECT_EQ(read<int32_t>(f, "/links/ranks", H5T_NATIVE_INT32), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(read<int64_t>(f, "/links/ranks_offsets", H5T_NATIVE_INT64), (std::vector<int64_t>{0, 1, 1, 3}));
  EXPECT_EQ(read<uint64_t>(f, "/h/counts_all", H5T_NATIVE_UINT64), (std::vector<uint64_t>{11, 22, 33}));
  // ByRank rows are placed in rank order, whatever the local order.
  EXPECT_EQ(read<uint64_t>(f, "/h/counts", H5T_NATIVE_UINT64), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(read<int32_t>(f, "/s/ops/rank", H5T_NATIVE_INT32), (std::vector<int32_t>{5, 6, 7, 8}));
  double note = 0;
  hid_t a = H5Aopen_by_name(f, "/links", "note", H5P_DEFAULT, H5P_DEFAULT);
  H5Aread(a, H5T_NATIVE_DOUBLE, &note), H5Aclose(a);
  EXPECT_EQ(note, 1.5);
  H5Fclose(f);
  std::filesystem::remove_all(dir);
}
