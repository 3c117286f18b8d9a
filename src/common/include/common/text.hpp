// Text from other people's machines (paths, kernel names, SQLite errors quoting damaged files):
// every string that reaches a message, the report, HDF5 or JSON goes through one of these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace common {

// Length (1-4) of the valid UTF-8 sequence starting at text[i], or 0 when there is none (a stray
// continuation byte, a truncated, overlong or surrogate sequence, beyond U+10FFFF).
size_t utf8_length(std::string_view text, size_t i);

// Unicode characters that change how a terminal shows a line without being seen: C1 controls,
// bidirectional overrides and isolates (U+202E...), zero-width marks, line/paragraph separators.
bool invisible_control(uint32_t code_point);

// `text` with control characters escaped (C0 and DEL as \n, \r, \t or \xNN; C1 and the other
// invisible_control characters as \uNNNN) and
// bytes that are not UTF-8 as \xNN, so a path, name or SQLite error quoting a damaged file never
// breaks a one-line message or a UTF-8 output. Every path or name printed in an error or the
// report goes through it; idempotent (backslashes are kept).
std::string printable(std::string_view text);

// printable(), with every other non-ASCII character escaped too (\uNNNN, \UNNNNNNNN): for
// outputs whose strings are declared ASCII (HDF5), so that any reader's ASCII type reads them.
std::string printable_ascii(std::string_view text);

// Printable ASCII only (any other byte becomes '?'), at most max_len bytes: for short fields of an
// input that are never anything else (version strings, host names).
std::string ascii_only(std::string_view text, size_t max_len);

// At most max_bytes bytes: a longer value is cut before a UTF-8 character and ends in "...".
std::string clip(const std::string& value, size_t max_bytes);

// `s` as a JSON string literal (quotes included). JSON must be UTF-8: each byte that starts no
// valid sequence becomes U+FFFD; control characters and invisible_control ones become \uNNNN.
void append_json_string(std::string& out, std::string_view s);

}  // namespace common
