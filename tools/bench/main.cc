// tutti-bench: nccl-tests style benchmark of tutti's collectives, with every result
// checked. Run one process per rank, e.g.
//   tutti-run -n 4 tutti-bench allreduce -b 8 -e 16M -f 4 -c 1 --json r.json
// Exit status: 0 when every call succeeded and every checked element was right; 1 when a
// call failed or an element was wrong; 2 for a bad command line.

#include <cstdio>

#include "bench/options.h"
#include "bench/runner.h"
#include "bench/tutti_comm.h"
#include "tutti/communicator.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
  using namespace tutti;
  using namespace tutti::bench;
  // Parsed before joining the group, so a typo fails at once instead of after rendezvous.
  Result<ParsedArgs> parsed = parseArgs(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "tutti-bench: %s\nRun 'tutti-bench --help' for the flags.\n",
                 parsed.status().message().c_str());
    return kExitUsage;
  }
  if (parsed->helpRequested) {
    std::fputs(parsed->helpText.c_str(), stdout);
    return 0;
  }
  const BenchOptions& options = parsed->options;
  Result<Communicator> comm = Communicator::fromEnv();
  if (!comm.ok()) {
    std::fprintf(stderr, "tutti-bench: cannot join the group: %s\n",
                 comm.status().toString().c_str());
    return kExitFailure;
  }
  TuttiComm benchComm(*comm);
  benchComm.setSharedBuffers(options.registerBuffers == 1);
  benchComm.setAsync(options.async == 1);
  benchComm.setComputeNs(static_cast<std::int64_t>(options.computeUs * 1000));
  Result<RunSummary> summary = runBenchmark(benchComm, options, stdout);
  if (!summary.ok()) {
    // Every rank reports its own error: the first failure names the rank at fault.
    std::fprintf(stderr, "tutti-bench: rank %d: %s\n", comm->rank(),
                 summary.status().toString().c_str());
    return kExitFailure;
  }
  if (summary->wrong != 0) {
    if (comm->rank() == 0) {
      std::fprintf(stderr, "tutti-bench: %lld wrong elements\n",
                   static_cast<long long>(summary->wrong));
    }
    return kExitFailure;
  }
  return 0;
}
