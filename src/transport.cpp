#include "transport.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>

namespace straggler {
namespace {

class LocalTransport final : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> allgather(const std::string& mine) override { return {mine}; }
  std::vector<std::string> alltoall(const std::vector<std::string>& to_each) override { return {to_each.at(0)}; }
  std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }
  std::string broadcast(const std::string& blob, int) override { return blob; }
  void allreduce(std::span<double>, Op) override {}
  void allreduce(std::span<int64_t>, Op) override {}
  void allreduce(std::span<uint64_t>, Op) override {}
  void barrier() override {}
};

std::vector<std::string> split(const std::vector<char>& all, const std::vector<int>& sizes) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (int s : sizes) {
    out.emplace_back(all.data() + pos, size_t(s));
    pos += size_t(s);
  }
  return out;
}

// MPI counts are int: callers keep each exchange under 2 GiB (records go in rounds).
int count_of(size_t n) {
  if (n > size_t(INT_MAX)) throw std::runtime_error("exchange: a record blob over 2 GiB");
  return int(n);
}

std::vector<int> displacements(const std::vector<int>& sizes, size_t* total) {
  std::vector<int> d(sizes.size());
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) d[i] = count_of(size_t(sum)), sum += sizes[i];
  *total = size_t(count_of(size_t(sum)));
  return d;
}

MPI_Op mpi_op(Transport::Op op) {
  return op == Transport::Op::Sum ? MPI_SUM : op == Transport::Op::Max ? MPI_MAX : MPI_MIN;
}

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &me_);
    MPI_Comm_size(comm, &n_);
  }
  int rank() const override { return me_; }
  int size() const override { return n_; }
  const MPI_Comm* mpi_comm() const override { return &comm_; }

  std::vector<std::string> allgather(const std::string& mine) override {
    int my = count_of(mine.size());
    std::vector<int> sizes(static_cast<size_t>(n_));
    MPI_Allgather(&my, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_);
    size_t total = 0;
    auto displ = displacements(sizes, &total);
    std::vector<char> all(total + 1);
    MPI_Allgatherv(mine.data(), my, MPI_CHAR, all.data(), sizes.data(), displ.data(), MPI_CHAR, comm_);
    return split(all, sizes);
  }

  std::vector<std::string> alltoall(const std::vector<std::string>& to_each) override {
    std::vector<int> send_sizes(static_cast<size_t>(n_)), recv_sizes(static_cast<size_t>(n_));
    for (int i = 0; i < n_; ++i) send_sizes[size_t(i)] = count_of(to_each.at(size_t(i)).size());
    MPI_Alltoall(send_sizes.data(), 1, MPI_INT, recv_sizes.data(), 1, MPI_INT, comm_);
    size_t send_total = 0, recv_total = 0;
    auto sdispl = displacements(send_sizes, &send_total), rdispl = displacements(recv_sizes, &recv_total);
    std::vector<char> send(send_total + 1), recv(recv_total + 1);
    for (int i = 0; i < n_; ++i)
      std::copy(to_each[size_t(i)].begin(), to_each[size_t(i)].end(), send.begin() + sdispl[size_t(i)]);
    MPI_Alltoallv(send.data(), send_sizes.data(), sdispl.data(), MPI_CHAR, recv.data(), recv_sizes.data(),
                  rdispl.data(), MPI_CHAR, comm_);
    return split(recv, recv_sizes);
  }

  std::vector<std::string> gather(const std::string& mine, int root) override {
    int my = count_of(mine.size());
    std::vector<int> sizes(static_cast<size_t>(n_));
    MPI_Gather(&my, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm_);
    size_t total = 0;
    std::vector<int> displ = me_ == root ? displacements(sizes, &total) : std::vector<int>(static_cast<size_t>(n_));
    std::vector<char> all(total + 1);
    MPI_Gatherv(mine.data(), my, MPI_CHAR, all.data(), sizes.data(), displ.data(), MPI_CHAR, root, comm_);
    return me_ == root ? split(all, sizes) : std::vector<std::string>{};
  }

  std::string broadcast(const std::string& blob, int root) override {
    uint64_t n = blob.size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm_);
    std::string out = me_ == root ? blob : std::string(size_t(n), '\0');
    MPI_Bcast(out.data(), count_of(size_t(n)), MPI_CHAR, root, comm_);
    return out;
  }

  void allreduce(std::span<double> v, Op op) override { reduce(v.data(), v.size(), MPI_DOUBLE, op); }
  void allreduce(std::span<int64_t> v, Op op) override { reduce(v.data(), v.size(), MPI_INT64_T, op); }
  void allreduce(std::span<uint64_t> v, Op op) override { reduce(v.data(), v.size(), MPI_UINT64_T, op); }
  void barrier() override { MPI_Barrier(comm_); }

 private:
  void reduce(void* data, size_t n, MPI_Datatype type, Op op) {
    if (n > 0) MPI_Allreduce(MPI_IN_PLACE, data, count_of(n), type, mpi_op(op), comm_);
  }
  MPI_Comm comm_;
  int me_ = 0, n_ = 1;
};

const char* const kRankVariables[] = {
    "OMPI_COMM_WORLD_RANK",  // Open MPI mpirun
    "PMIX_RANK",             // PMIx launchers (Open MPI 4/5, srun --mpi=pmix)
    "PMI_RANK",              // MPICH/Intel MPI hydra, srun --mpi=pmi2
    "MV2_COMM_WORLD_RANK",   // MVAPICH
};

}  // namespace

std::unique_ptr<Transport> local_transport() { return std::make_unique<LocalTransport>(); }
std::unique_ptr<Transport> mpi_transport(MPI_Comm comm) { return std::make_unique<MpiTransport>(comm); }

bool started_by_mpi_launcher() {
  for (const char* v : kRankVariables)
    if (std::getenv(v)) return true;
  return false;
}

int launcher_rank() {
  for (const char* v : kRankVariables)
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

}  // namespace straggler
