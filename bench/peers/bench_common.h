#pragma once
// What the peer benchmarks (mpi_bench.cc, gloo_bench.cc) share: the collectives' names,
// nccl-tests' size convention and bus-bandwidth factors (the same rules as tutti-bench's
// tools/bench/collectives.cc, so a row here and a row of tutti-bench at the same size move
// the same bytes), input values with an independent expectation for every output element,
// and the driver that warms up, times and checks one collective over a list of sizes.
//
// These programs are measuring instruments outside the library: they link no tutti code,
// and a peer's failure ends the process (MPI aborts, Gloo throws), which is what a
// benchmark script wants. The driver is a template over a Backend:
//
//   int rank() const; int size() const;
//   void barrier();
//   double maxOverRanks(double); double sumOverRanks(double);
//   // Prepares one call of `coll` on these buffers; returns where its output will be
//   // (recv, or send for an in-place peer API).
//   float* prepare(Coll, const Counts&, float* send, float* recv, int root,
//                  const std::string& algo);
//   void run();            // one call as prepared, blocking until it completed here
//   void release();        // drops what prepare() made, before the buffers go

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peers {

/// The collectives a peer benchmark can run (a subset per peer: Gloo has no reduce-scatter
/// with nccl-tests' layout other than its halving-doubling class, see gloo_bench.cc).
enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kGather, kScatter,
                  kAllToAll };

/// The canonical name, as tutti-bench prints it.
inline const char* collName(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce: return "allreduce";
    case Coll::kAllGather: return "allgather";
    case Coll::kReduceScatter: return "reducescatter";
    case Coll::kBroadcast: return "broadcast";
    case Coll::kReduce: return "reduce";
    case Coll::kGather: return "gather";
    case Coll::kScatter: return "scatter";
    case Coll::kAllToAll: return "alltoall";
  }
  return "?";
}

/// The collective named `name` (tutti-bench's names and aliases), or nothing.
inline std::optional<Coll> parseColl(std::string_view name) {
  struct Alias { const char* name; Coll coll; };
  static const Alias kAliases[] = {
      {"allreduce", Coll::kAllReduce},         {"all_reduce", Coll::kAllReduce},
      {"all-reduce", Coll::kAllReduce},        {"allgather", Coll::kAllGather},
      {"all_gather", Coll::kAllGather},        {"all-gather", Coll::kAllGather},
      {"reducescatter", Coll::kReduceScatter}, {"reduce_scatter", Coll::kReduceScatter},
      {"reduce-scatter", Coll::kReduceScatter}, {"broadcast", Coll::kBroadcast},
      {"bcast", Coll::kBroadcast},             {"reduce", Coll::kReduce},
      {"gather", Coll::kGather},               {"scatter", Coll::kScatter},
      {"alltoall", Coll::kAllToAll},           {"all_to_all", Coll::kAllToAll},
      {"all-to-all", Coll::kAllToAll},
  };
  for (const Alias& alias : kAliases) {
    if (name == alias.name) return alias.coll;
  }
  return std::nullopt;
}

/// Whether the collective reduces (its inputs are reductionValue(), not movementValue()).
inline bool reduces(Coll coll) {
  return coll == Coll::kAllReduce || coll == Coll::kReduceScatter || coll == Coll::kReduce;
}

/// Whether only the root's output is defined.
inline bool rootOnlyOutput(Coll coll) { return coll == Coll::kReduce || coll == Coll::kGather; }

/// Element counts of one call (fp32 elements), as tutti-bench's collectiveCounts().
struct Counts {
  /// Elements of each rank's input.
  std::size_t send = 0;
  /// Elements of each rank's output.
  std::size_t recv = 0;
  /// The call's count argument: per rank for all-gather, reduce-scatter, gather, scatter and
  /// all-to-all, the whole vector otherwise.
  std::size_t param = 0;
};

/// nccl-tests' rule for a row of `bytes`: count = bytes / 4 elements is the larger buffer
/// of the call, and collectives that give each rank a slot round it down to n slots.
inline Counts countsFor(Coll coll, std::size_t bytes, int nranks) {
  const std::size_t count = bytes / sizeof(float);
  const auto n = static_cast<std::size_t>(nranks);
  const std::size_t perRank = count / n;
  switch (coll) {
    case Coll::kAllGather:
    case Coll::kGather:
      return Counts{perRank, perRank * n, perRank};
    case Coll::kReduceScatter:
    case Coll::kScatter:
      return Counts{perRank * n, perRank, perRank};
    case Coll::kAllToAll:
      return Counts{perRank * n, perRank * n, perRank};
    default:
      return Counts{count, count, count};
  }
}

/// Bytes of the row as tutti-bench prints them: the larger of input and output.
inline std::size_t rowBytes(const Counts& counts) {
  return std::max(counts.send, counts.recv) * sizeof(float);
}

/// S in algbw = S / t: the whole array, count * 4 * nranks where the count is per rank.
inline double algorithmBytes(Coll coll, const Counts& counts, int nranks) {
  const double perCall = static_cast<double>(counts.param) * sizeof(float);
  switch (coll) {
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
    case Coll::kGather:
    case Coll::kScatter:
      return perCall * nranks;
    default:
      return perCall;
  }
}

/// nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for the collectives
/// that split by rank, 1 for broadcast and reduce.
inline double busFactor(Coll coll, int nranks) {
  const double n = nranks;
  switch (coll) {
    case Coll::kAllReduce: return 2.0 * (n - 1) / n;
    case Coll::kBroadcast:
    case Coll::kReduce: return 1.0;
    default: return (n - 1) / n;
  }
}

// ---- values. Every value is a small integer, exact in fp32, so sums are exact in any
// order and an expectation needs no tolerance.

/// Input element i of rank r for a reduction: r + 1 + (i mod 1021). The sum over n ranks is
/// n(n+1)/2 + n (i mod 1021), below 2^24 for any world this machine runs.
inline float reductionValue(int rank, std::size_t i) {
  return static_cast<float>(rank + 1 + static_cast<int>(i % 1021));
}

/// The sum over `nranks` ranks of reductionValue(r, i).
inline float reducedValue(int nranks, std::size_t i) {
  return static_cast<float>(nranks * (nranks + 1) / 2 + nranks * static_cast<int>(i % 1021));
}

/// Element i of rank r's data for data movement: (r + 1) * 65536 + (i mod 65521); names its
/// rank and (modulo a prime) its position, exact for up to 255 ranks.
inline float movementValue(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * 65536 + static_cast<int>(i % 65521));
}

/// Writes rank `rank`'s input (counts.send elements).
inline void fillInput(Coll coll, float* input, const Counts& counts, int rank) {
  for (std::size_t i = 0; i < counts.send; ++i) {
    input[i] = reduces(coll) ? reductionValue(rank, i) : movementValue(rank, i);
  }
}

/// Writes what rank `rank` must receive and returns how many leading output elements that
/// is (0 where the output is undefined: a rooted collective's non-roots).
inline std::size_t fillExpected(Coll coll, float* expected, const Counts& counts, int rank,
                                int nranks, int root) {
  const std::size_t k = counts.param;
  const auto q = static_cast<std::size_t>(rank);
  if (rootOnlyOutput(coll) && rank != root) return 0;
  for (std::size_t i = 0; i < counts.recv; ++i) {
    const std::size_t block = k == 0 ? 0 : i / k;
    const std::size_t offset = k == 0 ? 0 : i % k;
    switch (coll) {
      case Coll::kAllReduce:
      case Coll::kReduce: expected[i] = reducedValue(nranks, i); break;
      case Coll::kReduceScatter: expected[i] = reducedValue(nranks, q * k + i); break;
      case Coll::kBroadcast: expected[i] = movementValue(root, i); break;
      case Coll::kAllGather:
      case Coll::kGather: expected[i] = movementValue(static_cast<int>(block), offset); break;
      case Coll::kScatter: expected[i] = movementValue(root, q * k + i); break;
      case Coll::kAllToAll:
        expected[i] = movementValue(static_cast<int>(block), q * k + offset);
        break;
    }
  }
  return counts.recv;
}

/// Elements of `out` that differ from `expected` (bitwise: the values are exact).
inline std::int64_t countWrong(const float* out, const float* expected, std::size_t n) {
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += std::memcmp(&out[i], &expected[i], 4) != 0;
  return wrong;
}

// ---- command line

/// Bytes from "8", "64K", "1M", "2G" (powers of 1024), or nothing.
inline std::optional<std::size_t> parseBytes(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::size_t multiplier = 1;
  switch (text.back()) {
    case 'K': case 'k': multiplier = std::size_t{1} << 10; break;
    case 'M': case 'm': multiplier = std::size_t{1} << 20; break;
    case 'G': case 'g': multiplier = std::size_t{1} << 30; break;
    default: break;
  }
  if (multiplier != 1) text.remove_suffix(1);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::strtoull(std::string(text).c_str(), nullptr, 10) * multiplier;
}

/// Items of a comma-separated list.
inline std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// What the driver runs; filled from the command line.
struct Options {
  Coll coll = Coll::kAllReduce;
  std::vector<std::size_t> sizes;
  /// Algorithms to run in turn (Gloo all-reduce); {""} lets the peer choose.
  std::vector<std::string> algos{""};
  int warmup = 5;
  /// Fixed timed iterations; 0 sizes them from targetSeconds.
  int iters = 0;
  /// With iters 0, timed iterations fill about this long (at least 3, at most maxIters).
  double targetSeconds = 0.3;
  int maxIters = 100000;
  int root = 0;
  /// Names the peer variant in the output (e.g. "ompi-tcp"), set by the script.
  std::string label = "peer";
};

/// The usage text of the common flags, for a program's --help.
inline const char* commonUsage() {
  return "  -s, --sizes LIST   sizes in bytes, comma separated (8,64K,1M,...); required\n"
         "  -w N               warm-up calls per size (5)\n"
         "  -n N               timed calls per size; 0 sizes them from -t (0)\n"
         "  -t SECONDS         with -n 0, time the calls for about this long (0.3)\n"
         "  --max-iters N      with -n 0, never more timed calls than this (100000)\n"
         "  -r ROOT            root of broadcast, reduce, gather and scatter (0)\n"
         "  --label NAME       peer variant printed in each result line (peer)\n";
}

/// Parses the flag at argv[*i] (and its value) into `options`; false if it is not a
/// common flag. Exits with a message on a bad value.
inline bool parseCommonFlag(int argc, char** argv, int* i, Options* options) {
  const std::string flag = argv[*i];
  auto value = [&]() -> std::string {
    if (*i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      std::exit(2);
    }
    return argv[++*i];
  };
  auto integer = [&](const std::string& text) {
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 0) {
      std::fprintf(stderr, "%s: '%s' is not a non-negative integer\n", flag.c_str(), text.c_str());
      std::exit(2);
    }
    return static_cast<int>(v);
  };
  if (flag == "-s" || flag == "--sizes") {
    for (const std::string& item : splitList(value())) {
      const std::optional<std::size_t> bytes = parseBytes(item);
      if (!bytes) {
        std::fprintf(stderr, "%s: '%s' is not a size (e.g. 8, 64K, 1M)\n", flag.c_str(),
                     item.c_str());
        std::exit(2);
      }
      options->sizes.push_back(*bytes);
    }
  } else if (flag == "-w") {
    options->warmup = integer(value());
  } else if (flag == "-n") {
    options->iters = integer(value());
  } else if (flag == "-t") {
    options->targetSeconds = std::atof(value().c_str());
  } else if (flag == "--max-iters") {
    options->maxIters = std::max(1, integer(value()));
  } else if (flag == "-r") {
    options->root = integer(value());
  } else if (flag == "--label") {
    options->label = value();
  } else {
    return false;
  }
  return true;
}

// ---- the driver

/// Page-aligned, zeroed (so touched: no first-touch fault inside a timed call) fp32 buffer.
struct Buffer {
  explicit Buffer(std::size_t elements) : size(std::max<std::size_t>(elements, 1)) {
    void* raw = nullptr;
    if (posix_memalign(&raw, 4096, size * sizeof(float)) != 0) {
      std::fprintf(stderr, "out of memory: %zu bytes\n", size * sizeof(float));
      std::exit(1);
    }
    std::memset(raw, 0, size * sizeof(float));
    data.reset(static_cast<float*>(raw));
  }
  struct Free { void operator()(float* p) const { std::free(p); } };
  std::size_t size;
  std::unique_ptr<float, Free> data;
};

/// Seconds on the steady clock since an arbitrary start.
inline double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Timed calls that fill about options.targetSeconds: batches of calls, doubling, until one
/// takes 20 ms on the slowest rank (one call can be far off the typical time on a busy
/// machine). Every rank gets the same count.
template <class Backend>
int calibrate(Backend& backend, const Options& options) {
  constexpr double kBatchSeconds = 0.02;
  int batch = 1;
  for (;;) {
    backend.barrier();
    const double start = nowSeconds();
    for (int i = 0; i < batch; ++i) backend.run();
    const double elapsed = backend.maxOverRanks(nowSeconds() - start);
    if (elapsed >= kBatchSeconds || batch >= options.maxIters) {
      const double perCall = std::max(elapsed, 1e-9) / batch;
      // At least 3 calls, unless one call alone overruns the target (a peer that collapses,
      // taking seconds per call): then as many as fit, at least one.
      const double least = perCall > options.targetSeconds ? 1.0 : 3.0;
      const double wanted = options.targetSeconds / perCall;
      return static_cast<int>(std::clamp(wanted, least, static_cast<double>(options.maxIters)));
    }
    batch *= 2;
  }
}

/// Runs `options.coll` at every size with every algorithm and, on rank 0, prints one line
/// per (size, algorithm):
///   RESULT label collective ranks size_bytes time_us algbw_GBs busbw_GBs wrong iters algo
/// time is the mean over ranks of each rank's mean time per call (tutti-bench's default,
/// -a 1). Returns the total of wrong elements (0 when every output was right).
template <class Backend>
std::int64_t runSizes(Backend& backend, const Options& options) {
  const int rank = backend.rank();
  const int nranks = backend.size();
  std::int64_t totalWrong = 0;
  if (rank == 0) {
    std::printf("# label collective ranks size_bytes time_us algbw_GBs busbw_GBs wrong iters "
                "algo\n");
  }
  for (const std::size_t bytes : options.sizes) {
    const Counts counts = countsFor(options.coll, bytes, nranks);
    if (counts.param == 0) {
      if (rank == 0) {
        std::printf("# %s %zu B on %d ranks: no element per rank, skipped\n",
                    collName(options.coll), bytes, nranks);
      }
      continue;
    }
    Buffer send(counts.send);
    Buffer recv(counts.recv);
    Buffer expected(counts.recv);
    const std::size_t checked =
        fillExpected(options.coll, expected.data.get(), counts, rank, nranks, options.root);
    for (const std::string& algo : options.algos) {
      fillInput(options.coll, send.data.get(), counts, rank);
      float* out = backend.prepare(options.coll, counts, send.data.get(), recv.data.get(),
                                   options.root, algo);
      for (int i = 0; i < options.warmup; ++i) backend.run();
      const int iters = options.iters > 0 ? options.iters : calibrate(backend, options);
      backend.barrier();
      const double start = nowSeconds();
      for (int i = 0; i < iters; ++i) backend.run();
      const double mine = (nowSeconds() - start) / iters;
      const double seconds = backend.sumOverRanks(mine) / nranks;
      // The check: fresh inputs, an output poisoned with NaN bytes unless the peer works in
      // place (then the output is the input), one call, every defined element compared.
      fillInput(options.coll, send.data.get(), counts, rank);
      if (out != send.data.get()) std::memset(out, 0xff, counts.recv * sizeof(float));
      backend.run();
      const double localWrong =
          static_cast<double>(countWrong(out, expected.data.get(), checked));
      const auto wrong = static_cast<std::int64_t>(backend.sumOverRanks(localWrong));
      totalWrong += wrong;
      backend.release();
      if (rank == 0) {
        const double algbw = algorithmBytes(options.coll, counts, nranks) / seconds / 1e9;
        std::printf("RESULT %s %s %d %zu %.3f %.4f %.4f %lld %d %s\n", options.label.c_str(),
                    collName(options.coll), nranks, rowBytes(counts), seconds * 1e6, algbw,
                    algbw * busFactor(options.coll, nranks), static_cast<long long>(wrong), iters,
                    algo.empty() ? "default" : algo.c_str());
        std::fflush(stdout);
      }
    }
  }
  return totalWrong;
}

}  // namespace peers
