// write_hdf5 (src/h5_writer.cpp): read the file back with the HDF5 C API. Runs alone (singleton
// MPI) and under `mpirun -n 2|3 --oversubscribe`, where each process passes only some ranks' rows
// and the file must equal the one process 0 writes alone (MPI_COMM_SELF) with all rows.
// Every test makes its collective calls first and asserts afterwards, so a failed check on one
// process never leaves the others waiting in a collective.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "h5_file.hpp"
#include "hdf5_writer.hpp"
#include "output_files.hpp"
#include "tables/collect.hpp"
#include "transport.hpp"
#include "version.hpp"

namespace fs = std::filesystem;
using namespace straggler;

namespace {

int me() { int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
int nprocs() { int n; MPI_Comm_size(MPI_COMM_WORLD, &n); return n; }

Transport& world() {
  static auto t = mpi_transport(MPI_COMM_WORLD);
  return *t;
}

// What the driver does: the file under its temporary name, then renamed into place.
void write_file(Transport& t, const std::string& path, const RunResults& res) {
  OutputFiles files(t, path, "");
  write_hdf5(t, path, files.h5_temp(), tables::collect_tables(res, make_analyses(Options{})));
  files.commit("");
}

// A folder every process agrees on (process 0 makes it; the name carries its pid).
fs::path shared_dir(const std::string& name) {
  int pid = int(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const fs::path d = fs::temp_directory_path() / ("h5w-" + std::to_string(pid)) / name;
  if (me() == 0) fs::remove_all(d), fs::create_directories(d);
  MPI_Barrier(MPI_COMM_WORLD);
  return d;
}

// Five ranks with uneven table sizes (rank 1 has no top kernels, rank 3 no iterations) and
// strings of different lengths, so row offsets and string sizes really depend on the exchange.
RunResults full_results() {
  RunResults r;
  const int32_t ranks[] = {0, 1, 2, 3, 5};  // rank 4 failed
  for (int32_t k : ranks) {
    RankRow row;
    row.rank = k;
    row.host = k < 2 ? "node-a" : "node-bb";
    row.file = "run/rank" + std::to_string(k) + std::string(size_t(k), 'x') + ".sqlite";
    row.source_format = "nsys-sqlite";
    row.source_version = "2024.5.1";
    row.source_schema = "3.11";
    row.iteration_source = k == 3 ? "none" : "nvtx";
    row.device = k % 2;
    row.pid = 1000 + k;
    row.utc_epoch_ns = 1'700'000'000'000'000'000 + k;
    row.gpu_start_ns = 10 * k, row.gpu_end_ns = 1'000'000'000 + k;
    row.steady = k != 3;
    row.kernel_count = 100 + k, row.nccl_kernel_count = 20 + k, row.copy_count = 3;
    row.busy_ms = 900.25 + k, row.idle_ms = 0.5 * k, row.h2d_bytes = int64_t(1) << 40;
    row.iterations = k == 3 ? 0 : 4;
    row.step_ms_median = 250.0 + k;
    row.blame_ms = k == 5 ? 1234.5 : 0.0;
    row.late_fraction = k == 5 ? 0.75 : 0.0;
    row.clock_aligned = 1;
    row.cause = k == 5 ? "slow_gpu" : "";
    r.ranks.push_back(row);
    for (int32_t p = 0; p < (k == 1 ? 0 : 1 + k % 3); ++p)
      r.top_kernels.push_back({k, p, "kernel_" + std::to_string(k) + "_" + std::to_string(p), uint8_t(p == 1),
                               int64_t(10 * k + p), 50.0 - p, 1.5, 3.0 + k});
    for (int64_t i = 0; i < (k == 3 ? 0 : 4); ++i)
      r.iterations.push_back({k, 7 + i, 1000 * i + k, 250.0 + k + 0.125 * double(i), uint8_t(i == 0)});
    RankHistograms h;
    h.rank = k;
    for (int i = 0; i <= k; ++i) h.kernel_ns.add(1000 * (i + 1)), h.sync_ns.add(int64_t(1) << (20 + i));
    h.idle_gap_ns.add(50);
    r.histograms.push_back(h);
  }
  r.failures = {{4, "run/rank4.sqlite", "not a profile export (no table TARGET_INFO_GPU)"}};
  r.inputs = {{"run/rank0.sqlite", "nsys-sqlite", "2024.5.1", "3.11", 1}, {"run/rank4.sqlite", "", "", "", 0}};
  r.hosts = {"node-a", "node-bb"};
  r.command_line = "straggler-scan run -o out.h5";
  r.total_ranks = 5;
  return r;
}

// Process p keeps the ranks `keep(rank)` says are its own; the replicated parts stay whole.
template <class Keep>
RunResults share(const RunResults& all, Keep keep) {
  RunResults r = all;
  r.ranks.clear(), r.top_kernels.clear(), r.iterations.clear(), r.histograms.clear();
  for (const auto& x : all.ranks) if (keep(x.rank)) r.ranks.push_back(x);
  for (const auto& x : all.top_kernels) if (keep(x.rank)) r.top_kernels.push_back(x);
  for (const auto& x : all.iterations) if (keep(x.rank)) r.iterations.push_back(x);
  for (const auto& x : all.histograms) if (keep(x.rank)) r.histograms.push_back(x);
  return r;
}

// ---- reading back ----

struct H5File {
  hid_t id;
  explicit H5File(const fs::path& p) : id(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
  ~H5File() { if (id >= 0) H5Fclose(id); }
};

std::vector<hsize_t> shape(hid_t f, const char* path) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return {999999};  // missing: a shape no test expects
  hid_t s = H5Dget_space(d);
  std::vector<hsize_t> dims(size_t(H5Sget_simple_extent_ndims(s)));
  H5Sget_simple_extent_dims(s, dims.data(), nullptr);
  H5Sclose(s), H5Dclose(d);
  return dims;
}

template <class T>
std::vector<T> read(hid_t f, const char* path, hid_t mem_type) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return {};
  hid_t s = H5Dget_space(d);
  std::vector<T> v(size_t(H5Sget_simple_extent_npoints(s)));
  if (!v.empty()) H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Sclose(s), H5Dclose(d);
  return v;
}

// Dataset's file type class/size/sign, e.g. "int32", "uint8", "float64", "string".
std::string type_name(hid_t f, const char* path) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return "missing";
  hid_t t = H5Dget_type(d);
  std::string n;
  switch (H5Tget_class(t)) {
    case H5T_INTEGER:
      n = (H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * H5Tget_size(t));
      break;
    case H5T_FLOAT: n = "float" + std::to_string(8 * H5Tget_size(t)); break;
    case H5T_STRING: n = H5Tis_variable_str(t) ? "vlen-string" : "string"; break;
    default: n = "other";
  }
  H5Tclose(t), H5Dclose(d);
  return n;
}

// Fixed-length strings, nulls stripped; also checks they are null-padded.
std::vector<std::string> read_strings(hid_t f, const char* path, size_t* size = nullptr) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return {"<missing>"};
  hid_t t = H5Dget_type(d), s = H5Dget_space(d);
  const size_t len = H5Tget_size(t), n = size_t(H5Sget_simple_extent_npoints(s));
  EXPECT_EQ(H5Tget_strpad(t), H5T_STR_NULLPAD) << path;
  if (size) *size = len;
  std::vector<char> buf(n * len);
  if (n) H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(buf.data() + i * len, strnlen(buf.data() + i * len, len));
  H5Tclose(t), H5Sclose(s), H5Dclose(d);
  return out;
}

// String attribute (scalar or array), each element nulls stripped.
std::vector<std::string> attr_strings(hid_t f, const char* obj, const char* name) {
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) return {"<missing>"};
  hid_t t = H5Aget_type(a), s = H5Aget_space(a);
  const size_t len = H5Tget_size(t), n = size_t(H5Sget_simple_extent_npoints(s));
  std::vector<char> buf(n * len + 1);
  if (n) H5Aread(a, t, buf.data());
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(buf.data() + i * len, strnlen(buf.data() + i * len, len));
  H5Tclose(t), H5Sclose(s), H5Aclose(a);
  return out;
}

int64_t attr_int(hid_t f, const char* obj, const char* name) {
  int64_t v = -12345;
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) H5Aread(a, H5T_NATIVE_INT64, &v), H5Aclose(a);
  return v;
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

// ---- comparing two files object by object (types, shapes, raw bytes, attributes) ----

using Dump = std::map<std::string, std::string>;  // object/attribute path -> type + shape + bytes

std::string describe(hid_t type, hid_t space, const std::vector<char>& bytes) {
  size_t tlen = 0;
  H5Tencode(type, nullptr, &tlen);
  std::string enc(tlen, '\0');
  H5Tencode(type, enc.data(), &tlen);
  std::vector<hsize_t> dims(size_t(std::max(0, H5Sget_simple_extent_ndims(space))));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  std::string out = enc + "|";
  for (auto x : dims) out += std::to_string(x) + "x";
  return out + "|" + std::string(bytes.begin(), bytes.end());
}

herr_t dump_attr(hid_t obj, const char* name, const H5A_info_t*, void* op) {
  auto* ctx = static_cast<std::pair<Dump*, std::string>*>(op);
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t t = H5Aget_type(a), s = H5Aget_space(a);
  std::vector<char> buf(H5Tget_size(t) * size_t(H5Sget_simple_extent_npoints(s)));
  if (!buf.empty()) H5Aread(a, t, buf.data());
  (*ctx->first)[ctx->second + "@" + name] = describe(t, s, buf);
  H5Tclose(t), H5Sclose(s), H5Aclose(a);
  return 0;
}

herr_t dump_object(hid_t root, const char* name, const H5O_info_t* info, void* op) {
  Dump& out = *static_cast<Dump*>(op);
  hid_t obj = H5Oopen(root, name, H5P_DEFAULT);
  std::string entry = info->type == H5O_TYPE_GROUP ? "group" : "other";
  if (info->type == H5O_TYPE_DATASET) {
    hid_t t = H5Dget_type(obj), s = H5Dget_space(obj);
    std::vector<char> buf(H5Tget_size(t) * size_t(H5Sget_simple_extent_npoints(s)));
    if (!buf.empty()) H5Dread(obj, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    entry = describe(t, s, buf);
    H5Tclose(t), H5Sclose(s);
  }
  out[name] = entry;
  std::pair<Dump*, std::string> ctx{&out, name};
  H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, nullptr, dump_attr, &ctx);
  H5Oclose(obj);
  return 0;
}

Dump dump(const fs::path& p) {
  Dump d;
  H5File f(p);
  if (f.id >= 0) H5Ovisit(f.id, H5_INDEX_NAME, H5_ITER_INC, dump_object, &d);
  return d;
}

// Writes `all` split by `owner(rank) -> process` over MPI_COMM_WORLD, and process 0 writes it alone.
// Returns the differences seen by this process (empty: identical).
template <class Owner>
std::vector<std::string> compare_split(const std::string& name, const RunResults& all, Owner owner) {
  const fs::path dir = shared_dir(name);
  const int p = me();
  write_file(world(), (dir / "split.h5").string(), share(all, [&](int32_t r) { return owner(r) == p; }));
  if (p == 0) {  // the local transport: no MPI in the writer at all
    auto alone = local_transport();
    write_file(*alone, (dir / "alone.h5").string(), all);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const Dump a = dump(dir / "alone.h5"), b = dump(dir / "split.h5");
  std::vector<std::string> diff;
  if (a.size() < 40) diff.push_back("too few objects: " + std::to_string(a.size()));
  for (const auto& [k, v] : a)
    if (!b.count(k) || b.at(k) != v) diff.push_back(k);
  for (const auto& [k, v] : b)
    if (!a.count(k)) diff.push_back("only in split: " + k);
  return diff;
}

}  // namespace

TEST(Hdf5Writer, ValuesShapesStringsAttributes) {
  const RunResults all = full_results();
  const fs::path dir = shared_dir("values");
  const fs::path out = dir / "out.h5";
  const int p = me(), n = nprocs();
  // Round-robin: no process holds a contiguous block of ranks.
  write_file(world(), out.string(), share(all, [&](int32_t r) { return r % n == p; }));
  MPI_Barrier(MPI_COMM_WORLD);

  EXPECT_EQ(listing(dir), std::vector<std::string>{"out.h5"});  // the temporary is gone
  H5File f(out);
  ASSERT_GE(f.id, 0);
  const hid_t id = f.id;
  // Root attributes.
  EXPECT_EQ(attr_strings(id, "/", "tool"), std::vector<std::string>{"straggler-scan"});
  EXPECT_EQ(attr_strings(id, "/", "version"), std::vector<std::string>{kToolVersion});
  EXPECT_EQ(attr_strings(id, "/", "command_line"), std::vector<std::string>{all.command_line});
  EXPECT_EQ(attr_strings(id, "/", "hosts"), all.hosts);
  EXPECT_EQ(attr_int(id, "/", "ranks"), 5);
  EXPECT_EQ(attr_int(id, "/", "ranks_failed"), 1);

  // /ranks: sorted by rank, types as declared in RankRow.
  EXPECT_EQ(read<int32_t>(id, "/ranks/rank", H5T_NATIVE_INT32), (std::vector<int32_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(type_name(id, "/ranks/rank"), "int32");
  EXPECT_EQ(type_name(id, "/ranks/pid"), "int64");
  EXPECT_EQ(type_name(id, "/ranks/steady"), "uint8");
  EXPECT_EQ(type_name(id, "/ranks/busy_ms"), "float64");
  EXPECT_EQ(type_name(id, "/ranks/iterations"), "int32");
  EXPECT_EQ(type_name(id, "/ranks/host"), "string");
  EXPECT_EQ(read<double>(id, "/ranks/busy_ms", H5T_NATIVE_DOUBLE),
            (std::vector<double>{900.25, 901.25, 902.25, 903.25, 905.25}));
  EXPECT_EQ(read<int64_t>(id, "/ranks/utc_epoch_ns", H5T_NATIVE_INT64)[4], 1'700'000'000'000'000'005);
  EXPECT_EQ(read<int64_t>(id, "/ranks/h2d_bytes", H5T_NATIVE_INT64)[2], int64_t(1) << 40);
  EXPECT_EQ(read<uint8_t>(id, "/ranks/steady", H5T_NATIVE_UINT8), (std::vector<uint8_t>{1, 1, 1, 0, 1}));
  EXPECT_EQ(read<double>(id, "/ranks/late_fraction", H5T_NATIVE_DOUBLE)[4], 0.75);
  size_t len = 0;
  EXPECT_EQ(read_strings(id, "/ranks/host", &len),
            (std::vector<std::string>{"node-a", "node-a", "node-bb", "node-bb", "node-bb"}));
  EXPECT_EQ(len, 7u);  // longest over all processes, not the local one
  EXPECT_EQ(read_strings(id, "/ranks/cause", &len), (std::vector<std::string>{"", "", "", "", "slow_gpu"}));
  EXPECT_EQ(read_strings(id, "/ranks/file")[3], "run/rank3xxx.sqlite");
  EXPECT_EQ(attr_strings(id, "/ranks/busy_ms", "units"), std::vector<std::string>{"ms"});
  EXPECT_EQ(attr_strings(id, "/ranks/h2d_bytes", "units"), std::vector<std::string>{"bytes"});
  EXPECT_EQ(attr_strings(id, "/ranks/gpu_start_ns", "units"), std::vector<std::string>{"ns"});

  // /kernels/top and /iterations: grouped by rank in rank order, given order within a rank.
  EXPECT_EQ(read<int32_t>(id, "/kernels/top/rank", H5T_NATIVE_INT32),
            (std::vector<int32_t>{0, 2, 2, 2, 3, 5, 5, 5}));
  EXPECT_EQ(read<int32_t>(id, "/kernels/top/position", H5T_NATIVE_INT32),
            (std::vector<int32_t>{0, 0, 1, 2, 0, 0, 1, 2}));
  EXPECT_EQ(read_strings(id, "/kernels/top/name")[7], "kernel_5_2");
  EXPECT_EQ(read<uint8_t>(id, "/kernels/top/nccl", H5T_NATIVE_UINT8)[2], 1);
  EXPECT_EQ(read<double>(id, "/kernels/top/max_ms", H5T_NATIVE_DOUBLE)[5], 8.0);
  EXPECT_EQ(shape(id, "/iterations/rank"), std::vector<hsize_t>{16});
  const auto it_rank = read<int32_t>(id, "/iterations/rank", H5T_NATIVE_INT32);
  EXPECT_TRUE(std::is_sorted(it_rank.begin(), it_rank.end()));
  EXPECT_EQ(read<int64_t>(id, "/iterations/number", H5T_NATIVE_INT64)[15], 10);
  EXPECT_EQ(read<double>(id, "/iterations/step_ms", H5T_NATIVE_DOUBLE)[13], 255.125);  // rank 5, 2nd
  EXPECT_EQ(read<uint8_t>(id, "/iterations/warmup", H5T_NATIVE_UINT8)[12], 1);

  // /histograms: per rank rows in /ranks order, exact sums, edges.
  const hsize_t bins = ranks::LogHistogram::kBins;
  EXPECT_EQ(shape(id, "/histograms/kernel_ns"), (std::vector<hsize_t>{5, bins}));
  EXPECT_EQ(type_name(id, "/histograms/kernel_ns"), "uint64");
  const auto kern = read<uint64_t>(id, "/histograms/kernel_ns", H5T_NATIVE_UINT64);
  for (size_t i = 0; i < all.histograms.size(); ++i)
    for (size_t b = 0; b < bins; ++b)
      EXPECT_EQ(kern[i * bins + b], all.histograms[i].kernel_ns.counts[b]) << "row " << i << " bin " << b;
  const auto kern_all = read<uint64_t>(id, "/histograms/kernel_ns_all", H5T_NATIVE_UINT64);
  ASSERT_EQ(kern_all.size(), bins);
  uint64_t total = 0;
  for (auto c : kern_all) total += c;
  EXPECT_EQ(total, 1u + 2 + 3 + 4 + 6);
  EXPECT_EQ(read<uint64_t>(id, "/histograms/idle_gap_ns_all", H5T_NATIVE_UINT64)[0], 5u);  // 50 ns: bin 0
  const auto& e = ranks::LogHistogram::edges();
  EXPECT_EQ(read<int64_t>(id, "/histograms/edges_ns", H5T_NATIVE_INT64), std::vector<int64_t>(e.begin(), e.end()));
  for (const char* k : {"nccl_kernel_ns", "idle_gap_ns", "sync_ns"})
    EXPECT_EQ(shape(id, ("/histograms/" + std::string(k)).c_str()), (std::vector<hsize_t>{5, bins})) << k;

  // Replicated tables, written once.
  EXPECT_EQ(read<int32_t>(id, "/failures/rank", H5T_NATIVE_INT32), std::vector<int32_t>{4});
  EXPECT_EQ(read_strings(id, "/failures/error"), std::vector<std::string>{all.failures[0].error});
  EXPECT_EQ(read_strings(id, "/inputs/path"), (std::vector<std::string>{"run/rank0.sqlite", "run/rank4.sqlite"}));
  EXPECT_EQ(read_strings(id, "/inputs/version"), (std::vector<std::string>{"2024.5.1", ""}));
  EXPECT_EQ(read<int32_t>(id, "/inputs/ranks", H5T_NATIVE_INT32), (std::vector<int32_t>{1, 0}));
}

TEST(Hdf5Writer, EmptyTablesAreZeroLengthDatasets) {
  RunResults none;
  none.command_line = "x";
  const fs::path dir = shared_dir("empty");
  write_file(world(), (dir / "e.h5").string(), none);
  MPI_Barrier(MPI_COMM_WORLD);
  H5File f(dir / "e.h5");
  ASSERT_GE(f.id, 0);
  for (const char* d : {"/ranks/rank", "/ranks/host", "/ranks/busy_ms", "/kernels/top/name", "/iterations/step_ms",
                        "/failures/error", "/inputs/path"})
    EXPECT_EQ(shape(f.id, d), std::vector<hsize_t>{0}) << d;
  EXPECT_EQ(shape(f.id, "/histograms/sync_ns"), (std::vector<hsize_t>{0, ranks::LogHistogram::kBins}));
  EXPECT_EQ(read<uint64_t>(f.id, "/histograms/sync_ns_all", H5T_NATIVE_UINT64),
            std::vector<uint64_t>(ranks::LogHistogram::kBins, 0));
  EXPECT_EQ(attr_strings(f.id, "/", "hosts").size(), 0u);
  EXPECT_EQ(attr_int(f.id, "/", "ranks_failed"), 0);
}

// Failures: every process throws the same one-line error naming the file; nothing is left.
std::string expect_fails(const fs::path& target, const fs::path& dir_to_check) {
  std::string what;
  try {
    write_file(world(), target.string(), share(full_results(), [](int32_t r) { return r % nprocs() == me(); }));
  } catch (const common::OutputError& e) {  // the agreed kind, so main can exit 1 without aborting
    what = e.what();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(what.rfind(target.string() + ": cannot write HDF5 output (", 0), 0u) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(target) && !fs::is_directory(target));
  if (fs::exists(dir_to_check)) {
    for (const auto& name : listing(dir_to_check)) EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  }
  return what;
}

TEST(Hdf5Writer, MissingDirectoryFails) {
  const fs::path dir = shared_dir("missing");
  expect_fails(dir / "no-such-dir" / "x.h5", dir);
  EXPECT_TRUE(listing(dir).empty());
}

TEST(Hdf5Writer, ReadOnlyDirectoryFails) {
  // root ignores permission bits: there a regular file stands in for the unwritable folder.
  const fs::path dir = shared_dir("readonly");
  const bool root = ::geteuid() == 0;
  const fs::path target = root ? dir / "plain-file" / "x.h5" : dir / "ro" / "x.h5";
  if (me() == 0) {
    if (root) {
      FILE* fp = std::fopen((dir / "plain-file").c_str(), "w");
      if (fp) std::fclose(fp);
    } else {
      fs::create_directory(dir / "ro");
      fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_fails(target, root ? dir : dir / "ro");
  MPI_Barrier(MPI_COMM_WORLD);
  if (me() == 0 && !root) fs::permissions(dir / "ro", fs::perms::owner_all);
}

TEST(Hdf5Writer, RenameOntoDirectoryFails) {
  // The file is complete but cannot take its name: the temporary is removed.
  const fs::path dir = shared_dir("rename");
  if (me() == 0) fs::create_directories(dir / "taken.h5" / "sub");
  MPI_Barrier(MPI_COMM_WORLD);
  expect_fails(dir / "taken.h5", dir);
  EXPECT_EQ(listing(dir), std::vector<std::string>{"taken.h5"});
}

// A data write that fails on one process only (here the last: a row outside the dataset) makes
// close() throw on every process, so none goes on to a collective the others never reach.
TEST(Hdf5File, OneProcessWriteFailureIsAgreedAtClose) {
  const fs::path dir = shared_dir("one-fails");
  const bool bad = me() == nprocs() - 1;
  std::string what;
  {
    h5::File f(world(), (dir / "x.h5").string());
    std::vector<uint64_t> rows{bad ? uint64_t(99) : uint64_t(me() % 4)};
    f.column("/x", 4, rows, std::vector<int64_t>{7});
    try {
      f.close();
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NE(what.find(bad ? "HDF5 write /x failed" : "failed on another process"), std::string::npos) << what;
}

// An attribute larger than HDF5's 64 KB compact limit (the hosts of a 64k-rank job) is written
// and reads back.
TEST(Hdf5File, LargeAttributeIsWritten) {
  const fs::path dir = shared_dir("large-attribute");
  std::vector<std::string> hosts;
  for (int h = 0; h < 10000; ++h) hosts.push_back("node-" + std::to_string(h) + ".cluster.example");
  {
    h5::File f(world(), (dir / "x.h5").string());
    f.attr("/", "hosts", hosts);
    f.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  H5File f(dir / "x.h5");
  ASSERT_GE(f.id, 0);
  EXPECT_EQ(attr_strings(f.id, "/", "hosts"), hosts);
}

// The same rows give the same file content whatever the number of processes and the split.
TEST(Hdf5Writer, SplitEqualsOneProcessRoundRobin) {
  const int n = nprocs();
  EXPECT_EQ(compare_split("rr", full_results(), [n](int32_t r) { return r % n; }), std::vector<std::string>{});
}

TEST(Hdf5Writer, SplitEqualsOneProcessAllOnLast) {
  // Process 0 (which writes the replicated tables) holds no rows at all.
  const int n = nprocs();
  EXPECT_EQ(compare_split("last", full_results(), [n](int32_t) { return n - 1; }), std::vector<std::string>{});
}

TEST(Hdf5Writer, SplitEqualsOneProcessBlocks) {
  const int n = nprocs();
  EXPECT_EQ(compare_split("blocks", full_results(), [n](int32_t r) { return r * n / 6; }), std::vector<std::string>{});
}

// Untrusted input (a 2 MB kernel name) must not widen every row of a string dataset: values are
// clipped to h5::kMaxStringBytes on a UTF-8 boundary with a visible "...", the same whatever the split.
TEST(Hdf5File, ClipStringEscapesAndCutsBeforeAnEscapeWithMark) {
  EXPECT_EQ(h5::clip_string(std::string(1024, 'a')), std::string(1024, 'a'));  // fits: unchanged
  EXPECT_EQ(h5::clip_string(std::string(1025, 'a')), std::string(1021, 'a') + "...");
  // Non-ASCII becomes \uNNNN (the datasets are ASCII); "\xc3\xa9" (e-acute) is 6 bytes escaped,
  // and 1021 is no multiple of 6: the cut falls before the escape it would split.
  EXPECT_EQ(h5::clip_string("r\xc3\xa9sum\xc3\xa9"), "r\\u00e9sum\\u00e9");
  std::string e;
  for (int i = 0; i < 600; ++i) e += "\xc3\xa9";
  const std::string c = h5::clip_string(e);
  EXPECT_EQ(c.size(), 1020u + 3);
  EXPECT_EQ(c.substr(0, 12), "\\u00e9\\u00e9");
  EXPECT_EQ(c.substr(1014), "\\u00e9...");
  // A character outside the BMP straddling the cut is dropped whole.
  const std::string four = std::string(1019, 'a') + "\xf0\x9f\x98\x80" + "tail";
  EXPECT_EQ(h5::clip_string(four), std::string(1019, 'a') + "...");
  EXPECT_EQ(h5::clip_string(std::string(10, 'a') + "\xf0\x9f\x98\x80"), std::string(10, 'a') + "\\U0001f600");
  EXPECT_EQ(h5::clip_string("abcdef", 5), "ab...");
  // N10: control bytes, NUL and a bidi override from a profile come out escaped.
  EXPECT_EQ(h5::clip_string(std::string("\x1b[2J\x07\nFAKE\r\xe2\x80\xaeX\0tail", 20)),
            "\\x1b[2J\\x07\\nFAKE\\r\\u202eX\\x00tail");
}

TEST(Hdf5Writer, HugeStringsAreClipped) {
  RunResults all = full_results();
  std::string huge = "void big_kernel<";
  for (size_t i = 0; i < (2u << 20) / 2; ++i) huge += "\xc3\xa9";  // 2 MB of 2-byte characters
  all.top_kernels[3].name = huge;      // rank 2
  all.ranks[4].host = huge;            // rank 5, also in the hosts attribute
  all.hosts.push_back(huge);
  all.failures[0].error = huge;        // replicated table
  const int n = nprocs();
  const auto diff = compare_split("huge", all, [n](int32_t r) { return r % n; });
  EXPECT_EQ(diff, std::vector<std::string>{});
  const fs::path out = fs::temp_directory_path() / ("h5w-" + std::to_string([] {
    int pid = int(::getpid());
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return pid;
  }())) / "huge" / "split.h5";
  EXPECT_LT(fs::file_size(out), 200'000u);  // was > 16 MB: 8 rows x 2 MB of /kernels/top/name alone
  H5File f(out);
  ASSERT_GE(f.id, 0);
  for (const char* path : {"/kernels/top/name", "/ranks/host", "/failures/error"}) {
    size_t len = 0;
    const auto v = read_strings(f.id, path, &len);
    EXPECT_EQ(len, h5::clip_string(huge).size()) << path;  // 1023: the cut fell inside a character
    EXPECT_LE(len, h5::kMaxStringBytes) << path;
    const auto& clipped = path == std::string("/kernels/top/name") ? v.at(3) : path == std::string("/ranks/host") ? v.at(4) : v.at(0);
    EXPECT_EQ(clipped, h5::clip_string(huge)) << path;
    EXPECT_EQ(clipped.substr(clipped.size() - 3), "...") << path;
  }
  EXPECT_EQ(read_strings(f.id, "/kernels/top/name")[7], "kernel_5_2");  // short values intact
  const auto hosts = attr_strings(f.id, "/", "hosts");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[2], h5::clip_string(huge));
}

// D4: a file system without room for the output. Parallel HDF5 deadlocked in H5Fclose when its
// metadata flush failed on some processes only; the room is now checked before anything is written.
TEST(Hdf5Writer, FullFileSystemFailsBeforeWriting) {
  const fs::path dir = shared_dir("fullfs");
  int64_t mounted = 0;
  if (me() == 0) {
    fs::create_directories(dir / "small");
    const std::string cmd = "mount -t tmpfs -o size=64k tmpfs '" + (dir / "small").string() + "' 2>/dev/null";
    mounted = std::system(cmd.c_str()) == 0;
  }
  mounted = world().reduce(mounted, Transport::Op::Max);
  if (!mounted) GTEST_SKIP() << "cannot mount a 64 KB tmpfs here (needs root): the full-file-system case is untested";
  EXPECT_NE(expect_fails(dir / "small" / "x.h5", dir / "small").find("not enough space on its file system"),
            std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me() == 0) {
    EXPECT_EQ(std::system(("umount '" + (dir / "small").string() + "'").c_str()), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

namespace {
struct FailurePrinter : ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[process %d] %s:%d: %s\n", me(), r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (me() != 0) {  // one full report, from process 0; the others print only their failures
    auto& l = ::testing::UnitTest::GetInstance()->listeners();
    delete l.Release(l.default_result_printer());
    l.Append(new FailurePrinter);
  }
  int rc = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me() == 0) fs::remove_all(fs::temp_directory_path() / ("h5w-" + std::to_string(::getpid())));
  MPI_Finalize();
  return rc;
}
