// An installed tutti's C++ API, from a separate project: every rank all-reduces
// rank + i and checks every element against the sum it computes itself.
#include <cstdio>
#include <vector>

#include <tutti/tutti.hpp>

int main() {
  auto comm = tutti::Communicator::fromEnv();
  if (!comm.ok()) {
    std::fprintf(stderr, "fromEnv: %s\n", comm.status().toString().c_str());
    return 1;
  }
  const int rank = comm->rank(), size = comm->size();
  std::vector<std::int64_t> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = rank + static_cast<std::int64_t>(i);
  tutti::Status s = comm->allreduce(v.data(), v.data(), v.size(), tutti::DataType::kInt64,
                                    tutti::ReduceOp::kSum);
  if (!s.ok()) {
    std::fprintf(stderr, "allreduce: %s\n", s.toString().c_str());
    return 1;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::int64_t want = static_cast<std::int64_t>(size) * (size - 1) / 2 +
                              static_cast<std::int64_t>(i) * size;
    if (v[i] != want) {
      std::fprintf(stderr, "rank %d: element %zu is %lld, want %lld\n", rank, i,
                   static_cast<long long>(v[i]), static_cast<long long>(want));
      return 1;
    }
  }
  s = comm->destroy();
  if (!s.ok()) {
    std::fprintf(stderr, "destroy: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("consumer_cxx rank %d of %d: ok (tutti %s)\n", rank, size, tutti::versionString());
  return 0;
}
