#include "exchange.hpp"

#include <algorithm>

namespace straggler {
namespace {

std::vector<std::string> split(const std::vector<char>& all, const std::vector<int>& sizes) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (int s : sizes) {
    out.emplace_back(all.data() + pos, size_t(s));
    pos += size_t(s);
  }
  return out;
}

std::vector<int> displacements(const std::vector<int>& sizes, size_t* total) {
  std::vector<int> d(sizes.size());
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    d[i] = int(sum);
    sum += sizes[i];
  }
  if (sum > INT32_MAX) throw std::runtime_error("exchange: more than 2 GiB of result records");
  *total = size_t(sum);
  return d;
}

}  // namespace

std::vector<std::string> allgather_blobs(MPI_Comm comm, const std::string& mine) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  if (mine.size() > size_t(INT32_MAX)) throw std::runtime_error("exchange: record too large");
  int my = int(mine.size());
  std::vector<int> sizes(static_cast<size_t>(n));
  MPI_Allgather(&my, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm);
  size_t total = 0;
  auto displ = displacements(sizes, &total);
  std::vector<char> all(total + 1);
  MPI_Allgatherv(mine.data(), my, MPI_CHAR, all.data(), sizes.data(), displ.data(), MPI_CHAR, comm);
  return split(all, sizes);
}

std::vector<std::string> alltoall_blobs(MPI_Comm comm, const std::vector<std::string>& to_each) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<int> send_sizes(static_cast<size_t>(n)), recv_sizes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (to_each[size_t(i)].size() > size_t(INT32_MAX)) throw std::runtime_error("exchange: record too large");
    send_sizes[size_t(i)] = int(to_each[size_t(i)].size());
  }
  MPI_Alltoall(send_sizes.data(), 1, MPI_INT, recv_sizes.data(), 1, MPI_INT, comm);
  size_t send_total = 0, recv_total = 0;
  auto sdispl = displacements(send_sizes, &send_total), rdispl = displacements(recv_sizes, &recv_total);
  std::vector<char> send(send_total + 1), recv(recv_total + 1);
  for (int i = 0; i < n; ++i) std::copy(to_each[size_t(i)].begin(), to_each[size_t(i)].end(), send.begin() + sdispl[size_t(i)]);
  MPI_Alltoallv(send.data(), send_sizes.data(), sdispl.data(), MPI_CHAR, recv.data(), recv_sizes.data(), rdispl.data(),
                MPI_CHAR, comm);
  return split(recv, recv_sizes);
}

std::vector<std::string> gather_blobs(MPI_Comm comm, const std::string& mine, int root) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  int my = int(mine.size());
  std::vector<int> sizes(static_cast<size_t>(n));
  MPI_Gather(&my, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm);
  size_t total = 0;
  std::vector<int> displ = me == root ? displacements(sizes, &total) : std::vector<int>(static_cast<size_t>(n));
  std::vector<char> all(total + 1);
  MPI_Gatherv(mine.data(), my, MPI_CHAR, all.data(), sizes.data(), displ.data(), MPI_CHAR, root, comm);
  return me == root ? split(all, sizes) : std::vector<std::string>{};
}

}  // namespace straggler
