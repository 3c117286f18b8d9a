// Result tables declared once. A table declares its columns (name, type, unit, description) in
// one place, next to its row type (src/tables/); that one declaration drives the HDF5 writer, the
// MPI packing of rows between processes, and the column lists of docs/hdf5-layout.md.
//
//   Table<Row> t{"/kernels/top", "each rank's top kernels", Distribution::ByRank,
//                {col("rank", &Row::rank), col("total_ms", &Row::total_ms, "ms"),
//                 computed<Row>("mean_ms", [](const Row& r) { return r.total_ms / r.count; }, "ms")}};
//   TableData d = t.materialize(rows);   // what writers iterate over (type-erased)
//   t.pack(writer, rows); rows = t.unpack(reader);   // between processes, schema-checked
//
// Writers know ResultTables only, never the analyses that filled them.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "exchange.hpp"

namespace straggler::tables {

// Stored types; the order matches Values' alternatives.
enum class ColumnType : uint8_t { U8, I32, I64, U64, F64, String };
const char* type_name(ColumnType t);  // "uint8", ..., "string"

enum class Distribution : uint8_t {
  ByRank,      // each process holds the rows of the ranks it read; placed in rank order
  Replicated,  // identical on every process; process 0 writes it
  Summed,      // each process holds partial rows (uint64); the file holds their sum over all
               // rows of all processes (one row, written as a 1-D dataset of `width` values)
  Streamed,    // produced block by block while writing (StreamedTables), placed by the producer
};

enum class Shape : uint8_t {
  Scalar,  // one value per row
  Matrix,  // `width` values per row (HDF5: rows x width)
  Ragged,  // a list per row: NAME holds the values of all rows, NAME_offsets (int64, rows + 1)
           // where each row's values start
};

struct ColumnInfo {
  std::string name;
  ColumnType type = ColumnType::F64;
  std::string unit;         // HDF5 "units" attribute ("": none)
  std::string description;  // HDF5 "description" attribute ("": none)
  Shape shape = Shape::Scalar;
  std::string width_doc;    // Matrix: what the second dimension counts (docs)
  uint64_t width = 0;       // Matrix: fixed width (std::array); 0 when known only at run time
  std::string doc;          // docs/hdf5-layout.md only (default: the description)
};

using Values = std::variant<std::vector<uint8_t>, std::vector<int32_t>, std::vector<int64_t>, std::vector<uint64_t>,
                            std::vector<double>, std::vector<std::string>>;
Values empty_values(ColumnType t);
size_t value_count(const Values& v);

template <class T>
constexpr ColumnType column_type_of() {
  if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>) return ColumnType::U8;
  else if constexpr (std::is_same_v<T, int32_t>) return ColumnType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return ColumnType::I64;
  else if constexpr (std::is_same_v<T, uint64_t>) return ColumnType::U64;
  else if constexpr (std::is_same_v<T, double>) return ColumnType::F64;
  else if constexpr (std::is_same_v<T, std::string>) return ColumnType::String;
  else static_assert(sizeof(T) == 0, "unsupported column type");
}
template <class T>
using stored_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

// One materialized column: row-major values (rows x width), offsets for ragged columns.
struct ColumnData {
  ColumnInfo info;
  Values values;
  uint64_t width = 1;            // Matrix
  std::vector<int64_t> offsets;  // Ragged: rows + 1, starting at 0
  uint64_t rows() const;
};

struct Attribute {
  std::string name;
  std::variant<std::string, double, int64_t, std::vector<std::string>> value;
};

// A table as writers see it: the columns of one record type, materialized. Several tables may
// share a group (path); the group holds every table's datasets.
struct TableData {
  std::string path, description;
  Distribution distribution = Distribution::Replicated;
  std::vector<ColumnData> columns;
  std::vector<Attribute> attributes;  // on the group
  std::vector<int32_t> row_ranks;     // ByRank: the rank of each local row (a rank's rows adjacent)
  ColumnData& column(const std::string& name);  // throws std::logic_error when absent
};

// Tables whose rows are produced block by block while writing (never all in memory), e.g. the
// per-op tables replayed per communicator. `tables` declare the columns (values empty); `rows`
// gives each table's global row count. `produce` calls `emit(table index, first row, block)` for
// the blocks this process holds; each block holds every column of that table, scalar columns only.
struct StreamedTables {
  using Emit = std::function<void(size_t table, uint64_t first_row, const std::vector<ColumnData>& block)>;
  std::vector<TableData> tables;
  std::vector<uint64_t> rows;
  std::function<void(const Emit&)> produce;
};

// Everything a writer writes: file attributes, then the tables, then the streamed tables.
struct ResultTables {
  std::vector<Attribute> file_attributes;
  std::vector<TableData> tables;
  std::vector<StreamedTables> streamed;
};

// A table's declaration without its data (docs, schema checks).
struct TableSchema {
  std::string path, description;
  Distribution distribution = Distribution::Replicated;
  std::vector<ColumnInfo> columns;
};

// FNV-1a over the names, types and shapes of `columns`: packed blobs start with it.
uint64_t schema_hash(const std::vector<ColumnInfo>& columns);

// ---- Typed declarations ----

template <class Row>
struct Column {
  ColumnInfo info;
  std::function<void(const Row&, ColumnData&)> append;  // one row's value(s)
  // Member columns only (computed ones are derived, not shipped): packing between processes.
  std::function<void(const Row&, ByteWriter&)> put;
  std::function<void(ByteReader&, Row&)> get;
  // Reading back (a saved scan, src/scan_load.hpp): sets the row's member from row `row` of the
  // column as read from a file. Member columns have it; a computed column has it only where its
  // declaration says how (computed(...).reads(...)), else its value is derived again.
  std::function<void(const ColumnData&, size_t, Row&)> load;
  // Added to a table after files without it were written: a file without it reads back with the
  // row's default (col(...).added()). Every other column missing from a file is an error.
  bool optional = false;
  // What docs/hdf5-layout.md says of it, where more than the HDF5 description: col(...).doc("...").
  Column doc(std::string text) && {
    info.doc = std::move(text);
    return std::move(*this);
  }
  Column added() && {
    optional = true;
    return std::move(*this);
  }
  template <class F>
  Column reads(F f) && {
    load = std::move(f);
    return std::move(*this);
  }
};

namespace detail {
using straggler::wire_detail::is_vector;
template <class T>
struct is_array : std::false_type {};
template <class T, size_t N>
struct is_array<std::array<T, N>> : std::true_type {};

// Appends one row's value to `c` (scalar, fixed-size array, or list).
template <class T>
void append_value(ColumnData& c, const T& v) {
  if constexpr (is_vector<T>::value || is_array<T>::value) {
    using E = stored_t<typename T::value_type>;
    auto& out = std::get<std::vector<E>>(c.values);
    out.insert(out.end(), v.begin(), v.end());
    if (c.info.shape == Shape::Ragged) c.offsets.push_back(int64_t(out.size()));
    else if (c.info.shape == Shape::Matrix) c.width = v.size();
  } else {
    std::get<std::vector<stored_t<T>>>(c.values).push_back(stored_t<T>(v));
  }
}

// Row `row` of `c` into `out` (the inverse of append_value).
template <class T>
void load_value(const ColumnData& c, size_t row, T& out) {
  if constexpr (is_vector<T>::value || is_array<T>::value) {
    using E = stored_t<typename T::value_type>;
    const auto& in = std::get<std::vector<E>>(c.values);
    size_t from = 0, to = 0;
    if (c.info.shape == Shape::Ragged) from = size_t(c.offsets.at(row)), to = size_t(c.offsets.at(row + 1));
    else from = row * c.width, to = from + c.width;
    if (to > in.size() || from > to) throw std::out_of_range(c.info.name + ": row " + std::to_string(row) + " out of range");
    if constexpr (is_vector<T>::value) {
      out.assign(in.begin() + long(from), in.begin() + long(to));
    } else {
      if (to - from != out.size()) throw std::out_of_range(c.info.name + ": width differs from the declaration");
      for (size_t i = 0; i < out.size(); ++i) out[i] = typename T::value_type(in[from + i]);
    }
  } else {
    out = T(std::get<std::vector<stored_t<T>>>(c.values).at(row));
  }
}

template <class T>
ColumnInfo info_for(std::string name, std::string unit, std::string description) {
  ColumnInfo i{std::move(name), ColumnType::F64, std::move(unit), std::move(description), Shape::Scalar, "", 0, ""};
  if constexpr (is_vector<T>::value) {
    i.type = column_type_of<stored_t<typename T::value_type>>(), i.shape = Shape::Ragged;
  } else if constexpr (is_array<T>::value) {
    i.type = column_type_of<stored_t<typename T::value_type>>(), i.shape = Shape::Matrix;
    i.width = std::tuple_size_v<T>, i.width_doc = std::to_string(i.width);
  } else {
    i.type = column_type_of<stored_t<T>>();
  }
  return i;
}
}  // namespace detail

// A member: scalar (u8/bool, i32, i64, u64, f64, string), std::vector (ragged) or std::array
// (matrix). Shipped between processes as is.
template <class Row, class T>
Column<Row> col(std::string name, T Row::*m, std::string unit = "", std::string description = "") {
  Column<Row> c{detail::info_for<T>(std::move(name), std::move(unit), std::move(description)), {}, {}, {}, {}};
  c.append = [m](const Row& r, ColumnData& d) { detail::append_value(d, r.*m); };
  c.put = [m](const Row& r, ByteWriter& w) { straggler::put(w, r.*m); };
  c.get = [m](ByteReader& b, Row& r) { straggler::get_into(b, r.*m); };
  c.load = [m](const ColumnData& d, size_t row, Row& r) { detail::load_value(d, row, r.*m); };
  return c;
}

// An enum member written as its name (a string column), shipped as its integer; read back by
// name over its `count` codes 0..count-1 (a name no code has is an error).
template <class Row, class E, class NameFn>
Column<Row> enum_col(std::string name, E Row::*m, NameFn name_of, int count, std::string description = "") {
  static_assert(std::is_enum_v<E> || std::is_integral_v<E>);
  Column<Row> c{detail::info_for<std::string>(std::move(name), "", std::move(description)), {}, {}, {}, {}};
  c.append = [m, name_of](const Row& r, ColumnData& d) { detail::append_value(d, std::string(name_of(r.*m))); };
  c.put = [m](const Row& r, ByteWriter& w) { w.pod(r.*m); };
  c.get = [m](ByteReader& b, Row& r) { r.*m = b.pod<E>(); };
  c.load = [m, name_of, count](const ColumnData& d, size_t row, Row& r) {
    const std::string& s = std::get<std::vector<std::string>>(d.values).at(row);
    for (int code = 0; code < count; ++code)
      if (s == name_of(E(code))) {
        r.*m = E(code);
        return;
      }
    throw std::runtime_error(d.info.name + ": unknown value \"" + s + "\"");
  };
  return c;
}

// A value derived from the row (unit conversion, a code): its type is what `f` returns (scalar,
// std::vector for ragged, std::array for a matrix). Not shipped: derived again where needed.
template <class Row, class F>
Column<Row> computed(std::string name, F f, std::string unit = "", std::string description = "") {
  using T = std::decay_t<std::invoke_result_t<F, const Row&>>;
  Column<Row> c{detail::info_for<T>(std::move(name), std::move(unit), std::move(description)), {}, {}, {}, {}};
  c.append = [f](const Row& r, ColumnData& d) { detail::append_value(d, f(r)); };
  return c;
}

// A matrix whose width is known only at run time (`f` returns a std::vector of `width` values;
// set the width of an empty table with TableData::column(name).width).
template <class Row, class F>
Column<Row> matrix(std::string name, std::string width_doc, F f, std::string unit = "", std::string description = "") {
  using V = std::decay_t<std::invoke_result_t<F, const Row&>>;
  Column<Row> c{detail::info_for<V>(std::move(name), std::move(unit), std::move(description)), {}, {}, {}, {}};
  c.info.shape = Shape::Matrix, c.info.width_doc = std::move(width_doc);
  c.append = [f](const Row& r, ColumnData& d) { detail::append_value(d, f(r)); };
  return c;
}

template <class Row>
struct Table {
  std::string path, description;
  Distribution distribution = Distribution::Replicated;
  std::vector<Column<Row>> columns;
  std::function<int32_t(const Row&)> rank_of = {};  // ByRank

  TableSchema schema() const {
    TableSchema s{path, description, distribution, {}};
    for (const auto& c : columns) s.columns.push_back(c.info);
    return s;
  }

  template <class Rows>
  TableData materialize(const Rows& rows) const {
    TableData d{path, description, distribution, {}, {}, {}};
    for (const auto& c : columns) {
      ColumnData cd{c.info, empty_values(c.info.type), c.info.width ? c.info.width : 1, {}};
      if (c.info.shape == Shape::Ragged) cd.offsets.push_back(0);
      for (const auto& r : rows) c.append(r, cd);
      d.columns.push_back(std::move(cd));
    }
    if (distribution == Distribution::ByRank) {
      if (!rank_of) throw std::logic_error(path + ": a ByRank table needs rank_of");
      for (const auto& r : rows) d.row_ranks.push_back(rank_of(r));
    }
    return d;
  }

  // The rows of a table read back from a file (read_table, src/h5_read_tables.hpp): every column
  // that can be read back sets its part of each row; a column missing from `d` is an error
  // unless declared added().
  std::vector<Row> rows_of(const TableData& d) const {
    std::vector<const ColumnData*> in;
    uint64_t n = 0;
    for (const auto& c : columns) {
      const ColumnData* found = nullptr;
      for (const auto& x : d.columns)
        if (x.info.name == c.info.name) found = &x;
      if (!found && !c.optional) throw std::runtime_error(path + "/" + c.info.name + ": not in the file");
      in.push_back(found);
      if (c.load && found) n = std::max(n, found->rows());
    }
    std::vector<Row> rows(n);
    for (size_t k = 0; k < columns.size(); ++k)
      if (columns[k].load && in[k]) {
        if (in[k]->rows() != n) throw std::runtime_error(path + "/" + columns[k].info.name + ": row count differs");
        for (size_t i = 0; i < n; ++i) columns[k].load(*in[k], i, rows[i]);
      }
    return rows;
  }

  // Ships whole rows (every member column; computed ones are derived from them), after a schema
  // hash and the row count, so a reader built from another declaration fails loudly.
  void pack(ByteWriter& w, const std::vector<Row>& rows) const {
    w.pod(packed_hash()), w.pod<uint64_t>(rows.size());
    for (const auto& r : rows)
      for (const auto& c : columns)
        if (c.put) c.put(r, w);
  }
  std::vector<Row> unpack(ByteReader& b) const {
    if (b.pod<uint64_t>() != packed_hash()) throw std::logic_error(path + ": packed rows of another schema");
    std::vector<Row> rows(b.pod<uint64_t>());
    for (auto& r : rows)
      for (const auto& c : columns)
        if (c.get) c.get(b, r);
    return rows;
  }

 private:
  uint64_t packed_hash() const {
    std::vector<ColumnInfo> shipped;
    for (const auto& c : columns)
      if (c.put) shipped.push_back(c.info);
    return schema_hash(shipped);
  }
};

}  // namespace straggler::tables

// Where things live: each table's declaration sits in src/tables/ (one file per group of
// tables), beside its row type; each analysis (src/analysis.hpp, src/analyses/) fills its tables;
// src/tables/collect.hpp assembles the ResultTables of a run from the registered analyses;
// src/hdf5_writer.hpp writes any ResultTables; src/tables/catalog.hpp lists every table the
// registered analyses declare, and docs/hdf5-layout.md shows their columns (generated:
// scripts/update_layout_doc.sh; checked by the test layout_doc_current). A new table: declare it,
// have its analysis add it in tables(), add a generated block for its group to the doc if it
// starts a new group, and run scripts/update_layout_doc.sh (docs/analyses.md).
