#include "h5_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <H5PLpublic.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/text.hpp"

namespace h5read {
namespace {
using detail::Id;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }
void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// A scan holds a few hundred objects; a file with this many is built to make us walk.
constexpr size_t kMaxObjects = 100000;

uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : (uint64_t(8) << 30);
}

bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

std::string type_problem(hid_t type, size_t max_string) {
  const H5T_class_t c = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (c == H5T_INTEGER || c == H5T_FLOAT) return size >= 1 && size <= 8 ? "" : "numbers of " + std::to_string(size) + " bytes";
  if (c != H5T_STRING) return "a type straggler-scan does not write (class " + std::to_string(int(c)) + ")";
  if (H5Tis_variable_str(type) != 0) return "variable-length strings (straggler-scan writes fixed-length ones)";
  if (size > max_string) return "strings of " + std::to_string(size) + " bytes (at most " + std::to_string(max_string) + ")";
  return "";
}

// The dimensions of a data space of at most 2 dimensions (a scalar: none).
std::vector<hsize_t> dims_of(hid_t space, const std::string& what) {
  check(space >= 0, what + ": no data space");
  const H5S_class_t kind = H5Sget_simple_extent_type(space);
  check(kind == H5S_SCALAR || kind == H5S_SIMPLE, what + ": an empty (null) data space");
  const int rank = H5Sget_simple_extent_ndims(space);
  check(rank >= 0 && rank <= 2, what + ": " + std::to_string(rank) + " dimensions (at most 2)");
  std::vector<hsize_t> dims(size_t(rank), 0);
  if (rank > 0) check(H5Sget_simple_extent_dims(space, dims.data(), nullptr) == rank, what + ": unreadable dimensions");
  return dims;
}

// Elements x element size, or a failure naming `what` when it overflows.
uint64_t bytes_of(const std::vector<hsize_t>& dims, size_t element, const std::string& what) {
  uint64_t n = 1;
  for (hsize_t d : dims) check(mul(n, d, &n), what + ": its dimensions overflow");
  check(mul(n, element, &n), what + ": its size overflows");
  return n;
}

// Names collected by the C callbacks (no exception may cross them).
struct Walk {
  std::vector<std::pair<std::string, H5L_type_t>> links;
  std::vector<std::string> attributes;
  bool too_many = false;
};

herr_t on_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* w = static_cast<Walk*>(data);
  if (w->links.size() >= kMaxObjects) return (w->too_many = true), 1;
  w->links.emplace_back(std::string("/") + name, info->type);
  return 0;
}

herr_t on_attribute(hid_t, const char* name, const H5A_info_t*, void* data) {
  auto* w = static_cast<Walk*>(data);
  if (w->attributes.size() >= kMaxObjects) return (w->too_many = true), 1;
  w->attributes.emplace_back(name);
  return 0;
}

void check_attributes(hid_t obj, const std::string& where, const Limits& limits) {
  Walk w;
  check(H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, on_attribute, &w) >= 0 && !w.too_many,
        where + ": unreadable attributes");
  for (const auto& name : w.attributes) {
    const std::string what = where + (where == "/" ? "" : "/") + "@" + common::printable(name);
    Id a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
    check(a >= 0, what + ": cannot be opened");
    Id type(H5Aget_type(a), H5Tclose), space(H5Aget_space(a), H5Sclose);
    check(type >= 0, what + ": no type");
    const std::string bad = type_problem(type, limits.max_string_bytes);
    check(bad.empty(), what + ": " + bad);
    const auto dims = dims_of(space, what);
    check(dims.size() <= 1, what + ": more than 1 dimension");
    const uint64_t bytes = bytes_of(dims, H5Tget_size(type), what);
    check(bytes <= limits.max_attribute_bytes, what + ": " + std::to_string(bytes) + " bytes (at most " +
                                                   std::to_string(limits.max_attribute_bytes) + ")");
  }
}

// Rules 2-4 for one dataset: where its values are, that they were written, its type and shape.
void check_dataset(hid_t d, const std::string& what, const Limits& limits) {
  Id dcpl(H5Dget_create_plist(d), H5Pclose), type(H5Dget_type(d), H5Tclose), space(H5Dget_space(d), H5Sclose);
  check(dcpl >= 0 && type >= 0, what + ": unreadable dataset header");
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  check(layout != H5D_VIRTUAL, what + ": a virtual dataset (its values are in other files)");
  check(layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED || layout == H5D_COMPACT, what + ": an unknown storage layout");
  check(H5Pget_external_count(dcpl) == 0, what + ": stored in external files (its values are outside this file)");
  const int filters = H5Pget_nfilters(dcpl);
  check(filters >= 0, what + ": unreadable filters");
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t n = 0;
    const H5Z_filter_t f = H5Pget_filter2(dcpl, unsigned(i), &flags, &n, nullptr, 0, nullptr, &config);
    check(f == H5Z_FILTER_DEFLATE || f == H5Z_FILTER_SHUFFLE || f == H5Z_FILTER_FLETCHER32,
          what + ": filter " + std::to_string(f) + " (only deflate, shuffle and fletcher32 are read)");
  }
  const std::string bad = type_problem(type, limits.max_string_bytes);
  check(bad.empty(), what + ": " + bad);
  const auto dims = dims_of(space, what);
  const uint64_t bytes = bytes_of(dims, H5Tget_size(type), what);
  if (bytes == 0 || layout == H5D_COMPACT) return;
  const uint64_t stored = H5Dget_storage_size(d);
  const std::string unwritten = what + ": values never written (they would read as the fill value)";
  if (layout == H5D_CONTIGUOUS) return check(stored >= bytes, unwritten);
  std::vector<hsize_t> chunk(dims.size(), 0);
  check(!dims.empty() && H5Pget_chunk(dcpl, int(dims.size()), chunk.data()) == int(dims.size()), what + ": no chunk size");
  uint64_t expected = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    check(chunk[i] > 0, what + ": a chunk dimension of 0");
    check(mul(expected, (dims[i] + chunk[i] - 1) / chunk[i], &expected), what + ": its chunk count overflows");
  }
  hsize_t have = 0;
  check(H5Dget_num_chunks(d, space, &have) >= 0, what + ": unreadable chunk index");
  check(have >= expected, unwritten);
  check(filters == 0 || double(bytes) <= limits.max_expansion * double(stored),
        what + ": expands from " + std::to_string(stored) + " to " + std::to_string(bytes) +
            " bytes (more than deflate can; a compression bomb)");
}

// An external link (class 64) whose data is empty crashes HDF5 1.10's own external-link class
// when it lists the group (H5G_link_to_info; scan fuzzer, seed 3611), and a user-defined class
// nobody registered has no class at all. Every class from 64 up gets a stand-in that tells
// nothing and cannot be followed (scans are never read through a link that is not hard, and the
// external class is replaced too), so listing works and the check below refuses the link.
ssize_t stand_in_query(const char*, const void*, size_t, void*, size_t) { return 0; }
hid_t stand_in_traverse(const char*, hid_t, const void*, size_t, hid_t, hid_t) { return H5I_INVALID_HID; }
void register_stand_in_link_classes() {
  static const bool done = [] {
    for (int id = H5L_TYPE_UD_MIN; id <= H5L_TYPE_MAX; ++id) {
      if (H5Lis_registered(H5L_type_t(id)) > 0) H5Lunregister(H5L_type_t(id));
      const H5L_class_t cls{H5L_LINK_CLASS_T_VERS, H5L_type_t(id), "straggler-scan stand-in", nullptr, nullptr, nullptr,
                            stand_in_traverse, nullptr, stand_in_query};
      H5Lregister(&cls);
    }
    return true;
  }();
  (void)done;
}

}  // namespace

File::File(const std::string& path, Limits limits) : path_(path), limits_(limits) {
  if (limits_.memory_bytes == 0) limits_.memory_bytes = physical_memory() / 2;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // failures are exceptions, not HDF5's stack dump
  H5PLset_loading_state(0);                     // a file never makes us load a filter plugin
  register_stand_in_link_classes();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the descriptor checked is the one read.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  check(fd_ >= 0, "cannot open it");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail(S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO)" : S_ISDIR(st.st_mode) ? "a directory, not a scan file"
                                                                                    : "not a regular file");
  }
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  file_ = H5Fopen(::access(self.c_str(), R_OK) == 0 ? self.c_str() : path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  try {
    check(file_ >= 0, "not an HDF5 file, or a damaged one");
    check_all();
  } catch (...) {
    close_handles();
    throw;
  }
}

File::~File() { close_handles(); }

void File::close_handles() {
  if (file_ >= 0) H5Fclose(file_), file_ = -1;
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
}

// Every link from the root (H5Lvisit visits each group once, so hard-link cycles end), every
// object's attributes, every dataset's storage: before any value is read.
void File::check_all() {
  Walk w;
  check(H5Lvisit(file_, H5_INDEX_NAME, H5_ITER_NATIVE, on_link, &w) >= 0 && !w.too_many,
        w.too_many ? "more than " + std::to_string(kMaxObjects) + " objects" : "its objects cannot be listed");
  check_attributes(file_, "/", limits_);
  for (const auto& [name, kind] : w.links) {
    const std::string what = common::printable(name);
    check(kind == H5L_TYPE_HARD, what + (kind == H5L_TYPE_SOFT       ? ": a soft link"
                                         : kind == H5L_TYPE_EXTERNAL ? ": a link to another file"
                                                                     : ": a user-defined link"));
    Id obj(H5Oopen(file_, name.c_str(), H5P_DEFAULT), H5Oclose);
    check(obj >= 0, what + ": cannot be opened");
    check_attributes(obj, what, limits_);
    const H5I_type_t t = H5Iget_type(obj);
    if (t == H5I_DATASET) check_dataset(obj, what, limits_);
    else check(t == H5I_GROUP, what + ": neither a group nor a dataset");
  }
}

Id File::open_dataset(const std::string& object) const {
  check(exists(object), object + ": no such dataset");
  Id d(H5Dopen2(file_, object.c_str(), H5P_DEFAULT), H5Dclose);
  check(d >= 0, object + ": not a dataset");
  return d;
}

std::vector<hsize_t> File::checked_dims(hid_t dataset, const std::string& object, bool one_d) const {
  Id space(H5Dget_space(dataset), H5Sclose);
  const auto dims = dims_of(space, object);
  check(!one_d || dims.size() <= 1, object + " is not 1-D");
  return dims;
}

uint64_t File::element_count(const std::vector<hsize_t>& dims, const std::string& object) const {
  return bytes_of(dims, 1, object);
}

void File::charge(uint64_t n, uint64_t size, const std::string& object) const {
  uint64_t bytes = 0;
  check(mul(n, size, &bytes), object + ": its size overflows");
  check(bytes <= limits_.memory_bytes && charged_ + bytes <= limits_.memory_bytes,
        object + ": reading it would take " + std::to_string(bytes >> 20) + " MiB, beyond the " +
            std::to_string(limits_.memory_bytes >> 20) + " MiB this file may take");
  charged_ += bytes;
}

void File::read_all(hid_t dataset, hid_t mem_type, void* buf, const std::string& object) const {
  check(H5Dread(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, object + ": cannot be read");
}

namespace {
// Fixed-length strings (the only kind the checks let through): `n` values of `len` bytes, read
// by `read` into one buffer whose size was charged; each made printable.
template <class Read>
std::vector<std::string> fixed_strings(hid_t stored, uint64_t n, const std::string& what, Read read, bool raw = false) {
  check(H5Tget_class(stored) == H5T_STRING && H5Tis_variable_str(stored) == 0, what + ": not fixed-length strings");
  const size_t len = std::max<size_t>(1, H5Tget_size(stored));
  uint64_t total = 0;
  check(mul(n, len, &total) && total < SIZE_MAX, what + ": its size overflows");
  Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem, len);
  H5Tset_strpad(mem, H5T_STR_NULLPAD);
  // HDF5 converts no character set into another: read UTF-8 (h5py's choice) as UTF-8, bytes as
  // they are; printable() below decides what they show as.
  H5Tset_cset(mem, H5Tget_cset(stored) == H5T_CSET_UTF8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  std::vector<char> buf(size_t(total) + 1, '\0');
  check(read(hid_t(mem), static_cast<void*>(buf.data())) >= 0, what + ": cannot be read");
  std::vector<std::string> out;
  out.reserve(size_t(n));
  for (uint64_t i = 0; i < n; ++i) {
    const char* s = buf.data() + i * len;
    const std::string_view v(s, ::strnlen(s, len));
    out.push_back(raw ? std::string(v) : common::printable(v));
  }
  return out;
}
}  // namespace

std::vector<std::string> File::strings(const std::string& object) const { return read_strings(object, false); }
std::vector<std::string> File::raw_strings(const std::string& object) const { return read_strings(object, true); }

std::vector<std::string> File::read_strings(const std::string& object, bool raw) const {
  Id d = open_dataset(object);
  const uint64_t n = element_count(checked_dims(d, object, true), object);
  Id type(H5Dget_type(d), H5Tclose);
  // The buffer, then each value's own copy and its string object.
  charge(n, 2 * std::max<size_t>(1, H5Tget_size(type)) + sizeof(std::string), object);
  if (n == 0) return {};
  return fixed_strings(
      type, n, object, [&](hid_t mem, void* buf) { return H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf); }, raw);
}

std::vector<hsize_t> File::shape(const std::string& object) const {
  Id d = open_dataset(object);
  Id space(H5Dget_space(d), H5Sclose);
  return dims_of(space, object);
}

bool File::exists(const std::string& object) const {
  if (object == "/") return true;
  // H5Lexists needs each parent to exist: check them from the root down.
  for (size_t at = object.find('/', 1);; at = object.find('/', at + 1)) {
    const std::string prefix = object.substr(0, at);
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (at == std::string::npos) return true;
  }
}

bool File::has_attribute(const std::string& object, const std::string& name) const {
  return exists(object) && H5Aexists_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

void File::read_scalar_attribute(const std::string& object, const std::string& name, hid_t mem, void* out) const {
  const std::string what = object + "@" + name;
  check(has_attribute(object, name), what + ": no such attribute");
  Id a(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  check(a >= 0, what + ": cannot be opened");
  Id space(H5Aget_space(a), H5Sclose), type(H5Aget_type(a), H5Tclose);
  check(bytes_of(dims_of(space, what), 1, what) == 1, what + ": not a single value");
  const H5T_class_t c = H5Tget_class(type);
  check(c == H5T_INTEGER || c == H5T_FLOAT, what + ": not a number");
  check(H5Aread(a, mem, out) >= 0, what + ": cannot be read");
}

std::vector<std::string> File::attribute_strings(const std::string& object, const std::string& name) const {
  const std::string what = object + "@" + name;
  check(has_attribute(object, name), what + ": no such attribute");
  Id a(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  check(a >= 0, what + ": cannot be opened");
  Id space(H5Aget_space(a), H5Sclose), type(H5Aget_type(a), H5Tclose);
  const uint64_t n = bytes_of(dims_of(space, what), 1, what);
  charge(n, 2 * std::max<size_t>(1, H5Tget_size(type)) + sizeof(std::string), what);
  if (n == 0) return {};
  return fixed_strings(type, n, what, [&](hid_t mem, void* buf) { return H5Aread(a, mem, buf); });
}

std::string File::string_attribute(const std::string& object, const std::string& name) const {
  auto v = attribute_strings(object, name);
  check(v.size() == 1, object + "@" + name + ": not a single string");
  return v[0];
}

std::vector<std::string> File::string_list_attribute(const std::string& object, const std::string& name) const {
  return attribute_strings(object, name);
}

std::vector<std::string> File::objects() const {
  Walk w;
  check(H5Lvisit(file_, H5_INDEX_NAME, H5_ITER_INC, on_link, &w) >= 0, "its objects cannot be listed");
  std::vector<std::string> out;
  for (auto& [name, kind] : w.links) out.push_back(std::move(name));
  return out;
}

}  // namespace h5read
