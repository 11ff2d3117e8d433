// How much CPU a rank burns while it waits in a collective for a late peer (issue 4's
// target: under 10% of a core once the spin budget is spent). Rank 0 (and every rank but
// the last) enters an 8-byte all-reduce at once; the last rank sleeps `seconds` first.
// Each waiting rank prints the CPU time its process used during the call against the
// wall time of the call. `async`: the call is allreduceAsync and a wait on its Work.
// tests/multiproc/blocked_cpu_test.cc holds the target.
//
//   build/bin/tutti-run -n 2 build/bin/tutti-blocked-cpu [seconds=2] [async]
//   build/bin/tutti-run -n 8 -x TUTTI_TRANSPORT=tcp build/bin/tutti-blocked-cpu

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tutti/communicator.h"

namespace {

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  const double late = argc > 1 ? std::atof(argv[1]) : 2.0;
  const bool async = argc > 2 && std::strcmp(argv[2], "async") == 0;
  auto comm = tutti::Communicator::fromEnv();
  if (!comm.ok()) {
    std::fprintf(stderr, "blocked-cpu: %s\n", comm.status().toString().c_str());
    return 1;
  }
  double x = 1.0, y = 0.0;
  // Warm up: connections and schedules are made before the measured call.
  tutti::Status warm = comm->allreduce(&x, &y, 1, tutti::DataType::kFloat64, tutti::ReduceOp::kSum);
  if (!warm.ok()) return 1;
  const bool lateRank = comm->rank() == comm->size() - 1;
  if (lateRank) std::this_thread::sleep_for(std::chrono::duration<double>(late));
  const double cpu0 = cpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  tutti::Status s =
      async ? comm->allreduceAsync(&x, &y, 1, tutti::DataType::kFloat64, tutti::ReduceOp::kSum).wait()
            : comm->allreduce(&x, &y, 1, tutti::DataType::kFloat64, tutti::ReduceOp::kSum);
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall0;
  const double cpu = cpuSeconds() - cpu0;
  if (!s.ok()) {
    std::fprintf(stderr, "blocked-cpu: %s\n", s.toString().c_str());
    return 1;
  }
  if (!lateRank) {
    std::printf("rank %d waited %.3f s in allreduce using %.3f s of CPU: %.1f%% of a core\n",
                comm->rank(), wall.count(), cpu, 100.0 * cpu / wall.count());
  }
  return y == comm->size() ? 0 : 1;
}
