// Connected groups of keys (union-find with path compression): the ranks a job's communicators
// tie together, the pipelines its p2p links chain, the streams of a family that move in lock step.
// One definition for every place that groups.
#pragma once
#include <cstddef>
#include <map>
#include <numeric>
#include <vector>

namespace common {

template <class Key>
class Groups {
 public:
  void add(Key k) { parent_.emplace(k, k); }
  bool has(Key k) const { return parent_.count(k) > 0; }
  // The group's representative (`k` must have been added).
  Key find(Key k) {
    Key& p = parent_.at(k);  // std::map: references stay valid while the recursion compresses
    return p == k ? k : p = find(p);
  }
  void join(Key a, Key b) { parent_[find(a)] = find(b); }

 private:
  std::map<Key, Key> parent_;
};

// The same over the keys 0..n-1, in one array (a family of 100k streams: a map node per key, and
// recursion as deep as a chain, were the cost).
class IndexGroups {
 public:
  explicit IndexGroups(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t(0)); }
  size_t find(size_t k) {
    while (parent_[k] != k) k = parent_[k] = parent_[parent_[k]];  // path halving
    return k;
  }
  void join(size_t a, size_t b) { parent_[find(a)] = find(b); }

 private:
  std::vector<size_t> parent_;
};

}  // namespace common
