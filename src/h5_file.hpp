// Thin parallel-HDF5 helpers for the writer: every call that creates something is collective
// (all processes call it in the same order with the same arguments); data is written only by the
// processes that hold it (independent transfers). On the local transport the file is written by
// the one process with HDF5's default (POSIX) driver, without MPI.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "transport.hpp"

namespace straggler::h5 {

// Throws with the HDF5 call that failed.
inline hid_t check(hid_t id, const char* what) {
  if (id < 0) throw std::runtime_error(std::string("HDF5 ") + what + " failed");
  return id;
}

template <class T>
hid_t type_of() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
  else static_assert(sizeof(T) == 0, "unsupported HDF5 column type");
}

// Every string value written to HDF5 (datasets and attributes) passes through
// common::printable_ascii (profile strings are untrusted: control bytes, NUL, invalid UTF-8 and
// bidi overrides come out escaped as in the report, other non-ASCII as \uNNNN, so the declared
// ASCII character set is true; repro N10) and is then at most this many bytes: fixed-length
// string datasets are as wide as their longest value, so one huge name from an untrusted profile
// would otherwise multiply into every row. Longer values end with "..." (the cut is visible).
// See docs/hdf5-layout.md.
inline constexpr size_t kMaxStringBytes = 1024;

// printable_ascii(value) if it fits in kMaxStringBytes, else its longest prefix that leaves room
// for "...", followed by "..." (at most kMaxStringBytes).
std::string clip_string(const std::string& value, size_t max_bytes = kMaxStringBytes);

// A failure every process of the write reports alike (agreed before it is thrown): the caller may
// unwind normally. Any other HDF5 failure under MPI may have happened on some processes only,
// leaving the others inside one of HDF5's collective calls.
class AgreedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class File {
 public:
  // Collective create (truncates); `shown`: the name messages give it (the final path of a
  // temporary), `path` when empty.
  File(Transport& t, const std::string& path, const std::string& shown = "");
  // A file that writes nothing and counts the bytes a real one would hold (data plus a generous
  // allowance per object): the same collective calls, to check the space before writing.
  struct Measure {};
  File(Transport& t, Measure);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  // Collective: agrees on data-write failures of any process, then closes; throws AgreedError on
  // all processes alike if any write failed, so none leaves the others in a collective (a failed
  // close itself, e.g. its metadata flush, is no agreed failure).
  void close();

  Transport& transport() const { return t_; }
  bool measuring() const { return measuring_; }
  uint64_t measured_bytes() const { return bytes_; }
  bool root() const { return t_.root(); }
  hid_t id() const { return file_; }

  void group(const std::string& path);  // collective
  // Collective: a 1-D column of n rows; `rows` (global row index) and `values` are this process's.
  template <class T>
  void column(const std::string& path, uint64_t n, const std::vector<uint64_t>& rows, const std::vector<T>& values,
              const char* units = nullptr, const char* description = nullptr) {
    write_any(path, {n}, type_of<T>(), sizeof(T), rows, values.data(), units, description);
  }
  // Collective: fixed-length strings (length = longest over all processes, each value passed
  // through clip_string first, so at most kMaxStringBytes).
  void strings(const std::string& path, uint64_t n, const std::vector<uint64_t>& rows,
               const std::vector<std::string>& values, const char* description = nullptr);
  // Collective: a 2-D dataset [n x width]; this process writes whole rows (row-major values).
  template <class T>
  void matrix(const std::string& path, uint64_t n, uint64_t width, const std::vector<uint64_t>& rows,
              const std::vector<T>& values, const char* units = nullptr, const char* description = nullptr) {
    write_any(path, {n, width}, type_of<T>(), sizeof(T), rows, values.data(), units, description);
  }
  // Collective: a 1-D dataset written in contiguous blocks (start, count) from concatenated data.
  template <class T>
  void blocks(const std::string& path, uint64_t n, const std::vector<std::pair<uint64_t, uint64_t>>& blocks,
              const std::vector<T>& values, const char* units = nullptr, const char* description = nullptr) {
    write_blocks(path, n, type_of<T>(), sizeof(T), blocks, values.data(), units, description);
  }
  // Collective: a column every process holds identically; process 0 writes it.
  template <class T>
  void replicated(const std::string& path, const std::vector<T>& values, const char* units = nullptr,
                  const char* description = nullptr) {
    std::vector<uint64_t> rows;
    if (root()) rows.resize(values.size()), std::iota(rows.begin(), rows.end(), 0);
    write_any(path, {values.size()}, type_of<T>(), sizeof(T), rows, values.data(), units, description);
  }
  void replicated_strings(const std::string& path, const std::vector<std::string>& values,
                          const char* description = nullptr) {
    std::vector<uint64_t> rows;
    if (root()) rows.resize(values.size()), std::iota(rows.begin(), rows.end(), 0);
    strings(path, values.size(), rows, values, description);
  }
  // A 1-D dataset filled piece by piece: created collectively, written independently by each
  // process in blocks as its rows come (buffered), finished collectively (in creation order).
  template <class T>
  class Column {
   public:
    Column(File& f, const std::string& path, uint64_t n, const char* units = nullptr, const char* description = nullptr)
        : f_(f), path_(path) {
      id_ = f.open_column(path, n, type_of<T>(), sizeof(T), units, description);
    }
    Column(const Column&) = delete;
    ~Column() { f_.close_column(id_); }
    void add(uint64_t start, const T* values, size_t count) {
      if (count == 0) return;
      if (!blocks_.empty() && blocks_.back().first + blocks_.back().second == start) blocks_.back().second += count;
      else blocks_.push_back({start, count});
      data_.insert(data_.end(), values, values + count);
      if (data_.size() >= kFlushValues) flush();
    }
    void add(uint64_t start, const std::vector<T>& v) { add(start, v.data(), v.size()); }
    void flush() {
      f_.write_blocks_to(id_, path_, type_of<T>(), sizeof(T), blocks_, data_.data());
      blocks_.clear(), data_.clear();
    }
    // Collective.
    void finish() {
      flush();
      f_.close_column(id_), id_ = -1;
    }

   private:
    static constexpr size_t kFlushValues = size_t(1) << 20;
    File& f_;
    std::string path_;
    hid_t id_ = -1;
    std::vector<std::pair<uint64_t, uint64_t>> blocks_;
    std::vector<T> data_;
  };

  // Collective attributes on an object (every process passes the same value).
  void attr(const std::string& object, const char* name, const std::string& value);
  void attr(const std::string& object, const char* name, double value);
  void attr(const std::string& object, const char* name, int64_t value);
  void attr(const std::string& object, const char* name, const std::vector<std::string>& values);

 private:
  // First data write that failed on this process (independent writes must not throw alone).
  std::string write_error_;
  void write_failed(const std::string& path);
  void write_any(const std::string& path, std::vector<uint64_t> dims, hid_t type, size_t elem,
                 const std::vector<uint64_t>& rows, const void* data, const char* units, const char* description);
  // This process's rows (global row indices, in the order of `data`) of a [n x width] dataset.
  void write_rows(hid_t dset, const std::string& path, uint64_t width, hid_t type, size_t elem,
                  const std::vector<uint64_t>& rows, const void* data);
  static constexpr size_t kChunkElements = size_t(1) << 16;  // elements selected per scattered write
  static bool contiguous(const std::vector<uint64_t>& rows);
  // Collective: this process's rows (of `row_bytes` each) sent to the processes that write them,
  // each a contiguous part of the n rows; returns this process's part, its row indices in `range`.
  std::string to_row_owners(uint64_t n, size_t row_bytes, const std::vector<uint64_t>& rows, const void* data,
                            std::vector<uint64_t>& range);
  void write_blocks(const std::string& path, uint64_t n, hid_t type, size_t elem,
                    const std::vector<std::pair<uint64_t, uint64_t>>& blocks, const void* data, const char* units,
                    const char* description);
  hid_t create(const std::string& path, hid_t type, const std::vector<uint64_t>& dims);
  hid_t open_column(const std::string& path, uint64_t n, hid_t type, size_t elem, const char* units,
                    const char* description);  // -1 when measuring
  void write_blocks_to(hid_t dset, const std::string& path, hid_t type, size_t elem,
                       const std::vector<std::pair<uint64_t, uint64_t>>& blocks, const void* data);
  void close_column(hid_t dset) {
    if (dset >= 0) H5Dclose(dset);
  }
  void describe(hid_t obj, const char* units, const char* description);

  Transport& t_;
  bool measuring_ = false;
  uint64_t bytes_ = 0;
  std::string shown_;
  hid_t file_ = -1, xfer_ = -1;
};

}  // namespace straggler::h5
