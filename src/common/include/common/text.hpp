// Text from other people's machines (paths, kernel names, SQLite errors quoting damaged files):
// every string that reaches a message, the report, HDF5 or JSON goes through one of these.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace common {

// Length (1-4) of the valid UTF-8 sequence starting at text[i], or 0 when there is none (a stray
// continuation byte, a truncated, overlong or surrogate sequence, beyond U+10FFFF).
size_t utf8_length(std::string_view text, size_t i);

// `text` with control characters escaped (C0 and DEL as \n, \r, \t or \xNN; C1 as \u00NN) and
// bytes that are not UTF-8 as \xNN, so a path, name or SQLite error quoting a damaged file never
// breaks a one-line message or a UTF-8 output. Every path or name printed in an error or the
// report goes through it; idempotent (backslashes are kept).
std::string printable(std::string_view text);

// Printable ASCII only (any other byte becomes '?'), at most max_len bytes: for short fields of an
// input that are never anything else (version strings, host names).
std::string ascii_only(std::string_view text, size_t max_len);

// At most max_bytes bytes: a longer value is cut before a UTF-8 character and ends in "...".
std::string clip(const std::string& value, size_t max_bytes);

// `s` as a JSON string literal (quotes included). JSON must be UTF-8: each byte that starts no
// valid sequence becomes U+FFFD; control characters become \u00NN.
void append_json_string(std::string& out, std::string_view s);

}  // namespace common
