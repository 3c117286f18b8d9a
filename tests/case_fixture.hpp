// Shared by the table-driven tests (tests/cases/README.md): JSON case files, one GTest each.
#pragma once
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "collectives/nccl_kernel.hpp"

namespace cases {

using simdjson::dom::element;

// The case files of one folder under tests/cases, sorted.
inline std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(SS_CASES_DIR) + "/" + folder))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// GTest names: the file's stem, with what GTest does not accept replaced.
inline std::string test_name(const std::string& path) {
  std::string s = std::filesystem::path(path).stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

inline bool has(element e, const char* key) { return e.is_object() && !e[key].error(); }
inline double num(element e) { return e.is_int64() ? double(int64_t(e)) : double(e); }
inline double num_or(element e, const char* key, double fallback) { return has(e, key) ? num(e[key]) : fallback; }
inline std::string str_or(element e, const char* key, const std::string& fallback) {
  return has(e, key) ? std::string(std::string_view(e[key])) : fallback;
}

inline std::vector<int> ints(element e) {
  std::vector<int> out;
  for (element x : e.get_array()) out.push_back(int(int64_t(x)));
  return out;
}
inline std::vector<std::string> strings(element e) {
  std::vector<std::string> out;
  for (element x : e.get_array()) out.push_back(std::string(std::string_view(x)));
  return out;
}

inline collectives::CollectiveType collective_type(const std::string& name) {
  for (int t = 0; t <= int(collectives::CollectiveType::Unknown); ++t)
    if (name == collectives::collective_name(collectives::CollectiveType(t))) return collectives::CollectiveType(t);
  ADD_FAILURE() << "unknown collective type " << name;
  return collectives::CollectiveType::Unknown;
}

// Deterministic noise in [-1, 1): the same in every run and on every machine (no <random>
// distributions, whose output is implementation-defined).
inline double noise(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^ c * 0x94D049BB133111EBull;
  x ^= x >> 31, x *= 0xD6E8FEB86659FD93ull, x ^= x >> 32;
  return double(x % 2000001) / 1e6 - 1.0;
}

}  // namespace cases
