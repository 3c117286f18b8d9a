// write_hdf5: any ResultTables, one group per table path and a dataset per column. Rows a process
// computed are written by that process; tables every process holds are written by process 0.
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"
#include "exchange.hpp"
#include "h5_file.hpp"
#include "hdf5_writer.hpp"
#include "output_files.hpp"

namespace straggler {
namespace {
namespace fs = std::filesystem;
using h5::AgreedError;
using h5::File;
using Rows = std::vector<uint64_t>;
using namespace tables;

const char* or_null(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

std::string dataset(const std::string& group, const std::string& name) {
  return (group == "/" ? "" : group) + "/" + name;
}

// Creates each group of `path` not made yet (collective: every process makes the same calls).
void ensure_group(File& f, std::set<std::string>& made, const std::string& path) {
  if (path == "/") return;
  size_t at = 0;
  do {
    at = path.find('/', at + 1);
    const std::string g = path.substr(0, at);
    if (made.insert(g).second) f.group(g);
  } while (at != std::string::npos);
}

// Global row index of each local row of a ByRank table: every process learns the row counts of
// every rank, and rows follow in rank order.
struct RowPlan {
  uint64_t total = 0;
  Rows local;  // global index of each local row, in local order
};

RowPlan plan_rows(Transport& t, const std::vector<int32_t>& row_ranks) {
  std::vector<std::pair<int32_t, uint64_t>> local;  // (rank, rows), a rank's rows adjacent
  for (int32_t r : row_ranks) {
    if (local.empty() || local.back().first != r) local.push_back({r, 0});
    ++local.back().second;
  }
  ByteWriter w;
  for (auto [r, n] : local) w.pod(r), w.pod(n);
  std::map<int32_t, uint64_t> counts;
  for (const auto& blob : t.allgather(w.bytes())) {
    ByteReader b(blob);
    while (!b.done()) {
      const auto r = b.pod<int32_t>();
      counts[r] += b.pod<uint64_t>();
    }
  }
  std::map<int32_t, uint64_t> offset;
  RowPlan p;
  for (auto [r, n] : counts) offset[r] = p.total, p.total += n;
  for (auto [r, n] : local)
    for (uint64_t i = 0; i < n; ++i) p.local.push_back(offset[r]++);
  return p;
}

Rows root_rows(const File& f, uint64_t n) {
  Rows rows;
  if (f.root()) rows.resize(n), std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

// One column's dataset(s): n rows in all, `rows` the global index of each local row.
void write_column(File& f, const std::string& path, uint64_t n, const Rows& rows, const ColumnData& c) {
  const char* units = or_null(c.info.unit);
  const char* description = or_null(c.info.description);
  if (c.info.shape == Shape::Ragged) {  // replicated only (checked by the caller)
    ColumnData values = c;
    values.info.shape = Shape::Scalar, values.offsets.clear();
    const uint64_t nv = value_count(c.values);
    write_column(f, path, nv, root_rows(f, nv), values);
    f.replicated(path + "_offsets", c.offsets, nullptr,
                 "row i holds the values [offsets[i], offsets[i+1]) of the column without _offsets");
    return;
  }
  std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) f.strings(path, n, rows, v, description);
        else if (c.info.shape == Shape::Matrix) {
          const uint64_t width = f.transport().reduce<uint64_t>(c.width, Transport::Op::Max);
          f.matrix(path, n, width, rows, v, units, description);
        } else f.column(path, n, rows, v, units, description);
      },
      c.values);
}

// Summed: each process's rows added up, then over all processes; process 0 writes the sum.
void write_summed(File& f, const std::string& path, const ColumnData& c) {
  const auto* v = std::get_if<std::vector<uint64_t>>(&c.values);
  if (!v) throw std::logic_error(path + ": a summed column must be uint64");
  std::vector<uint64_t> sum(c.width, 0);
  for (size_t i = 0; i < v->size(); ++i) sum[i % c.width] += (*v)[i];
  f.transport().allreduce(std::span<uint64_t>(sum), Transport::Op::Sum);
  f.replicated(path, sum, or_null(c.info.unit), or_null(c.info.description));
}

void write_table(File& f, const TableData& t) {
  if (t.distribution == Distribution::Summed) {
    for (const auto& c : t.columns) write_summed(f, dataset(t.path, c.info.name), c);
  } else if (t.distribution == Distribution::ByRank) {
    const RowPlan p = plan_rows(f.transport(), t.row_ranks);
    for (const auto& c : t.columns) {
      if (c.info.shape == Shape::Ragged) throw std::logic_error(t.path + ": ragged columns must be replicated");
      write_column(f, dataset(t.path, c.info.name), p.total, p.local, c);
    }
  } else if (t.distribution == Distribution::Replicated) {
    for (const auto& c : t.columns) write_column(f, dataset(t.path, c.info.name), c.rows(), root_rows(f, c.rows()), c);
  } else {
    throw std::logic_error(t.path + ": a streamed table outside StreamedTables");
  }
  for (const auto& a : t.attributes) std::visit([&](const auto& v) { f.attr(t.path, a.name.c_str(), v); }, a.value);
}

// A numeric column filled block by block (File::Column of the stored type).
class AnyColumn {
 public:
  AnyColumn(File& f, const std::string& path, uint64_t n, const ColumnInfo& i) {
    auto open = [&](auto tag) {
      using T = decltype(tag);
      col_ = std::make_unique<File::Column<T>>(f, path, n, or_null(i.unit), or_null(i.description));
    };
    switch (i.type) {
      case ColumnType::U8: open(uint8_t{}); break;
      case ColumnType::I32: open(int32_t{}); break;
      case ColumnType::I64: open(int64_t{}); break;
      case ColumnType::U64: open(uint64_t{}); break;
      case ColumnType::F64: open(double{}); break;
      case ColumnType::String: throw std::logic_error(path + ": streamed string columns are not supported");
    }
  }
  void add(uint64_t first_row, const Values& values) {
    std::visit(
        [&](auto& c, const auto& v) {
          using C = typename std::decay_t<decltype(*c)>;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<C, File::Column<typename V::value_type>>) c->add(first_row, v);
          else throw std::logic_error("streamed block of another type");
        },
        col_, values);
  }
  void finish() {
    std::visit([](auto& c) { c->finish(); }, col_);
  }

 private:
  std::variant<std::unique_ptr<File::Column<uint8_t>>, std::unique_ptr<File::Column<int32_t>>,
               std::unique_ptr<File::Column<int64_t>>, std::unique_ptr<File::Column<uint64_t>>,
               std::unique_ptr<File::Column<double>>>
      col_;
};

void write_streamed(File& f, std::set<std::string>& groups, const StreamedTables& s) {
  std::vector<std::vector<std::unique_ptr<AnyColumn>>> cols(s.tables.size());
  for (size_t t = 0; t < s.tables.size(); ++t) {
    ensure_group(f, groups, s.tables[t].path);
    for (const auto& c : s.tables[t].columns)
      cols[t].push_back(std::make_unique<AnyColumn>(f, dataset(s.tables[t].path, c.info.name), s.rows[t], c.info));
  }
  if (!f.measuring() && s.produce)
    s.produce([&](size_t t, uint64_t first_row, const std::vector<ColumnData>& block) {
      for (size_t i = 0; i < block.size(); ++i) cols[t][i]->add(first_row, block[i].values);
    });
  for (auto& table : cols)
    for (auto& c : table) c->finish();
}

void write_all(File& f, const ResultTables& rt) {
  for (const auto& a : rt.file_attributes) std::visit([&](const auto& v) { f.attr("/", a.name.c_str(), v); }, a.value);
  std::set<std::string> groups;
  for (const auto& t : rt.tables) {
    ensure_group(f, groups, t.path);
    write_table(f, t);
  }
  for (const auto& s : rt.streamed) write_streamed(f, groups, s);
}

// The disk the file needs, taken before any data is written (process 0, for all): a file system
// that fills during the write made parallel HDF5 deadlock in H5Fclose or crash at exit, its
// metadata flush failing on some processes only (repro N2, D4). Throws on every process alike.
void reserve(Transport& t, const std::string& tmp, uint64_t need) {
  ByteWriter w;
  if (t.root()) w.str(common::reserve_space(tmp, need));
  const std::string blob = t.broadcast(w.bytes(), 0);
  if (std::string why = ByteReader(blob).str(); !why.empty())
    throw AgreedError(fmt::format("cannot reserve the {:.1f} MB it needs: {}", double(need) / 1e6, why));
}

}  // namespace

void write_hdf5(Transport& t, const std::string& path, const std::string& tmp, const ResultTables& rt) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // our own one-line errors instead of HDF5's stack
  // The bytes a dry run counts, with room to spare: checked against the free space first (a clear
  // message), then reserved once the file exists (reserve()).
  uint64_t need = 0;
  {
    File measure(t, File::Measure{});
    write_all(measure, rt);
    need = measure.measured_bytes() + measure.measured_bytes() / 4 + (uint64_t(1) << 20);
  }
  ByteWriter w;
  if (t.root()) {
    const int64_t room = common::free_bytes(tmp);
    w.str(room >= 0 && uint64_t(room) < need
              ? fmt::format("not enough space on its file system: it needs about {:.1f} MB, {:.1f} MB are free",
                            double(need) / 1e6, double(room) / 1e6)
              : std::string());
  }
  const std::string blob = t.broadcast(w.bytes(), 0);
  if (std::string why = ByteReader(blob).str(); !why.empty())
    throw common::OutputError(common::printable(path) + ": cannot write HDF5 output (" + why + ")");
  try {
    // HDF5's collective calls block inside HDF5: a watchdog bounds them (File calls alive()).
    const auto guard = t.blocking("writing the HDF5 file " + path);
    File f(t, tmp, path);
    reserve(t, tmp, need);
    write_all(f, rt);
    f.close();
  } catch (const std::runtime_error& e) {
    const std::string line = common::printable(path + ": cannot write HDF5 output (" + e.what() + ")");
    // Another failure of an HDF5 call may be this process's alone (a metadata flush that failed
    // here), with the others inside HDF5's collective calls for good: end the job now (the fuzzer
    // saw a late write error wait out --timeout).
    if (t.size() > 1 && !dynamic_cast<const h5::AgreedError*>(&e)) t.abort_job(line);
    std::error_code ec;
    if (t.root()) fs::remove(tmp, ec);
    throw common::OutputError(line);
  }
}

}  // namespace straggler
