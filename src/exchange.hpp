// Compact byte records exchanged between MPI processes (result rows, never raw events).
#pragma once
#include <cstdint>
#include <cstring>
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
    need(sizeof(T));
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
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
    if (pos_ + n > b_.size()) throw std::logic_error("exchange: truncated record");
  }
  const std::string& b_;
  size_t pos_ = 0;
};

}  // namespace straggler
