// The MPI peer benchmark: one source, compiled against Open MPI (mpicxx.openmpi) and
// against MPICH (mpicxx.mpich), launched by that MPI's mpirun. It runs one collective
// (fp32, sum where it reduces) over a list of sizes with bench_common.h's driver, so its
// sizes, bandwidths and checks mean what tutti-bench's mean.
//
//   mpirun -np 4 mpi_bench allreduce -s 8,1M,64M [-w 5] [-n 0 -t 0.3] [--label ompi]
//
// The buffers are allocated and touched before timing; out of place everywhere except
// MPI_Bcast, which has one buffer (the root broadcasts from its input buffer).

#include <mpi.h>

#include <cstdio>
#include <string>

#include "bench_common.h"

namespace {

using peers::Coll;
using peers::Counts;

// The driver's Backend over MPI_COMM_WORLD.
class MpiBackend {
 public:
  MpiBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

  double maxOverRanks(double value) { return reduce(value, MPI_MAX); }
  double sumOverRanks(double value) { return reduce(value, MPI_SUM); }

  float* prepare(Coll coll, const Counts& counts, float* send, float* recv, int root,
                 const std::string& /*algo: MPI chooses its own*/) {
    coll_ = coll;
    count_ = static_cast<int>(counts.param);
    send_ = send;
    recv_ = recv;
    root_ = root;
    // Broadcast's root keeps its data where it was written; everyone else receives.
    if (coll == Coll::kBroadcast && rank_ == root) return send;
    return recv;
  }

  void run() {
    switch (coll_) {
      case Coll::kAllReduce:
        MPI_Allreduce(send_, recv_, count_, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Coll::kAllGather:
        MPI_Allgather(send_, count_, MPI_FLOAT, recv_, count_, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case Coll::kReduceScatter:
        MPI_Reduce_scatter_block(send_, recv_, count_, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Coll::kBroadcast:
        MPI_Bcast(rank_ == root_ ? send_ : recv_, count_, MPI_FLOAT, root_, MPI_COMM_WORLD);
        break;
      case Coll::kReduce:
        MPI_Reduce(send_, recv_, count_, MPI_FLOAT, MPI_SUM, root_, MPI_COMM_WORLD);
        break;
      case Coll::kGather:
        MPI_Gather(send_, count_, MPI_FLOAT, recv_, count_, MPI_FLOAT, root_, MPI_COMM_WORLD);
        break;
      case Coll::kScatter:
        MPI_Scatter(send_, count_, MPI_FLOAT, recv_, count_, MPI_FLOAT, root_, MPI_COMM_WORLD);
        break;
      case Coll::kAllToAll:
        MPI_Alltoall(send_, count_, MPI_FLOAT, recv_, count_, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    }
  }

  void release() {}

 private:
  double reduce(double value, MPI_Op op) {
    double out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
    return out;
  }

  int rank_ = 0;
  int size_ = 1;
  Coll coll_ = Coll::kAllReduce;
  int count_ = 0;
  float* send_ = nullptr;
  float* recv_ = nullptr;
  int root_ = 0;
};

void usage(const char* program) {
  std::fprintf(stderr,
               "usage: mpirun -np N %s COLLECTIVE -s SIZES [flags]\n"
               "COLLECTIVE: allreduce allgather reducescatter broadcast reduce gather scatter "
               "alltoall\n%s",
               program, peers::commonUsage());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  peers::Options options;
  bool haveColl = false;
  for (int i = 1; i < argc; ++i) {
    if (peers::parseCommonFlag(argc, argv, &i, &options)) continue;
    const std::optional<Coll> coll = peers::parseColl(argv[i]);
    if (haveColl || !coll) {
      usage(argv[0]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    options.coll = *coll;
    haveColl = true;
  }
  MpiBackend backend;
  if (!haveColl || options.sizes.empty() || options.root >= backend.size()) {
    if (backend.rank() == 0) usage(argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (backend.rank() == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    // First line only: MPICH's string runs over several.
    std::string first(version, static_cast<std::size_t>(length));
    first = first.substr(0, first.find('\n'));
    std::printf("# %s on %d ranks: %s\n", options.label.c_str(), backend.size(), first.c_str());
  }
  const std::int64_t wrong = peers::runSizes(backend, options);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
