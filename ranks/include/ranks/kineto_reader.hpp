// Reader of PyTorch profiler (Kineto) Chrome-trace JSON, .json or gzip-compressed .json.gz, streamed
// in bounded memory (ranks/readers/json_stream.hpp). What real traces hold and which fields are read:
// section 6 of the export notes in ../shared/docs; docs/kineto.md.
#pragma once
#include <string>
#include <vector>

#include "ranks/profile_reader.hpp"
#include "ranks/timeline.hpp"

namespace ranks {

// The rank process of one trace (a trace is one process). Its rank is the one the file claims
// (distributedInfo.rank) in RankTimeline::claimed_rank; rank stays -1 (the caller assigns it).
// Throws ProfileError.
std::vector<RankTimeline> read_kineto(const std::string& path);

// Exact conversion of a JSON number of microseconds ("1694128201435418", "12.345", "-3.5e2") to
// integer nanoseconds, rounded half away from zero at the nanosecond: no binary floating point,
// so no drift on 16-digit epoch times. False for anything else or beyond +-2^62 ns.
bool parse_us_to_ns(std::string_view token, int64_t& ns);

ProfileFormat kineto_json_format();

}  // namespace ranks
