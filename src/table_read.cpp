#include "table_read.hpp"

#include <optional>
#include <stdexcept>

namespace straggler::tables {
namespace {

std::string dataset(const std::string& group, const std::string& name) {
  return (group == "/" ? "" : group) + "/" + name;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// The values of one dataset as the column's type, with the width of a 2-D one.
Values read_values(const h5read::File& file, const std::string& path, ColumnType type, uint64_t* width) {
  auto numbers = [&](auto tag) {
    using T = decltype(tag);
    auto [v, w] = file.matrix<T>(path);
    *width = w;
    return v;
  };
  switch (type) {
    case ColumnType::U8: return numbers(uint8_t{});
    case ColumnType::I32: return numbers(int32_t{});
    case ColumnType::I64: return numbers(int64_t{});
    case ColumnType::U64: return numbers(uint64_t{});
    case ColumnType::F64: return numbers(double{});
    case ColumnType::String: *width = 1; return file.strings(path);
  }
  throw std::logic_error("unknown column type");
}

// The rows a column's dataset holds, from its shape alone (a Summed table: one).
uint64_t rows_of(const h5read::File& file, const std::string& path, const ColumnInfo& info, Distribution d) {
  const auto dims = file.shape(path);
  if (d == Distribution::Summed) return 1;
  if (info.shape == Shape::Ragged) {
    const auto off = file.shape(path + "_offsets");
    if (off.size() != 1 || off[0] == 0) fail(path + "_offsets: not a list of rows + 1 offsets");
    return off[0] - 1;
  }
  if (info.shape == Shape::Scalar && dims.size() > 1) fail(path + ": not 1-D");
  return dims.empty() ? 1 : dims[0];
}

// Every column present has the same row count, before any of them is read.
void check_rows(const h5read::File& file, const TableSchema& schema) {
  std::optional<uint64_t> rows;
  std::string first;
  for (const auto& info : schema.columns) {
    const std::string path = dataset(schema.path, info.name);
    if (!file.exists(path)) continue;
    const uint64_t n = rows_of(file, path, info, schema.distribution);
    if (rows && *rows != n)
      fail(path + ": " + std::to_string(n) + " rows where " + first + " has " + std::to_string(*rows));
    if (!rows) rows = n, first = path;
  }
}

// A ragged column's offsets: from 0, never decreasing, ending at the number of values.
void check_offsets(const std::string& path, const std::vector<int64_t>& off, uint64_t values) {
  if (off.empty() || off.front() != 0 || uint64_t(off.back()) != values)
    fail(path + "_offsets do not match " + path);
  for (size_t i = 1; i < off.size(); ++i)
    if (off[i] < off[i - 1]) fail(path + "_offsets decrease at row " + std::to_string(i - 1));
}

}  // namespace

void check_table_shape(const h5read::File& file, const TableSchema& schema) { check_rows(file, schema); }

TableData read_table(const h5read::File& file, const TableSchema& schema) {
  check_rows(file, schema);
  TableData d{schema.path, schema.description, schema.distribution, {}, {}, {}};
  for (const auto& info : schema.columns) {
    const std::string path = dataset(schema.path, info.name);
    // A column the file lacks is left out here; whether that is allowed (a column added() after the
    // file was written) is the table's to say (Table::rows_of).
    if (!file.exists(path)) continue;
    ColumnData c{info, empty_values(info.type), 1, {}};
    uint64_t width = 1;
    c.values = read_values(file, path, info.type, &width);
    if (info.shape == Shape::Ragged) {
      c.offsets = file.numbers<int64_t>(path + "_offsets");
      check_offsets(path, c.offsets, value_count(c.values));
    } else if (info.shape == Shape::Matrix) {
      // A Summed table holds one row of `width` values as a 1-D dataset; else rows x width.
      c.width = schema.distribution == Distribution::Summed ? value_count(c.values) : width;
    }
    d.columns.push_back(std::move(c));
  }
  return d;
}

}  // namespace straggler::tables
