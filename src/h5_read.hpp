// Reading an HDF5 file back through the HDF5 C API: 1-D numeric and string datasets, 2-D numeric
// ones, attributes, and the list of objects. Serial open with the default file access list, read-only.
// Every failure throws std::runtime_error naming the file and object. Used by `straggler-scan report`
// (src/scan_load.cpp) and by the tests.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace h5read {

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

inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("h5read: " + what);
}

inline Id open_file(const std::string& file) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // failures are exceptions, not HDF5's stack dump
  Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  check(f >= 0, "cannot open " + file);
  return f;
}

// The element count of a dataset or attribute space (scalar: 1); 1-D only.
inline size_t count_of(hid_t space, const std::string& what) {
  check(space >= 0, "no data space: " + what);
  const int rank = H5Sget_simple_extent_ndims(space);
  check(rank == 0 || rank == 1, what + " is not 1-D");
  hsize_t n = 1;
  if (rank == 1) H5Sget_simple_extent_dims(space, &n, nullptr);
  return size_t(n);
}

// Fixed-length strings (what the writer makes) or variable-length ones, read from `obj`.
template <class Read>
std::vector<std::string> read_strings(hid_t stored_type, size_t n, const std::string& what, Read read) {
  check(H5Tget_class(stored_type) == H5T_STRING, what + " is not a string");
  std::vector<std::string> out;
  if (H5Tis_variable_str(stored_type) > 0) {
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem, H5T_VARIABLE);
    std::vector<char*> p(n, nullptr);
    check(read(hid_t(mem), static_cast<void*>(p.data())) >= 0, "cannot read " + what);
    for (char* s : p) out.emplace_back(s ? s : ""), H5free_memory(s);
    return out;
  }
  const size_t len = H5Tget_size(stored_type);
  Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem, len);
  H5Tset_strpad(mem, H5T_STR_NULLPAD);
  std::vector<char> buf(n * len + 1, '\0');
  check(read(hid_t(mem), static_cast<void*>(buf.data())) >= 0, "cannot read " + what);
  for (size_t i = 0; i < n; ++i) {
    std::string s(buf.data() + i * len, len);
    out.push_back(s.substr(0, s.find('\0')));
  }
  return out;
}

template <class T>
hid_t native() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
  else static_assert(sizeof(T) == 0, "read as double, int64_t, uint64_t, int32_t or uint8_t");
}

}  // namespace detail

// A 1-D numeric dataset, converted by HDF5 to T (double, int64_t, uint64_t, int32_t or uint8_t).
template <class T = double>
std::vector<T> numbers(const std::string& file, const std::string& path) {
  auto f = detail::open_file(file);
  detail::Id d(H5Dopen2(f, path.c_str(), H5P_DEFAULT), H5Dclose);
  detail::check(d >= 0, "no dataset " + path + " in " + file);
  detail::Id space(H5Dget_space(d), H5Sclose);
  std::vector<T> v(detail::count_of(space, path));
  if (!v.empty())
    detail::check(H5Dread(d, detail::native<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0, "cannot read " + path);
  return v;
}

// A 2-D numeric dataset (rows x width), row-major, with its width; a 1-D one is one row.
template <class T = double>
std::pair<std::vector<T>, size_t> matrix(const std::string& file, const std::string& path) {
  auto f = detail::open_file(file);
  detail::Id d(H5Dopen2(f, path.c_str(), H5P_DEFAULT), H5Dclose);
  detail::check(d >= 0, "no dataset " + path + " in " + file);
  detail::Id space(H5Dget_space(d), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  detail::check(rank == 1 || rank == 2, path + " is not 1-D or 2-D");
  hsize_t dims[2] = {0, 1};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  const size_t width = rank == 2 ? size_t(dims[1]) : size_t(dims[0]);
  std::vector<T> v(size_t(dims[0]) * size_t(rank == 2 ? dims[1] : 1));
  if (!v.empty())
    detail::check(H5Dread(d, detail::native<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0, "cannot read " + path);
  return {std::move(v), width};
}

// Whether the object (group or dataset) at `path` exists; its parent groups must.
inline bool exists(const std::string& file, const std::string& path) {
  auto f = detail::open_file(file);
  return H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0;
}

// Whether `name` is an attribute of the object at `path`.
inline bool has_attribute(const std::string& file, const std::string& path, const std::string& name) {
  auto f = detail::open_file(file);
  return H5Aexists_by_name(f, path.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

// A 1-D string dataset.
inline std::vector<std::string> strings(const std::string& file, const std::string& path) {
  auto f = detail::open_file(file);
  detail::Id d(H5Dopen2(f, path.c_str(), H5P_DEFAULT), H5Dclose);
  detail::check(d >= 0, "no dataset " + path + " in " + file);
  detail::Id space(H5Dget_space(d), H5Sclose);
  detail::Id type(H5Dget_type(d), H5Tclose);
  const size_t n = detail::count_of(space, path);
  if (n == 0) return {};
  return detail::read_strings(type, n, path, [&](hid_t mem, void* buf) {
    return H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  });
}

// The dimensions of a dataset (any rank).
inline std::vector<hsize_t> shape(const std::string& file, const std::string& path) {
  auto f = detail::open_file(file);
  detail::Id d(H5Dopen2(f, path.c_str(), H5P_DEFAULT), H5Dclose);
  detail::check(d >= 0, "no dataset " + path + " in " + file);
  detail::Id space(H5Dget_space(d), H5Sclose);
  std::vector<hsize_t> dims(size_t(std::max(0, H5Sget_simple_extent_ndims(space))));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return dims;
}

// A scalar numeric attribute of the object at `path` ("/" for the file).
template <class T = double>
T attribute(const std::string& file, const std::string& path, const std::string& name) {
  auto f = detail::open_file(file);
  detail::Id a(H5Aopen_by_name(f, path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  detail::check(a >= 0, "no attribute " + name + " on " + path + " in " + file);
  detail::Id space(H5Aget_space(a), H5Sclose);
  detail::check(detail::count_of(space, name) == 1, name + " is not a scalar");
  T v{};
  detail::check(H5Aread(a, detail::native<T>(), &v) >= 0, "cannot read attribute " + name);
  return v;
}

// A string attribute of the object at `path`.
inline std::string string_attribute(const std::string& file, const std::string& path, const std::string& name) {
  auto f = detail::open_file(file);
  detail::Id a(H5Aopen_by_name(f, path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  detail::check(a >= 0, "no attribute " + name + " on " + path + " in " + file);
  detail::Id space(H5Aget_space(a), H5Sclose);
  detail::Id type(H5Aget_type(a), H5Tclose);
  auto v = detail::read_strings(type, detail::count_of(space, name), name,
                                [&](hid_t mem, void* buf) { return H5Aread(a, mem, buf); });
  detail::check(v.size() == 1, name + " is not a single string");
  return v[0];
}

// A string-list attribute (or a single string, as a list of one).
inline std::vector<std::string> string_list_attribute(const std::string& file, const std::string& path,
                                                      const std::string& name) {
  auto f = detail::open_file(file);
  detail::Id a(H5Aopen_by_name(f, path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  detail::check(a >= 0, "no attribute " + name + " on " + path + " in " + file);
  detail::Id space(H5Aget_space(a), H5Sclose);
  detail::Id type(H5Aget_type(a), H5Tclose);
  const size_t n = detail::count_of(space, name);
  if (n == 0) return {};
  return detail::read_strings(type, n, name, [&](hid_t mem, void* buf) { return H5Aread(a, mem, buf); });
}

// Every group and dataset in the file, as absolute paths ("/ranks", "/ranks/rank", ...).
inline std::vector<std::string> objects(const std::string& file) {
  auto f = detail::open_file(file);
  std::vector<std::string> out;
  auto visit = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
    return 0;
  };
  detail::check(H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, visit, &out) >= 0, "cannot list " + file);
  return out;
}

}  // namespace h5read
