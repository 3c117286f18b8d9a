#include "table_read.hpp"

#include <stdexcept>

#include "h5_read.hpp"

namespace straggler::tables {
namespace {

std::string dataset(const std::string& group, const std::string& name) {
  return (group == "/" ? "" : group) + "/" + name;
}

template <class T>
std::vector<T> cast_all(const std::vector<int64_t>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The values of one dataset as the column's type, with the width of a 2-D one.
Values read_values(const std::string& file, const std::string& path, ColumnType type, uint64_t* width) {
  auto numbers = [&](auto tag) {
    using T = decltype(tag);
    auto [v, w] = h5read::matrix<T>(file, path);
    *width = w;
    return v;
  };
  switch (type) {
    case ColumnType::U8: return numbers(uint8_t{});
    case ColumnType::I32: return numbers(int32_t{});
    case ColumnType::I64: return numbers(int64_t{});
    case ColumnType::U64: return numbers(uint64_t{});
    case ColumnType::F64: return numbers(double{});
    case ColumnType::String: *width = 1; return h5read::strings(file, path);
  }
  throw std::logic_error("unknown column type");
}

}  // namespace

TableData read_table(const std::string& file, const TableSchema& schema) {
  TableData d{schema.path, schema.description, schema.distribution, {}, {}, {}};
  for (const auto& info : schema.columns) {
    const std::string path = dataset(schema.path, info.name);
    // A column the file lacks is left out here; whether that is allowed (a column added() after the
    // file was written) is the table's to say (Table::rows_of).
    if (!h5read::exists(file, path)) continue;
    ColumnData c{info, empty_values(info.type), 1, {}};
    uint64_t width = 1;
    c.values = read_values(file, path, info.type, &width);
    if (info.shape == Shape::Ragged) {
      c.offsets = h5read::numbers<int64_t>(file, path + "_offsets");
      if (c.offsets.empty() || c.offsets.front() != 0 || uint64_t(c.offsets.back()) != value_count(c.values))
        throw std::runtime_error(file + ": " + path + "_offsets do not match " + path);
    } else if (info.shape == Shape::Matrix) {
      // A Summed table holds one row of `width` values as a 1-D dataset; else rows x width.
      c.width = schema.distribution == Distribution::Summed ? value_count(c.values) : width;
    }
    d.columns.push_back(std::move(c));
  }
  return d;
}

}  // namespace straggler::tables
