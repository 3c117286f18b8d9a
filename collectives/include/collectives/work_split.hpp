// Work split over the job's processes (issue 24): each process does its share of a list of
// independent items and every process gets everyone's results. collectives/ knows no transport:
// src/ passes the allgather. One process (the default): everything here, nothing exchanged.
#pragma once
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace collectives {

struct WorkSplit {
  int index = 0, count = 1;
  // Every process's blob, in process order (collective: all processes call it together).
  std::function<std::vector<std::string>(const std::string&)> allgather;

  bool split() const { return count > 1 && allgather; }
  // Item k of a list every process holds alike is this process's.
  bool mine(size_t k) const { return !split() || int(k % size_t(count)) == index; }
  // Everyone's results, concatenated in process order (callers that need an order sort them).
  template <class T>
  std::vector<T> gather(const std::vector<T>& mine) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!split()) return mine;
    std::string blob(mine.size() * sizeof(T), '\0');
    if (!mine.empty()) std::memcpy(blob.data(), mine.data(), blob.size());
    std::vector<T> all;
    for (const auto& b : allgather(blob)) {
      const size_t n = b.size() / sizeof(T), at = all.size();
      all.resize(at + n);
      if (n) std::memcpy(static_cast<void*>(all.data() + at), b.data(), n * sizeof(T));
    }
    return all;
  }
};

}  // namespace collectives
