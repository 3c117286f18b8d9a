#include "json_stream.hpp"

#include <simdjson.h>

#include <cstring>

#include "common/text.hpp"
#include "ranks/profile_reader.hpp"

namespace ranks::detail {
namespace {

constexpr size_t kChunk = size_t(1) << 20;
constexpr size_t kPad = simdjson::SIMDJSON_PADDING;

struct ScanState {
  int64_t depth = 0;
  bool in_string = false;
  bool escaped = false;  // in a string, the bytes scanned so far end in an odd run of backslashes
};

// Where the value being scanned ends in p[i, e): the index of its closing quote or bracket, or e.
// Strings are most of a trace's bytes: memchr finds their closing quote; a quote after an odd run
// of backslashes is escaped.
size_t scan_chunk(const char* p, size_t i, size_t e, ScanState& st) {
  while (i < e) {
    if (st.in_string) {
      const size_t from = i;
      const void* q = std::memchr(p + i, '"', e - i);
      const size_t j = q ? size_t(static_cast<const char*>(q) - p) : e;
      size_t run = 0;  // backslashes right before j, within this segment
      while (j - run > from && p[j - run - 1] == '\\') ++run;
      const bool odd = (run + (run == j - from && st.escaped ? 1 : 0)) % 2 == 1;
      if (!q) {
        st.escaped = odd;
        return e;
      }
      st.escaped = false;
      i = j + 1;
      if (odd) continue;  // an escaped quote
      st.in_string = false;
      if (st.depth == 0) return j;
      continue;
    }
    const char c = p[i];
    if (c == '"') st.in_string = true;
    else if (c == '{' || c == '[') ++st.depth;
    else if ((c == '}' || c == ']') && --st.depth == 0) return i;
    ++i;
  }
  return e;
}

// A window over the stream: bytes [keep_, end_) are in memory; everything before keep_ may be
// dropped at the next refill. pos_ is the scan position.
class Scanner {
 public:
  Scanner(InputStream& in, const JsonStreamLimits& lim) : in_(in), lim_(lim), buf_(kChunk + kPad) {}

  JsonStreamCounts run(const JsonStreamCallbacks& cb) {
    if (!at_end() && end_ >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;  // a UTF-8 BOM
    skip_ws();
    if (at_end() || cur() != '{') fail("not a JSON object (a PyTorch profiler trace is one)");
    ++pos_;
    while (true) {
      skip_ws();
      if (at_end()) fail_cut("the top-level object");
      if (cur() == '}') break;
      if (cur() == ',') {
        ++pos_;
        continue;
      }
      if (cur() != '"') fail("expected a member name");
      const std::string key = read_key();
      skip_ws();
      if (at_end() || cur() != ':') fail("expected ':' after \"" + common::printable_ascii(key) + "\"");
      ++pos_;
      skip_ws();
      if (at_end()) fail_cut("the member \"" + common::printable_ascii(key) + "\"");
      if (key == cb.array_key) read_array(cb);
      else if (cb.want && cb.want(key)) read_member(key, cb);
      else skip_value();
    }
    return counts_;
  }

 private:
  bool at_end() {
    if (pos_ < end_) return false;
    return !fill();
  }
  char cur() const { return buf_[pos_]; }

  // Reads more, first dropping what lies before keep_ (the scan never looks back past it).
  bool fill() {
    if (eof_) return false;
    if (keep_ > 0) {
      std::memmove(buf_.data(), buf_.data() + keep_, end_ - keep_);
      // A value whose start is dropped is no longer whole (dropped_ says so; start_ means nothing).
      if (keep_ > start_) dropped_ = true;
      end_ -= keep_, pos_ -= keep_, start_ = start_ >= keep_ ? start_ - keep_ : 0, keep_ = 0;
    }
    if (buf_.size() < end_ + kChunk + kPad) buf_.resize(std::max(buf_.size() * 2, end_ + kChunk + kPad));
    const size_t got = in_.read(buf_.data() + end_, kChunk);
    end_ += got;
    std::memset(buf_.data() + end_, 0, kPad);
    if (got == 0) eof_ = true;
    return got > 0;
  }

  // Blanks are never kept: a run of them of any length costs no memory (K3: 300 MB of blanks).
  void skip_ws() {
    while (true) {
      for (; pos_ < end_; ++pos_) {
        const char c = cur();
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      }
      keep_ = pos_;
      if (!fill()) return;
    }
  }
  // Scans one value from pos_ to just past its end. keep: hold its bytes (from start_) unless it
  // grows past `limit`, then drop them as it goes; returns whether it was kept whole.
  bool scan_value(bool keep, size_t limit) {
    start_ = pos_;
    keep_ = pos_;
    dropped_ = false;
    const char first = cur();
    // Anything else cannot start a value; scanning it as a scalar would consume nothing (K1: a stray
    // '}' in traceEvents looped forever).
    if (first == '}' || first == ']' || first == ',' || first == ':')
      fail(std::string("unexpected '") + first + "' where a value should start");
    if (first != '{' && first != '[' && first != '"') return scan_scalar(keep, limit);
    ScanState st;
    while (true) {
      const size_t e = end_;
      const size_t i = scan_chunk(buf_.data(), pos_, e, st);
      if (i < e) {
        pos_ = i + 1;
        return !dropped_;
      }
      pos_ = e;
      if (!keep || dropped_ || pos_ - start_ > limit) keep_ = pos_;  // too large or unwanted: let it go
      if (!fill()) fail_cut(st.in_string ? "a string" : "an object or array");
    }
  }
  bool scan_scalar(bool keep, size_t limit) {
    while (true) {
      while (pos_ < end_) {
        const char c = cur();
        if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return !dropped_;
        ++pos_;
      }
      if (!keep || dropped_ || pos_ - start_ > limit) keep_ = pos_;
      if (!fill()) return !dropped_;
    }
  }

  // A member's name; "" for one over 4 KB (no member a reader wants; K2: its start was dropped).
  std::string read_key() {
    const bool whole = scan_value(true, 4096);
    std::string key = whole ? std::string(buf_.data() + start_, pos_ - start_) : std::string();
    keep_ = pos_;
    return key.size() >= 2 ? key.substr(1, key.size() - 2) : std::string();
  }

  void skip_value() {
    scan_value(false, 0);
    keep_ = pos_;
  }

  void read_member(const std::string& key, const JsonStreamCallbacks& cb) {
    if (scan_value(true, lim_.max_member)) {
      cb.member(key, std::string_view(buf_.data() + start_, pos_ - start_));
    } else {
      counts_.skipped_members.push_back(key);
    }
    keep_ = pos_;
  }

  void read_array(const JsonStreamCallbacks& cb) {
    if (cur() != '[') fail("\"" + std::string(cb.array_key) + "\" is not an array");
    counts_.saw_array = true;
    ++pos_;
    keep_ = pos_;
    while (true) {
      skip_ws();
      if (at_end()) fail_cut("\"" + std::string(cb.array_key) + "\"");
      const char c = cur();
      if (c == ']') {
        ++pos_;
        return;
      }
      if (c == ',') {
        ++pos_;
        keep_ = pos_;
        continue;
      }
      if (scan_value(true, lim_.max_element)) {
          ++counts_.elements;
        cb.element(std::string_view(buf_.data() + start_, pos_ - start_));
      } else {
        ++counts_.skipped_elements;
      }
      keep_ = pos_;
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ProfileError(common::printable(in_.path()) + ": " + what + " at byte " + std::to_string(offset()));
  }
  [[noreturn]] void fail_cut(const std::string& inside) const {
    throw ProfileError(common::printable(in_.path()) + ": the file ends inside " + inside + " (truncated after " +
                       std::to_string(counts_.elements) + " trace events, at byte " + std::to_string(offset()) + ")");
  }
  uint64_t offset() const { return in_.bytes_read() - (end_ - pos_); }

  InputStream& in_;
  JsonStreamLimits lim_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0, keep_ = 0, start_ = 0;
  bool eof_ = false;
  bool dropped_ = false;  // the value being scanned lost its first bytes (too large, or unwanted)
  JsonStreamCounts counts_;
};

}  // namespace

JsonStreamCounts stream_json_object(InputStream& in, const JsonStreamCallbacks& cb, const JsonStreamLimits& limits) {
  return Scanner(in, limits).run(cb);
}

}  // namespace ranks::detail
