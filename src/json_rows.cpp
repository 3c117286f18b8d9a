#include "json_rows.hpp"

namespace straggler {
namespace {
using tables::ColumnData;
using tables::Shape;
using tables::TableData;

void json_value(JsonWriter& j, const ColumnData& c, size_t first, size_t count, bool array) {
  std::visit(
      [&](const auto& v) {
        if (array) j.begin_array();
        for (size_t i = first; i < first + count; ++i) {
          using T = typename std::decay_t<decltype(v)>::value_type;
          if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, double>) j.value(v[i]);
          else j.value(int64_t(v[i]));
        }
        if (array) j.end_array();
      },
      c.values);
}

bool negative(const ColumnData& c, size_t row) {
  return std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) return false;
        else return v[row] < T(0);
      },
      c.values);
}

}  // namespace

void json_rows(JsonWriter& j, const TableData& t, const JsonView& view) {
  const size_t n = t.columns.empty() ? 0 : size_t(t.columns.front().rows());
  j.begin_array();
  for (size_t r = 0; r < n; ++r) {
    j.begin_object();
    for (const auto& c : t.columns) {
      const std::string& name = c.info.name;
      if (view.omit.count(name) || (view.omit_if_negative.count(name) && negative(c, r))) continue;
      j.key(name);
      if (view.null_if_negative.count(name) && negative(c, r)) j.null();
      else if (c.info.shape == Shape::Ragged) json_value(j, c, size_t(c.offsets[r]), size_t(c.offsets[r + 1] - c.offsets[r]), true);
      else json_value(j, c, r, 1, false);
    }
    if (view.extra) view.extra(j, r);
    j.end_object();
  }
  j.end_array();
}

std::string json_rows(const TableData& t, const JsonView& view) {
  JsonWriter j;
  json_rows(j, t, view);
  return j.str();
}

}  // namespace straggler
