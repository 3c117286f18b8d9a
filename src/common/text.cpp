#include "common/text.hpp"

#include <cstdint>
#include <cstdio>

namespace common {

size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0;                       // overlong
  if (n == 3 && c == 0xe0 && b(i + 1) < 0xa0) return 0;   // overlong
  if (n == 3 && c == 0xed && b(i + 1) >= 0xa0) return 0;  // surrogate
  if (n == 4 && (c > 0xf4 || (c == 0xf0 && b(i + 1) < 0x90) || (c == 0xf4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

namespace {
// The code point of the valid n-byte UTF-8 sequence at text[i].
uint32_t code_point(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) { return uint32_t(static_cast<unsigned char>(s[i + k])); };
  if (n == 1) return b(0);
  if (n == 2) return (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
  if (n == 3) return (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
  return (b(0) & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 | (b(3) & 0x3f);
}
}  // namespace

bool invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) ||                             // C1 controls (CSI, NEL, ...)
         cp == 0x061c || (cp >= 0x200b && cp <= 0x200f) ||         // zero-width and direction marks
         cp == 0x2028 || cp == 0x2029 ||                           // line and paragraph separators
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) ||  // bidi embeddings, isolates
         cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb);          // BOM, interlinear annotations
}

namespace {
std::string escaped(std::string_view text, bool ascii);
}  // namespace

std::string printable(std::string_view text) { return escaped(text, false); }
std::string printable_ascii(std::string_view text) { return escaped(text, true); }

namespace {
std::string escaped(std::string_view text, bool ascii) {
  std::string out;
  out.reserve(text.size());
  char hex[16];
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else if (c >= 0x80) {
      if (const size_t n = utf8_length(text, i); n == 0) {
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
      } else if (const uint32_t cp = code_point(text, i, n); invisible_control(cp) || ascii) {
        // e.g. U+202E would reorder the line
        std::snprintf(hex, sizeof hex, cp > 0xffff ? "\\U%08x" : "\\u%04x", unsigned(cp));
        out += hex, i += n - 1;
      } else {
        out.append(text.substr(i, n)), i += n - 1;
      }
    } else {
      out += char(c);
    }
  }
  return out;
}
}  // namespace

std::string ascii_only(std::string_view s, size_t max_len) {
  std::string out;
  for (char c : s.substr(0, max_len)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

std::string clip(const std::string& value, size_t max_bytes) {
  if (value.size() <= max_bytes) return value;
  static constexpr char kMark[] = "...";
  const size_t mark = sizeof(kMark) - 1;
  if (max_bytes <= mark) return std::string(kMark, max_bytes);
  size_t cut = max_bytes - mark;
  // Back off over continuation bytes (10xxxxxx), at most 3 (a UTF-8 character has at most 4 bytes;
  // longer runs are not UTF-8 anyway): the cut then falls before a character's lead byte.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80; ++i) --cut;
  return value.substr(0, cut) + kMark;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else if (n > 1) {
      if (const uint32_t cp = code_point(s, i, n); invisible_control(cp)) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));  // the same value, escaped
        out += buf;
      } else {
        out.append(s, i, n);
      }
      i += n;
    } else {
      if (c == '"' || c == '\\') {
        out += '\\', out += char(c);
      } else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
      ++i;
    }
  }
  out += '"';
}

}  // namespace common
