// The readers built into straggler-scan: one registration line each.
#include "ranks/kineto_reader.hpp"
#include "ranks/nsys_reader.hpp"
#include "ranks/profile_reader.hpp"

namespace ranks {

void register_builtin_formats(std::vector<ProfileFormat>& out) {
  out.push_back(nsys_sqlite_format());
  out.push_back(kineto_json_format());
}

}  // namespace ranks
