// Latency of reduce-scatterv with uneven blocks (tutti-bench has no v-collectives): every
// rank's input is `floats` float32 values (a little more: odd ranks' blocks hold one more),
// `iters` calls per repetition, five repetitions; rank 0 prints the median time per call
// in microseconds. An algorithm name forces it (e.g. direct); none takes the default.
// Alternate runs of the two when comparing them: these machines change speed between runs.
//
//   build/bin/tutti-run -n 4 build/bin/tutti-rsv-latency 256 2000 [algorithm]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tutti/communicator.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tutti-rsv-latency floats iters [algorithm]\n");
    return 2;
  }
  const std::size_t total = std::strtoull(argv[1], nullptr, 10);
  const int iters = std::max(1, std::atoi(argv[2]));
  tutti::CallOptions options;
  if (argc > 3) options.algorithm = argv[3];
  auto comm = tutti::Communicator::fromEnv();
  if (!comm.ok()) {
    std::fprintf(stderr, "tutti-rsv-latency: %s\n", comm.status().toString().c_str());
    return 1;
  }
  const int n = comm->size();
  const int me = comm->rank();
  std::vector<std::size_t> counts(static_cast<std::size_t>(n));
  std::size_t sum = 0;
  for (int r = 0; r < n; ++r) {
    counts[static_cast<std::size_t>(r)] = total / static_cast<std::size_t>(n) + (r % 2);
    sum += counts[static_cast<std::size_t>(r)];
  }
  std::vector<float> in(sum, 1.0f), out(counts[static_cast<std::size_t>(me)] + 1);
  std::vector<double> perCall;
  for (int rep = 0; rep < 5; ++rep) {
    if (tutti::Status s = comm->barrier(); !s.ok()) {
      std::fprintf(stderr, "tutti-rsv-latency: %s\n", s.toString().c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      tutti::Status s = comm->reduceScatterv(in.data(), out.data(), counts,
                                             tutti::DataType::kFloat32, tutti::ReduceOp::kSum,
                                             options);
      if (!s.ok()) {
        std::fprintf(stderr, "tutti-rsv-latency: %s\n", s.toString().c_str());
        return 1;
      }
    }
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    perCall.push_back(took.count() / iters);
  }
  std::sort(perCall.begin(), perCall.end());
  if (me == 0) std::printf("%.3f\n", perCall[perCall.size() / 2]);
  return 0;
}
