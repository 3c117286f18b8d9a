// Streams one JSON object `{"key": value, ...}` of any size in bounded memory: the elements of one
// array member (Kineto's "traceEvents") are handed over one at a time, each as a view that
// simdjson's On-Demand parser can take without a copy (SIMDJSON_PADDING readable bytes after it);
// the other members are handed over whole when wanted, else skipped unread. Only the structure is
// checked here (strings, nesting); each element's own syntax is its parser's business.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/input_stream.hpp"

namespace ranks::detail {

struct JsonStreamLimits {
  size_t max_element = size_t(64) << 20;  // larger elements are skipped (counted), never buffered
  size_t max_member = size_t(64) << 20;   // larger wanted members are skipped too
};

struct JsonStreamCallbacks {
  std::string_view array_key;                                            // "traceEvents"
  std::function<bool(std::string_view key)> want;                        // other members to read
  std::function<void(std::string_view key, std::string_view raw)> member;  // raw text, padded
  std::function<void(std::string_view element)> element;                // padded view
};

struct JsonStreamCounts {
  size_t elements = 0;          // elements handed over
  size_t skipped_elements = 0;  // over max_element
  std::vector<std::string> skipped_members;  // wanted, but over max_member
  bool saw_array = false;       // the array member was present (and an array)
};

// Throws ProfileError naming the file: not a JSON object, the array member not an array, a string
// or nesting cut off by the end of the file (with the byte offset and elements read so far).
JsonStreamCounts stream_json_object(InputStream& in, const JsonStreamCallbacks& cb, const JsonStreamLimits& limits = {});

}  // namespace ranks::detail
