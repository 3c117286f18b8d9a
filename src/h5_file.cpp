#include "h5_file.hpp"

#include "h5_read.hpp"

#include "common/text.hpp"

#include <algorithm>
#include <numeric>
#include <cstring>

namespace straggler::h5 {

std::string clip_string(const std::string& value, size_t max_bytes) {
  std::string text = common::printable_ascii(value);
  if (text.size() <= max_bytes || max_bytes <= 3) return common::clip(text, max_bytes);
  // Cut before an escape (\xNN, \uNNNN, \UNNNNNNNN: at most 10 bytes) that the cut would split.
  size_t cut = max_bytes - 3;
  const size_t from = cut >= 9 ? cut - 9 : 0;
  if (const size_t b = text.rfind('\\', cut - 1); b != std::string::npos && b >= from) {
    const char kind = b + 1 < text.size() ? text[b + 1] : 0;
    const size_t len = kind == 'x' ? 4 : kind == 'u' ? 6 : kind == 'U' ? 10 : 2;
    if (b + len > cut) cut = b;
  }
  return text.substr(0, cut) + "...";
}

// The reader refuses longer strings than the writer writes (docs/hdf5-layout.md, rule 4).
static_assert(kMaxStringBytes == h5read::Limits{}.max_string_bytes, "the reader's bound is the writer's");

namespace {
// The string type of every text value we write: ASCII, as clip_string makes it.
hid_t string_type(size_t len) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, std::max<size_t>(1, len));
  return t;
}
}  // namespace

File::File(Transport& t, const std::string& path, const std::string& shown)
    : t_(t), shown_(shown.empty() ? path : shown) {
  hid_t fapl = check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate");
  if (const MPI_Comm* comm = t.mpi_comm()) H5Pset_fapl_mpio(fapl, *comm, MPI_INFO_NULL);
  // The 1.8 format or later: attributes over 64 KB go to dense storage (the hosts of a 64k-rank
  // job are 8,192 names) instead of failing; every h5py and HDF5 since 1.8 reads it.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  // MPI_File_open agrees on its outcome across the processes (ROMIO reduces the error code).
  if (file_ < 0) throw AgreedError("HDF5 file create failed");
  xfer_ = check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate");
  if (t.mpi_comm()) H5Pset_dxpl_mpio(xfer_, H5FD_MPIO_INDEPENDENT);
}

// Parallel H5Fclose after every process wrote its data: metadata and a truncate, seconds at most.
constexpr double kCloseLimitSeconds = 120;

// HDF5's object header, B-tree and heap entries of one dataset, group or attribute: well over
// what 1.10 uses, so the estimate errs on the side of room.
constexpr uint64_t kObjectBytes = 4096;

File::File(Transport& t, Measure) : t_(t), measuring_(true) {}

File::~File() {
  if (xfer_ >= 0) H5Pclose(xfer_);
  if (file_ >= 0) H5Fclose(file_);
}

void File::close() {
  if (xfer_ >= 0) H5Pclose(xfer_), xfer_ = -1;
  if (file_ < 0) return;
  const int64_t failed = t_.reduce<int64_t>(write_error_.empty() ? 0 : 1, Transport::Op::Max);
  // Every process has written its data (the reduce above): the close only flushes metadata and
  // truncates, quickly. When a metadata write fails on one process only, HDF5's processes part
  // ways inside H5Fclose for good (repro D4, N2): a short bound then ends the job.
  const auto guard = t_.blocking("closing " + shown_ + " (cannot write HDF5 output: a write failed on some process "
                                 "only, or the file system hangs)", kCloseLimitSeconds);
  hid_t f = file_;
  file_ = -1;
  herr_t st = H5Fclose(f);
  check(st, "file close");
  if (!write_error_.empty()) throw AgreedError(write_error_);
  if (failed) throw AgreedError("a data write failed on another process");
}

// After a failed data write this process writes no more data (each failure is one more error line
// of the I/O layer); the collective calls go on, so that no process is left waiting in one.
void File::write_failed(const std::string& path) {
  if (write_error_.empty()) write_error_ = "HDF5 write " + path + " failed";
}

void File::group(const std::string& path) {
  if (measuring_) {
    bytes_ += kObjectBytes;
    return;
  }
  H5Gclose(check(H5Gcreate2(file_, path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "group create"));
}

hid_t File::create(const std::string& path, hid_t type, const std::vector<uint64_t>& dims) {
  t_.alive();  // each dataset is progress (the write's watchdog)
  std::vector<hsize_t> d(dims.begin(), dims.end());
  hid_t space = check(H5Screate_simple(int(d.size()), d.data(), nullptr), "dataspace");
  hid_t dset = H5Dcreate2(file_, path.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(space);
  return check(dset, ("dataset create " + path).c_str());
}

void File::describe(hid_t obj, const char* units, const char* description) {
  auto put = [&](const char* name, const char* text) {
    hid_t t = string_type(std::strlen(text));
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = a >= 0 ? H5Awrite(a, t, text) : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s), H5Tclose(t);
    check(st, "attribute write");
  };
  if (units) put("units", units);
  if (description) put("description", description);
}

// Whether the rows follow each other (one hyperslab).
bool File::contiguous(const std::vector<uint64_t>& rows) {
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i] != rows[0] + i) return false;
  return true;
}

void File::write_any(const std::string& path, std::vector<uint64_t> dims, hid_t type, size_t elem,
                     const std::vector<uint64_t>& rows, const void* data, const char* units, const char* description) {
  if (measuring_) {
    uint64_t n = elem;
    for (auto d : dims) n *= d;
    bytes_ += n + kObjectBytes;
    return;
  }
  hid_t dset = create(path, type, dims);
  describe(dset, units, description);
  const uint64_t width = dims.size() > 1 ? dims[1] : 1;
  if (t_.size() > 1 && t_.reduce<uint64_t>(contiguous(rows) ? 0 : 1, Transport::Op::Max) > 0) {
    std::vector<uint64_t> range;
    const std::string values = to_row_owners(dims.front(), width * elem, rows, data, range);
    if (!range.empty()) write_rows(dset, path, width, type, elem, range, values.data());
  } else if (!rows.empty()) {
    write_rows(dset, path, width, type, elem, rows, data);
  }
  H5Dclose(dset);
}

// Rows scattered over the processes (ranks interleave: files go to processes by size) went to the
// file as element selections, which MPI-IO turns into one small write per run of rows (16k ranks:
// a third of the HDF5 stage, growing faster than the rows). Instead each process sends every row
// to the process owning its part of the dataset, and each writes one contiguous range.
std::string File::to_row_owners(uint64_t n, size_t row_bytes, const std::vector<uint64_t>& rows, const void* data,
                                std::vector<uint64_t>& range) {
  const uint64_t P = uint64_t(t_.size()), me = uint64_t(t_.rank());
  auto first_of = [&](uint64_t p) { return uint64_t((unsigned __int128)n * p / P); };
  std::vector<std::string> to(P);
  for (size_t i = 0; i < rows.size(); ++i) {
    // The last part starting at or before the row: first_of(p) <= row <=> p < (row + 1) P / n.
    const uint64_t p = std::min<uint64_t>(P - 1, uint64_t(((unsigned __int128)(rows[i] + 1) * P - 1) / std::max<uint64_t>(n, 1)));
    to[p].append(reinterpret_cast<const char*>(&rows[i]), sizeof(uint64_t));
    to[p].append(static_cast<const char*>(data) + i * row_bytes, row_bytes);
  }
  const auto got = t_.alltoall(to);
  const uint64_t lo = first_of(me), hi = first_of(me + 1);
  // Rows nobody holds keep the fill value (0), as they did when left unwritten.
  std::string values((hi - lo) * row_bytes, '\0');
  for (const auto& blob : got)
    for (size_t at = 0; at + sizeof(uint64_t) + row_bytes <= blob.size(); at += sizeof(uint64_t) + row_bytes) {
      uint64_t row;
      std::memcpy(&row, blob.data() + at, sizeof(row));
      if (row >= lo && row < hi) std::memcpy(values.data() + (row - lo) * row_bytes, blob.data() + at + sizeof(row), row_bytes);
    }
  range.resize(hi - lo);
  std::iota(range.begin(), range.end(), lo);
  return values;
}

void File::write_rows(hid_t dset, const std::string& path, uint64_t width, hid_t type, size_t elem,
                      const std::vector<uint64_t>& rows, const void* data) {
  hid_t fspace = H5Dget_space(dset);
  auto write = [&](size_t first, hsize_t elements) {
    hid_t mspace = H5Screate_simple(1, &elements, nullptr);
    herr_t st = write_error_.empty() ? H5Dwrite(dset, type, mspace, fspace, xfer_, static_cast<const char*>(data) + first * width * elem) : 0;
    H5Sclose(mspace);
    if (st < 0) write_failed(path);
  };
  if (contiguous(rows)) {  // one hyperslab
    hsize_t start[2] = {rows.front(), 0}, count[2] = {hsize_t(rows.size()), width};
    if (H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr) < 0) write_failed(path);
    write(0, count[0] * width);
  } else {
    // Scattered rows (a process's ranks interleave with the others'): their elements in bounded
    // chunks, one write each, instead of one write per row (16k ranks: 3 s of small writes).
    const int dims = H5Sget_simple_extent_ndims(fspace);
    const size_t per_chunk = std::max<size_t>(1, kChunkElements / std::max<uint64_t>(width, 1));
    std::vector<hsize_t> coords;
    for (size_t i = 0; i < rows.size(); i += per_chunk) {
      const size_t end = std::min(rows.size(), i + per_chunk);
      coords.clear();
      for (size_t r = i; r < end; ++r)
        for (hsize_t c = 0; c < width; ++c) {
          coords.push_back(rows[r]);
          if (dims > 1) coords.push_back(c);
        }
      const size_t n = coords.size() / size_t(dims > 1 ? 2 : 1);
      if (H5Sselect_elements(fspace, H5S_SELECT_SET, n, coords.data()) < 0) write_failed(path);
      write(i, hsize_t(n));
    }
  }
  H5Sclose(fspace);
}

hid_t File::open_column(const std::string& path, uint64_t n, hid_t type, size_t elem, const char* units,
                        const char* description) {
  if (measuring_) {
    bytes_ += n * elem + kObjectBytes;
    return -1;
  }
  hid_t dset = create(path, type, {n});
  try {
    describe(dset, units, description);
  } catch (...) {
    H5Dclose(dset);
    throw;
  }
  return dset;
}

void File::write_blocks_to(hid_t dset, const std::string& path, hid_t type, size_t elem,
                           const std::vector<std::pair<uint64_t, uint64_t>>& blocks, const void* data) {
  if (dset < 0) return;
  t_.alive();
  hid_t fspace = H5Dget_space(dset);
  size_t offset = 0;
  for (auto [start, count] : blocks) {
    if (count == 0) continue;
    hsize_t s = start, c = count;
    hid_t mspace = H5Screate_simple(1, &c, nullptr);
    herr_t st = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &s, nullptr, &c, nullptr);
    if (st >= 0 && write_error_.empty())
      st = H5Dwrite(dset, type, mspace, fspace, xfer_, static_cast<const char*>(data) + offset * elem);
    H5Sclose(mspace);
    offset += count;
    if (st < 0) write_failed(path);
  }
  H5Sclose(fspace);
}

void File::write_blocks(const std::string& path, uint64_t n, hid_t type, size_t elem,
                        const std::vector<std::pair<uint64_t, uint64_t>>& blocks, const void* data, const char* units,
                        const char* description) {
  hid_t dset = open_column(path, n, type, elem, units, description);
  write_blocks_to(dset, path, type, elem, blocks, data);
  close_column(dset);
}

void File::strings(const std::string& path, uint64_t n, const std::vector<uint64_t>& rows,
                   const std::vector<std::string>& values, const char* description) {
  // Variable-length strings cannot be written in parallel: fixed length, the global maximum of
  // the clipped values (the same on any number of processes: clipping is per value).
  std::vector<std::string> clipped;
  clipped.reserve(values.size());
  for (const auto& v : values) clipped.push_back(clip_string(v));
  uint64_t len = 1;
  for (const auto& v : clipped) len = std::max<uint64_t>(len, v.size());
  len = t_.reduce(len, Transport::Op::Max);
  hid_t t = string_type(len);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  std::vector<char> buf(clipped.size() * len, '\0');
  for (size_t i = 0; i < clipped.size(); ++i) std::memcpy(buf.data() + i * len, clipped[i].data(), clipped[i].size());
  try {
    write_any(path, {n}, t, len, rows, buf.data(), nullptr, description);
  } catch (...) {
    H5Tclose(t);
    throw;
  }
  H5Tclose(t);
}

void File::attr(const std::string& object, const char* name, const std::string& raw) {
  const std::string value = clip_string(raw);
  if (measuring_) {
    bytes_ += value.size() + kObjectBytes;
    return;
  }
  hid_t obj = check(H5Oopen(file_, object.c_str(), H5P_DEFAULT), "open object");
  hid_t t = string_type(value.size());
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  herr_t st = a >= 0 ? H5Awrite(a, t, value.empty() ? "" : value.data()) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(s), H5Tclose(t), H5Oclose(obj);
  check(st, "attribute write");
}

namespace {
template <class T>
void scalar_attr(hid_t file, const std::string& object, const char* name, hid_t type, T value) {
  hid_t obj = check(H5Oopen(file, object.c_str(), H5P_DEFAULT), "open object");
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
  herr_t st = a >= 0 ? H5Awrite(a, type, &value) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(s), H5Oclose(obj);
  check(st, "attribute write");
}
}  // namespace

void File::attr(const std::string& object, const char* name, double value) {
  if (measuring_) {
    bytes_ += kObjectBytes;
    return;
  }
  scalar_attr(file_, object, name, H5T_NATIVE_DOUBLE, value);
}
void File::attr(const std::string& object, const char* name, int64_t value) {
  if (measuring_) {
    bytes_ += kObjectBytes;
    return;
  }
  scalar_attr(file_, object, name, H5T_NATIVE_INT64, value);
}

void File::attr(const std::string& object, const char* name, const std::vector<std::string>& raw) {
  std::vector<std::string> values;
  for (const auto& v : raw) values.push_back(clip_string(v));
  if (measuring_) {
    for (const auto& v : values) bytes_ += v.size();
    bytes_ += kObjectBytes;
    return;
  }
  size_t len = 1;
  for (const auto& v : values) len = std::max(len, v.size());
  std::vector<char> buf(std::max<size_t>(1, values.size()) * len, '\0');
  for (size_t i = 0; i < values.size(); ++i) std::memcpy(buf.data() + i * len, values[i].data(), values[i].size());
  hid_t obj = check(H5Oopen(file_, object.c_str(), H5P_DEFAULT), "open object");
  hid_t t = string_type(len);
  hsize_t n = values.size();
  hid_t s = H5Screate_simple(1, &n, nullptr);
  hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  herr_t st = a >= 0 ? H5Awrite(a, t, buf.data()) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(s), H5Tclose(t), H5Oclose(obj);
  check(st, "attribute write");
}

}  // namespace straggler::h5
