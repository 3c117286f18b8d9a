// Reading an HDF5 file back: a scan someone sent is as untrusted as a profile. `File` opens the
// file once and, before any value is read, checks the whole of it against the rules of
// docs/hdf5-layout.md ("Reading a scan someone sent you"): a regular file, nothing stored outside
// it, every value written, the types the writer writes, overflow-checked sizes; every read is then
// counted against a memory bound before it allocates, and every string comes back printable.
// Failures throw std::runtime_error naming the object (the caller names the file). Used by
// `straggler-scan report`, `compare`, `scaling` (src/scan_load.cpp) and by the tests.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace h5read {

// Bounds of what a file may make us allocate (docs/hdf5-layout.md, rules 3-6).
struct Limits {
  uint64_t memory_bytes = 0;               // all reads of one File together; 0: half the physical memory
  size_t max_string_bytes = 1024;          // a fixed-length string element (h5::kMaxStringBytes)
  uint64_t max_attribute_bytes = 64ull << 20;
  double max_expansion = 1100;             // a filtered dataset's size over its stored size
};

namespace detail {
// Closes an HDF5 id with its own close function when it goes out of scope.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  Id(Id&& o) noexcept : id(o.id), close(o.close) { o.id = -1; }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id >= 0) close(id);
  }
  operator hid_t() const { return id; }
};
}  // namespace detail

class File {
 public:
  // Opens `path` read-only and checks every object in it; throws naming the rule broken.
  explicit File(const std::string& path, Limits limits = {});
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::string& path() const { return path_; }

  // A 1-D numeric dataset, converted by HDF5 to T (double, int64_t, uint64_t, int32_t or uint8_t).
  template <class T = double>
  std::vector<T> numbers(const std::string& object) const {
    auto [v, width] = read_numeric<T>(object, true);
    (void)width;
    return v;
  }
  // A 2-D numeric dataset (rows x width), row-major, with its width; a 1-D one is one row.
  template <class T = double>
  std::pair<std::vector<T>, size_t> matrix(const std::string& object) const {
    return read_numeric<T>(object, false);
  }
  // A 1-D string dataset, each value printable (common::printable).
  std::vector<std::string> strings(const std::string& object) const;
  // The same values as stored (up to the first NUL), not made printable: what tests of the writer
  // look at; never print them.
  std::vector<std::string> raw_strings(const std::string& object) const;
  // The dimensions of a dataset (checked at open: at most 2).
  std::vector<hsize_t> shape(const std::string& object) const;
  // Whether the object at `object` exists (its parent groups need not).
  bool exists(const std::string& object) const;
  bool has_attribute(const std::string& object, const std::string& name) const;
  // A scalar numeric attribute of the object ("/" for the file).
  template <class T = double>
  T attribute(const std::string& object, const std::string& name) const {
    T v{};
    read_scalar_attribute(object, name, native<T>(), &v);
    return v;
  }
  std::string string_attribute(const std::string& object, const std::string& name) const;
  // A string-list attribute (or a single string, as a list of one).
  std::vector<std::string> string_list_attribute(const std::string& object, const std::string& name) const;
  // Every group and dataset, as absolute paths ("/ranks", "/ranks/rank", ...).
  std::vector<std::string> objects() const;

 private:
  template <class T>
  static hid_t native() {
    if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
    else if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
    else if constexpr (std::is_same_v<T, uint64_t>) return H5T_NATIVE_UINT64;
    else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
    else if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
    else static_assert(sizeof(T) == 0, "read as double, int64_t, uint64_t, int32_t or uint8_t");
  }
  template <class T>
  std::pair<std::vector<T>, size_t> read_numeric(const std::string& object, bool one_d) const {
    detail::Id d = open_dataset(object);
    const auto dims = checked_dims(d, object, one_d);
    const uint64_t n = element_count(dims, object);
    charge(n, sizeof(T), object);
    std::vector<T> v(static_cast<size_t>(n));
    if (!v.empty()) read_all(d, native<T>(), v.data(), object);
    return {std::move(v), dims.size() == 2 ? size_t(dims[1]) : size_t(dims.empty() ? 1 : dims[0])};
  }
  detail::Id open_dataset(const std::string& object) const;
  std::vector<hsize_t> checked_dims(hid_t dataset, const std::string& object, bool one_d) const;
  uint64_t element_count(const std::vector<hsize_t>& dims, const std::string& object) const;
  // Counts `n` x `size` bytes against the memory bound; throws before anything is allocated.
  void charge(uint64_t n, uint64_t size, const std::string& object) const;
  void read_all(hid_t dataset, hid_t mem_type, void* buf, const std::string& object) const;
  void read_scalar_attribute(const std::string& object, const std::string& name, hid_t mem, void* out) const;
  std::vector<std::string> read_strings(const std::string& object, bool raw) const;
  std::vector<std::string> attribute_strings(const std::string& object, const std::string& name) const;
  void check_all();
  void close_handles();

  std::string path_;
  Limits limits_;
  int fd_ = -1;
  hid_t file_ = -1;
  mutable uint64_t charged_ = 0;
};

// The same reads by path: each opens and checks the file anew (tests, one-off reads).
template <class T = double>
std::vector<T> numbers(const std::string& file, const std::string& path) {
  return File(file).numbers<T>(path);
}
template <class T = double>
std::pair<std::vector<T>, size_t> matrix(const std::string& file, const std::string& path) {
  return File(file).matrix<T>(path);
}
inline bool exists(const std::string& file, const std::string& path) { return File(file).exists(path); }
inline bool has_attribute(const std::string& file, const std::string& path, const std::string& name) {
  return File(file).has_attribute(path, name);
}
inline std::vector<std::string> strings(const std::string& file, const std::string& path) {
  return File(file).strings(path);
}
inline std::vector<std::string> raw_strings(const std::string& file, const std::string& path) {
  return File(file).raw_strings(path);
}
inline std::vector<hsize_t> shape(const std::string& file, const std::string& path) { return File(file).shape(path); }
template <class T = double>
T attribute(const std::string& file, const std::string& path, const std::string& name) {
  return File(file).attribute<T>(path, name);
}
inline std::string string_attribute(const std::string& file, const std::string& path, const std::string& name) {
  return File(file).string_attribute(path, name);
}
inline std::vector<std::string> string_list_attribute(const std::string& file, const std::string& path,
                                                      const std::string& name) {
  return File(file).string_list_attribute(path, name);
}
inline std::vector<std::string> objects(const std::string& file) { return File(file).objects(); }

}  // namespace h5read
