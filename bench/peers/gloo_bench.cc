// The Gloo peer benchmark: forks N ranks, which meet through a gloo FileStore in a fresh
// directory and connect a full mesh over Gloo's TCP device on 127.0.0.1 (Gloo has no
// shared-memory transport), then run one collective (fp32, sum where it reduces) over a
// list of sizes with bench_common.h's driver, so its rows mean what tutti-bench's mean.
//
//   gloo_bench allreduce -np 4 -s 8,1M,64M [-a ring_chunked,halving_doubling] [--label gloo]
//
// One rank alone, for ranks on several hosts (bench/peers/multihost.sh starts one per rank in
// each host's network namespace): --rank R with --store DIR, a directory every rank sees
// (made by the caller, left for it to remove), and --addr, the address of this rank's host
// that Gloo's TCP device binds and the others connect to:
//
//   gloo_bench allreduce -np 4 --rank 2 --store /tmp/dir --addr 10.77.0.2 -s 64M
//
// All-reduce runs each algorithm of -a in turn, one result line each:
//   ring, ring_chunked, halving_doubling, bcube  Gloo's algorithm classes, in place (as
//                                                 a user of those classes runs them)
//   opt_ring, opt_bcube                          gloo::allreduce() with AllreduceOptions
//                                                 (the API PyTorch's ProcessGroupGloo
//                                                 calls), out of place
// Reduce-scatter is ReduceScatterHalvingDoubling (in place: the rank's block lands at the
// start of its buffer); all-gather, broadcast, reduce, gather, scatter and all-to-all are
// the options API, out of place. Options objects and algorithm instances are built once per
// size and reused by every call, the cheapest way a user can drive Gloo.

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include "bench_common.h"

namespace {

using peers::Coll;
using peers::Counts;

// Set by SIGTERM / SIGINT (timeout(1) ending the run): the launcher stops its ranks and
// removes the store directory instead of leaving both behind.
volatile sig_atomic_t gStopRequested = 0;

void requestStop(int) { gStopRequested = 1; }

// Tags keep the driver's own small all-reduces apart from the measured calls.
constexpr uint32_t kCallTag = 1;
constexpr uint32_t kStatsTag = 2;
constexpr uint32_t kBarrierTag = 3;

// A reduction function for gloo's options API (element type fixed by the template).
template <typename T>
gloo::AllreduceOptions::Func sumOf() {
  return [](void* c, const void* a, const void* b, size_t n) { gloo::sum<T>(c, a, b, n); };
}

// The driver's Backend over one gloo context.
class GlooBackend {
 public:
  explicit GlooBackend(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}

  int rank() const { return context_->rank; }
  int size() const { return context_->size; }

  void barrier() {
    gloo::BarrierOptions options(context_);
    options.setTag(kBarrierTag);
    gloo::barrier(options);
  }

  double maxOverRanks(double value) {
    return reduce(value, [](void* c, const void* a, const void* b, size_t n) {
      gloo::max<double>(c, a, b, n);
    });
  }
  double sumOverRanks(double value) { return reduce(value, sumOf<double>()); }

  float* prepare(Coll coll, const Counts& counts, float* send, float* recv, int root,
                 const std::string& algo) {
    const auto k = counts.param;
    const int n = size();
    switch (coll) {
      case Coll::kAllReduce: return prepareAllReduce(k, send, recv, algo);
      case Coll::kReduceScatter: {
        const std::vector<int> blocks(static_cast<std::size_t>(n), static_cast<int>(k));
        algorithm_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
            context_, std::vector<float*>{send}, static_cast<int>(k) * n, blocks);
        call_ = [this] { algorithm_->run(); };
        return send;
      }
      case Coll::kAllGather: {
        auto options = std::make_shared<gloo::AllgatherOptions>(context_);
        options->setInput(send, k);
        options->setOutput(recv, k * static_cast<std::size_t>(n));
        options->setTag(kCallTag);
        call_ = [options] { gloo::allgather(*options); };
        return recv;
      }
      case Coll::kBroadcast: {
        auto options = std::make_shared<gloo::BroadcastOptions>(context_);
        if (rank() == root) options->setInput(send, k);
        options->setOutput(recv, k);
        options->setRoot(root);
        options->setTag(kCallTag);
        call_ = [options] { gloo::broadcast(*options); };
        return recv;
      }
      case Coll::kReduce: {
        auto options = std::make_shared<gloo::ReduceOptions>(context_);
        options->setInput(send, k);
        options->setOutput(recv, k);
        options->setRoot(root);
        options->setReduceFunction(sumOf<float>());
        options->setTag(kCallTag);
        call_ = [options] { gloo::reduce(*options); };
        return recv;
      }
      case Coll::kGather: {
        auto options = std::make_shared<gloo::GatherOptions>(context_);
        options->setInput(send, k);
        if (rank() == root) options->setOutput(recv, k * static_cast<std::size_t>(n));
        options->setRoot(root);
        options->setTag(kCallTag);
        call_ = [options] { gloo::gather(*options); };
        return recv;
      }
      case Coll::kScatter: {
        auto options = std::make_shared<gloo::ScatterOptions>(context_);
        if (rank() == root) {
          std::vector<float*> blocks;
          for (int b = 0; b < n; ++b) blocks.push_back(send + static_cast<std::size_t>(b) * k);
          options->setInputs(blocks, k);
        }
        options->setOutput(recv, k);
        options->setRoot(root);
        options->setTag(kCallTag);
        call_ = [options] { gloo::scatter(*options); };
        return recv;
      }
      case Coll::kAllToAll: {
        auto options = std::make_shared<gloo::AlltoallOptions>(context_);
        options->setInput(send, k * static_cast<std::size_t>(n));
        options->setOutput(recv, k * static_cast<std::size_t>(n));
        options->setTag(kCallTag);
        call_ = [options] { gloo::alltoall(*options); };
        return recv;
      }
    }
    throw std::runtime_error("unknown collective");
  }

  void run() { call_(); }

  void release() {
    call_ = nullptr;
    algorithm_.reset();
  }

 private:
  float* prepareAllReduce(std::size_t k, float* send, float* recv, const std::string& algo) {
    const std::vector<float*> buffers{send};
    const int count = static_cast<int>(k);
    if (algo == "ring") {
      algorithm_ = std::make_unique<gloo::AllreduceRing<float>>(context_, buffers, count);
    } else if (algo == "ring_chunked") {
      algorithm_ = std::make_unique<gloo::AllreduceRingChunked<float>>(context_, buffers, count);
    } else if (algo == "halving_doubling") {
      algorithm_ =
          std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context_, buffers, count);
    } else if (algo == "bcube") {
      algorithm_ = std::make_unique<gloo::AllreduceBcube<float>>(context_, buffers, count);
    } else if (algo == "opt_ring" || algo == "opt_bcube") {
      auto options = std::make_shared<gloo::AllreduceOptions>(context_);
      options->setInput(send, k);
      options->setOutput(recv, k);
      options->setReduceFunction(sumOf<float>());
      options->setAlgorithm(algo == "opt_ring" ? gloo::AllreduceOptions::Algorithm::RING
                                               : gloo::AllreduceOptions::Algorithm::BCUBE);
      options->setTag(kCallTag);
      call_ = [options] { gloo::allreduce(*options); };
      return recv;
    } else {
      throw std::runtime_error("unknown all-reduce algorithm '" + algo +
                               "' (ring ring_chunked halving_doubling bcube opt_ring opt_bcube)");
    }
    call_ = [this] { algorithm_->run(); };
    return send;
  }

  double reduce(double value, gloo::AllreduceOptions::Func fn) {
    double out = 0;
    gloo::AllreduceOptions options(context_);
    options.setInput(&value, 1);
    options.setOutput(&out, 1);
    options.setReduceFunction(std::move(fn));
    options.setTag(kStatsTag);
    gloo::allreduce(options);
    return out;
  }

  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<gloo::Algorithm> algorithm_;
  std::function<void()> call_;
};

// One rank's life: rendezvous, the sizes, the exit status (0: every output right).
int runRank(int rank, int nranks, const std::string& storeDir, int timeoutSeconds,
            const std::string& address, const peers::Options& options) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;  // 127.0.0.1 (loopback only) unless --addr; IPv4
    attr.ai_family = AF_INET;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(storeDir);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(std::chrono::seconds(timeoutSeconds));
    context->connectFullMesh(store, device);
    if (rank == 0) {
      std::printf("# %s on %d ranks: Gloo (libgloo-dev), TCP device on %s\n",
                  options.label.c_str(), nranks, address.c_str());
    }
    GlooBackend backend(context);
    return peers::runSizes(backend, options) == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "[rank %d] gloo_bench: %s\n", rank, error.what());
    return 3;
  }
}

// Waits for every child until `deadline`; on the first failure or at the deadline the
// others are killed (a rank stuck waiting for a dead peer must not outlive the run).
int waitChildren(std::vector<pid_t>& children, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  std::size_t left = children.size();
  auto killAll = [&] {
    for (pid_t pid : children) {
      if (pid > 0) kill(pid, SIGKILL);
    }
  };
  while (left > 0) {
    int childStatus = 0;
    const pid_t pid = waitpid(-1, &childStatus, WNOHANG);
    if (pid > 0) {
      for (pid_t& child : children) {
        if (child == pid) child = -1;
      }
      --left;
      const bool ok = WIFEXITED(childStatus) && WEXITSTATUS(childStatus) == 0;
      if (!ok && status == 0) {
        status = WIFEXITED(childStatus) ? WEXITSTATUS(childStatus) : 4;
        killAll();
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (gStopRequested) {
      std::fprintf(stderr, "gloo_bench: stopped by a signal, ranks killed\n");
      killAll();
      status = 6;
      gStopRequested = 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "gloo_bench: ranks still running at the deadline, killed\n");
      killAll();
      status = 5;
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

void usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s COLLECTIVE -np N -s SIZES [flags]\n"
               "COLLECTIVE: allreduce allgather reducescatter broadcast reduce gather scatter "
               "alltoall\n"
               "  -np N              ranks to fork (2)\n"
               "  -a LIST            all-reduce algorithms, comma separated (ring,ring_chunked,"
               "halving_doubling,bcube,opt_ring)\n"
               "  --timeout SECONDS  Gloo's timeout and the whole run's deadline (300)\n"
               "  --rank R --store DIR [--addr ADDR]\n"
               "                     run rank R alone (no fork), meeting the others in DIR, its\n"
               "                     TCP device on ADDR (127.0.0.1)\n%s",
               program, peers::commonUsage());
}

}  // namespace

int main(int argc, char** argv) {
  peers::Options options;
  options.label = "gloo";
  int nranks = 2;
  int timeoutSeconds = 300;
  int onlyRank = -1;
  std::string store;
  std::string address = "127.0.0.1";
  bool haveColl = false;
  std::string algos = "ring,ring_chunked,halving_doubling,bcube,opt_ring";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (peers::parseCommonFlag(argc, argv, &i, &options)) continue;
    if ((arg == "-np" || arg == "-a" || arg == "--timeout" || arg == "--rank" ||
         arg == "--store" || arg == "--addr") &&
        i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--rank") onlyRank = std::atoi(value.c_str());
      if (arg == "--store") store = value;
      if (arg == "--addr") address = value;
      if (arg == "-np") nranks = std::atoi(value.c_str());
      if (arg == "-a") algos = value;
      if (arg == "--timeout") timeoutSeconds = std::atoi(value.c_str());
      continue;
    }
    const std::optional<Coll> coll = peers::parseColl(arg);
    if (haveColl || !coll) {
      usage(argv[0]);
      return 2;
    }
    options.coll = *coll;
    haveColl = true;
  }
  if (!haveColl || options.sizes.empty() || nranks < 1 || nranks > 255 || timeoutSeconds < 1 ||
      options.root >= nranks || onlyRank >= nranks || (onlyRank >= 0) != !store.empty()) {
    usage(argv[0]);
    return 2;
  }
  options.algos = std::vector<std::string>{""};
  if (options.coll == Coll::kAllReduce) {
    options.algos.clear();
    for (const std::string& algo : peers::splitList(algos)) {
      // The bcube class (base 2) sums wrongly unless the world is a power of two: measured
      // here, not documented in its header; opt_bcube has no such limit.
      if (algo == "bcube" && (nranks & (nranks - 1)) != 0) {
        std::printf("# bcube skipped: it needs a power-of-two world, not %d ranks\n", nranks);
        continue;
      }
      options.algos.push_back(algo);
    }
    if (options.algos.empty()) return 0;  // nothing that applies: not a failure
  }
  if (onlyRank >= 0) return runRank(onlyRank, nranks, store, timeoutSeconds, address, options);

  char dirTemplate[] = "/tmp/gloo_bench.XXXXXX";
  if (mkdtemp(dirTemplate) == nullptr) {
    std::perror("gloo_bench: mkdtemp");
    return 1;
  }
  const std::string storeDir = dirTemplate;
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < nranks; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("gloo_bench: fork");
      for (pid_t child : children) kill(child, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      // A rank dies with the launcher rather than lingering.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int code = runRank(rank, nranks, storeDir, timeoutSeconds, address, options);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    children.push_back(pid);
  }
  struct sigaction action = {};
  action.sa_handler = requestStop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  const int status = waitChildren(children, deadline);
  std::error_code ignored;
  std::filesystem::remove_all(storeDir, ignored);
  return status;
}
