// Compact byte records exchanged between processes (result rows, never raw events).
//
// A record is described once, by one field list used for both directions:
//   template <> struct Wire<Edge> {
//     static void fields(auto& ar, auto& e) { ar(e.a, e.b, e.offset_ns); }
//   };
//   std::string blob = pack_list(edges);   unpack_list(blob, edges);
// Fields may be trivially copyable values, std::string, std::vector, std::optional or records
// with a Wire. Both sides run the same binary, so one list cannot disagree with itself.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace straggler {

class ByteWriter {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    buf_ += s;
  }
  const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& b) : b_(b) {}
  template <class T>
  T pod() {
    T v;
    raw(&v, sizeof(T));
    return v;
  }
  void raw(void* p, size_t n) {
    need(n);
    if (n) std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
  }
  std::string str() {
    auto n = pod<uint64_t>();
    need(n);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ >= b_.size(); }

 private:
  void need(size_t n) const {
    if (n > b_.size() - pos_) throw std::logic_error("exchange: truncated record");
  }
  const std::string& b_;
  size_t pos_ = 0;
};

// A record's field list (specialize with `static void fields(auto& ar, auto& r)`).
template <class T>
struct Wire;

namespace wire_detail {
template <class T>
concept HasWire = requires { sizeof(Wire<T>); };
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
}  // namespace wire_detail

class WireOut {
 public:
  explicit WireOut(ByteWriter& w) : w_(w) {}
  template <class... T>
  void operator()(const T&... v) {
    (put(v), ...);
  }

 private:
  template <class T>
  void put(const T& v) {
    using namespace wire_detail;
    if constexpr (HasWire<T>) Wire<T>::fields(*this, v);
    else if constexpr (std::is_same_v<T, std::string>) w_.str(v);
    else if constexpr (is_vector<T>::value) {
      w_.pod<uint64_t>(v.size());
      if constexpr (std::is_trivially_copyable_v<typename T::value_type> && !HasWire<typename T::value_type>)
        w_.raw(v.data(), v.size() * sizeof(typename T::value_type));
      else
        for (const auto& x : v) put(x);
    } else if constexpr (is_optional<T>::value) {
      w_.pod<uint8_t>(v.has_value());
      if (v) put(*v);
    } else {
      w_.pod(v);
    }
  }
  ByteWriter& w_;
};

class WireIn {
 public:
  explicit WireIn(ByteReader& r) : r_(r) {}
  template <class... T>
  void operator()(T&... v) {
    (get(v), ...);
  }

 private:
  template <class T>
  void get(T& v) {
    using namespace wire_detail;
    if constexpr (HasWire<T>) Wire<T>::fields(*this, v);
    else if constexpr (std::is_same_v<T, std::string>) v = r_.str();
    else if constexpr (is_vector<T>::value) {
      const auto n = r_.pod<uint64_t>();
      if constexpr (std::is_trivially_copyable_v<typename T::value_type> && !HasWire<typename T::value_type>) {
        if (n > (uint64_t(1) << 40) / sizeof(typename T::value_type)) throw std::logic_error("exchange: bad length");
        v.resize(n);
        r_.raw(v.data(), n * sizeof(typename T::value_type));
      } else {
        v.clear();
        for (uint64_t i = 0; i < n; ++i) get(v.emplace_back());
      }
    } else if constexpr (is_optional<T>::value) {
      v.reset();
      if (r_.pod<uint8_t>()) get(v.emplace());
    } else {
      v = r_.pod<T>();
    }
  }
  ByteReader& r_;
};

template <class T>
void put(ByteWriter& w, const T& v) {
  WireOut out(w);
  out(v);
}
template <class T>
void get_into(ByteReader& r, T& v) {
  WireIn in(r);
  in(v);
}
template <class T>
T get(ByteReader& r) {
  T v{};
  WireIn in(r);
  in(v);
  return v;
}

// A list of records, back to back (an empty list is an empty blob).
template <class T>
std::string pack_list(const std::vector<T>& v) {
  ByteWriter w;
  WireOut out(w);
  for (const auto& x : v) out(x);
  return w.bytes();
}
// Appends the records of `blob` to `out`.
template <class T>
void unpack_list(const std::string& blob, std::vector<T>& out) {
  ByteReader r(blob);
  WireIn in(r);
  while (!r.done()) in(out.emplace_back());
}

// Every process's records, in process order, over anything with `allgather(const std::string&)`
// (a Transport, or the cross-rank run's counting Exchange).
template <class T, class Gatherer>
std::vector<T> allgather_list(Gatherer& g, const std::vector<T>& mine) {
  std::vector<T> all;
  for (const auto& blob : g.allgather(pack_list(mine))) unpack_list(blob, all);
  return all;
}

}  // namespace straggler
