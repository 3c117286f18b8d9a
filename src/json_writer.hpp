// A minimal streaming JSON writer: correct escaping of untrusted strings, no dependency.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/text.hpp"

namespace straggler {

class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(const std::string& k) {
    comma();
    quote(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(const std::string& s) { return comma(), quote(s), *this; }
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double v) {
    comma();
    if (!std::isfinite(v)) return out_ += "null", *this;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& value(int64_t v) { return comma(), out_ += std::to_string(v), *this; }
  JsonWriter& value(int v) { return value(int64_t(v)); }
  JsonWriter& value(bool v) { return comma(), out_ += v ? "true" : "false", *this; }
  JsonWriter& null() { return comma(), out_ += "null", *this; }
  // A whole value written by another JsonWriter (its str()).
  JsonWriter& raw(const std::string& value) { return comma(), out_ += value, *this; }
  const std::string& str() const { return out_; }

 private:
  JsonWriter& open(char c) {
    comma();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    first_.pop_back();
    out_ += c;
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ", ";
      first_.back() = false;
    }
  }
  // Untrusted text (an SQLite error quoting a damaged schema, a path) becomes valid JSON UTF-8.
  void quote(const std::string& s) { common::append_json_string(out_, s); }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace straggler
