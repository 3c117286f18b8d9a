// Connected groups of keys (union-find with path compression): the ranks a job's communicators
// tie together, the pipelines its p2p links chain. One definition for every place that groups.
#pragma once
#include <map>

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

}  // namespace common
