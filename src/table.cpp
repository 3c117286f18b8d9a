#include "table.hpp"

namespace straggler::tables {

const char* type_name(ColumnType t) {
  switch (t) {
    case ColumnType::U8: return "uint8";
    case ColumnType::I32: return "int32";
    case ColumnType::I64: return "int64";
    case ColumnType::U64: return "uint64";
    case ColumnType::F64: return "float64";
    case ColumnType::String: return "string";
  }
  return "?";
}

Values empty_values(ColumnType t) {
  switch (t) {
    case ColumnType::U8: return std::vector<uint8_t>{};
    case ColumnType::I32: return std::vector<int32_t>{};
    case ColumnType::I64: return std::vector<int64_t>{};
    case ColumnType::U64: return std::vector<uint64_t>{};
    case ColumnType::F64: return std::vector<double>{};
    case ColumnType::String: return std::vector<std::string>{};
  }
  throw std::logic_error("unknown column type");
}

size_t value_count(const Values& v) {
  return std::visit([](const auto& x) { return x.size(); }, v);
}

uint64_t ColumnData::rows() const {
  if (info.shape == Shape::Ragged) return offsets.empty() ? 0 : offsets.size() - 1;
  const size_t n = value_count(values);
  return info.shape == Shape::Matrix ? (width ? n / width : 0) : n;
}

ColumnData& TableData::column(const std::string& name) {
  for (auto& c : columns)
    if (c.info.name == name) return c;
  throw std::logic_error(path + ": no column " + name);
}

uint64_t schema_hash(const std::vector<ColumnInfo>& columns) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&](unsigned char c) { h = (h ^ c) * 1099511628211ull; };
  for (const auto& c : columns) {
    for (char ch : c.name) mix(static_cast<unsigned char>(ch));
    mix(0), mix(uint8_t(c.type)), mix(uint8_t(c.shape));
  }
  return h;
}

}  // namespace straggler::tables
