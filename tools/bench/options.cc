#include "bench/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "base/assert.h"
#include "base/macros.h"
#include "base/strings.h"

namespace tutti::bench {
namespace {

// Flags whose values tutti parses itself (sizes, lists), so errors name them clearly.
struct RawArgs {
  std::string collective;
  std::string minBytes;
  std::string maxBytes;
  std::string stepBytes;
  std::int64_t stepFactor = 1;
  std::string sizes;
  std::string iterBytes;
  int average = static_cast<int>(TimeAverage::kMean);
  std::string dtypes = "float";
  std::string ops = "sum";
  std::string algorithms;
};

Status invalid(std::string message) {
  return Status(ErrorCode::kInvalidArgument, std::move(message));
}

// The command as typed, for the report header: arguments with blanks or quotes are wrapped
// in single quotes so the line can be read back (not a full shell quoting).
std::string joinCommandLine(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i > 0) out += ' ';
    const bool plain = !arg.empty() && arg.find_first_of(" \t\"'\\") == std::string_view::npos;
    out += plain ? std::string(arg) : "'" + std::string(arg) + "'";
  }
  return out;
}

// An empty text leaves `out` at its default.
Status parseSizeFlag(const char* flag, const std::string& text, std::uint64_t* out) {
  if (text.empty()) return Status::Ok();
  std::optional<std::uint64_t> bytes = parseBytes(text);
  if (!bytes) {
    return invalid(strFormat("%s: '%s' is not a size (expected bytes with an optional K, M, "
                             "G or T suffix, e.g. 8, 64K, 16M)", flag, text.c_str()));
  }
  *out = *bytes;
  return Status::Ok();
}

// --sizes: sizes separated by commas, strictly ascending (a row per size, in order).
Result<std::vector<std::uint64_t>> parseSizeList(const std::string& text) {
  std::vector<std::uint64_t> out;
  for (const std::string& item : splitString(text, ',')) {
    const std::string value(trim(item));
    std::optional<std::uint64_t> bytes = parseBytes(value);
    if (!bytes) {
      return invalid(strFormat("--sizes: '%s' is not a size (expected sizes separated by "
                               "commas, e.g. 8,64K,4M)", value.c_str()));
    }
    if (!out.empty() && *bytes <= out.back()) {
      return invalid(strFormat("--sizes: %s does not exceed the size before it; the sizes "
                               "must ascend", value.c_str()));
    }
    if (out.size() >= kMaxSweepSizes)
      return invalid(strFormat("--sizes: more than %zu sizes", kMaxSweepSizes));
    out.push_back(*bytes);
  }
  return out;
}

// --algo: names separated by commas, each at most once; "auto" is the library's choice ("").
Result<std::vector<std::string>> parseAlgorithms(const std::string& text) {
  if (text.empty()) return std::vector<std::string>{std::string()};
  std::vector<std::string> out;
  for (const std::string& item : splitString(text, ',')) {
    std::string name(trim(item));
    if (name.empty()) return invalid(strFormat("--algo '%s': an empty name", text.c_str()));
    if (name == "auto") name.clear();
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return invalid(strFormat("--algo '%s': %s is listed twice", text.c_str(),
                               candidateName(name).c_str()));
    }
    out.push_back(std::move(name));
  }
  return out;
}

Result<std::vector<DataType>> parseDataTypes(const std::string& text) {
  std::vector<DataType> out;
  for (const std::string& item : splitString(text, ',')) {
    const std::string_view name = trim(item);
    if (name == "all") {
      for (DataType dtype : allDataTypes()) out.push_back(dtype);
      continue;
    }
    std::optional<DataType> dtype = parseDataType(name);
    if (!dtype) {
      return invalid(strFormat(
          "-d/--datatype: unknown data type '%s'; known: int8 uint8 int32 uint32 int64 uint64 "
          "half (float16) float (float32) double (float64) bfloat16, or all",
          std::string(name).c_str()));
    }
    out.push_back(*dtype);
  }
  return out;
}

Result<std::vector<ReduceOp>> parseReduceOps(const std::string& text) {
  std::vector<ReduceOp> out;
  for (const std::string& item : splitString(text, ',')) {
    const std::string_view name = trim(item);
    if (name == "all") {
      for (ReduceOp op : allReduceOps()) out.push_back(op);
      continue;
    }
    std::optional<ReduceOp> op = parseReduceOp(name);
    if (!op) {
      return invalid(strFormat("-o/--op: unknown reduction operator '%s'; known: sum prod min "
                               "max avg, or all", std::string(name).c_str()));
    }
    out.push_back(*op);
  }
  return out;
}

// Integers go straight into the options (CLI11 rejects junk); ranges are checked after
// parsing, in finishOptions(), so every error names the flag the same way. The defaults in
// the help texts are nccl-tests' (common.cu).
void defineFlags(CLI::App& app, RawArgs& raw, BenchOptions& options) {
  app.add_option("collective", raw.collective,
                 "Collective to run: " + knownCollectives() + ", or all (each in turn)")
      ->required();
  app.add_option("-b,--minbytes", raw.minBytes, "Smallest size in bytes (K/M/G suffixes; 32M)");
  app.add_option("-e,--maxbytes", raw.maxBytes, "Largest size in bytes (32M)");
  app.add_option("-i,--stepbytes", raw.stepBytes, "Size increment when -f is 1 (1M)");
  app.add_option("-f,--stepfactor", raw.stepFactor, "Size multiplier; above 1 it replaces -i");
  app.add_option("--sizes", raw.sizes,
                 "Sizes to run, ascending, separated by commas (e.g. 8,64K,4M), in place of "
                 "-b/-e/-f/-i");
  app.add_option("-n,--iters", options.iters, "Timed operations per size (20)");
  app.add_option("--iter-bytes", raw.iterBytes,
                 "Bytes of calls per size: a size of S bytes times min(-n, max(1, BYTES / S)) "
                 "operations, and warms up with at most as many, so that large sizes take "
                 "no longer than small ones (0: -n at every size)");
  app.add_flag("!--no-in-place", options.inPlace,
               "Time and check only the out-of-place form of each size (the in-place "
               "columns print N/A)");
  app.add_option("-w,--warmup_iters", options.warmupIters, "Untimed operations first (5)");
  app.add_option("--min-warmup", options.minWarmupIters,
                 "At least this many untimed operations per size, even where --iter-bytes "
                 "allows fewer than -w (0)");
  app.add_option("-c,--check", options.check, "Checked operations per size, 0 to skip (1)");
  app.add_option("-d,--datatype", raw.dtypes,
                 "Data type: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 "
                 "(or float16 float32 float64), a comma-separated list, or all (float)");
  app.add_option("-o,--op", raw.ops, "Reduction: sum prod min max avg, a list, or all (sum)");
  app.add_option("-r,--root", options.root, "Root of rooted collectives, -1 for each (0)");
  app.add_option("-a,--average", raw.average,
                 "Reported time: 0 rank 0's, 1 mean, 2 min, 3 max over ranks (1)");
  app.add_option("--algo", raw.algorithms,
                 "Force this algorithm (name, e.g. ring; ring@256K also forces its segment); "
                 "a comma-separated list (auto: the library's choice) runs every size with "
                 "each, their timed calls taking turns in --blocks blocks, all in this one run "
                 "(a row per size and candidate)");
  app.add_option("--blocks", options.blocks,
                 "With several --algo candidates: the blocks each one's timed calls of a size "
                 "are split into, the candidates taking turns block by block (5; at most the "
                 "timed calls)");
  app.add_flag("--verify", options.verify,
               "Before running, prove every row's schedules correct with the verifier (all "
               "ranks' schedules, symbolically, no network); a finding stops the run");
  app.add_option("--json", options.jsonPath, "Also write every row to this JSON file");
  app.add_option("-R,--register", options.registerBuffers,
                 "1: allocate the buffers with tutti::memAlloc, which peers on the same host "
                 "read and write directly; 0: from the heap (0)");
  app.add_option("-z,--async", options.async,
                 "1: issue every collective as its ...Async form and wait for it; 0: blocking "
                 "calls (0)");
  app.add_option("--compute", options.computeUs,
                 "Microseconds of computation after issuing each collective: with -z 1 before "
                 "waiting for it (what the call overlaps), else after it returns; the time "
                 "reported includes it (0)");
}

// Checks ranges and turns the raw strings into typed options.
Status finishOptions(const RawArgs& raw, BenchOptions& options) {
  TUTTI_ASSIGN_OR_RETURN(options.collectives, selectCollectives(raw.collective));
  TUTTI_RETURN_IF_ERROR(parseSizeFlag("-b/--minbytes", raw.minBytes, &options.minBytes));
  TUTTI_RETURN_IF_ERROR(parseSizeFlag("-e/--maxbytes", raw.maxBytes, &options.maxBytes));
  TUTTI_RETURN_IF_ERROR(parseSizeFlag("-i/--stepbytes", raw.stepBytes, &options.stepBytes));
  TUTTI_RETURN_IF_ERROR(parseSizeFlag("--iter-bytes", raw.iterBytes, &options.iterBytes));
  if (!raw.sizes.empty()) {
    TUTTI_CHECK_ARG(raw.minBytes.empty() && raw.maxBytes.empty() && raw.stepBytes.empty() &&
                        raw.stepFactor == 1,
                    "--sizes replaces -b/-e/-f/-i: give one or the other");
    TUTTI_ASSIGN_OR_RETURN(options.sizeList, parseSizeList(raw.sizes));
    // The report's header names the sweep's ends.
    options.minBytes = options.sizeList.front();
    options.maxBytes = options.sizeList.back();
  }
  TUTTI_CHECK_ARG(raw.stepFactor >= 1, "-f/--stepfactor must be >= 1, got %lld",
                  static_cast<long long>(raw.stepFactor));
  options.stepFactor = static_cast<std::uint64_t>(raw.stepFactor);
  TUTTI_CHECK_ARG(options.iters >= 1, "-n/--iters must be >= 1, got %d", options.iters);
  TUTTI_CHECK_ARG(options.warmupIters >= 0, "-w/--warmup_iters must be >= 0, got %d",
                  options.warmupIters);
  TUTTI_CHECK_ARG(options.minWarmupIters >= 0, "--min-warmup must be >= 0, got %d",
                  options.minWarmupIters);
  TUTTI_CHECK_ARG(options.check >= 0, "-c/--check must be >= 0, got %d", options.check);
  TUTTI_CHECK_ARG(options.registerBuffers == 0 || options.registerBuffers == 1,
                  "-R/--register must be 0 or 1, got %d", options.registerBuffers);
  TUTTI_CHECK_ARG(options.async == 0 || options.async == 1, "-z/--async must be 0 or 1, got %d",
                  options.async);
  TUTTI_CHECK_ARG(options.computeUs >= 0 && options.computeUs <= 10e6,
                  "--compute must be 0 to 10000000 microseconds, got %g", options.computeUs);
  TUTTI_CHECK_ARG(options.root >= -1, "-r/--root must be a rank or -1, got %d", options.root);
  TUTTI_CHECK_ARG(raw.average >= 0 && raw.average <= 3,
                  "-a/--average must be 0 (rank 0), 1 (mean), 2 (min) or 3 (max), got %d",
                  raw.average);
  options.average = static_cast<TimeAverage>(raw.average);
  TUTTI_ASSIGN_OR_RETURN(options.dtypes, parseDataTypes(raw.dtypes));
  TUTTI_ASSIGN_OR_RETURN(options.ops, parseReduceOps(raw.ops));
  TUTTI_ASSIGN_OR_RETURN(options.algorithms, parseAlgorithms(raw.algorithms));
  TUTTI_CHECK_ARG(options.blocks >= 0, "--blocks must be >= 0, got %d", options.blocks);
  // Validates the sweep now, before any rank waits for the others.
  TUTTI_ASSIGN_OR_RETURN(std::vector<std::uint64_t> sizes, sizeSweep(options));
  TUTTI_ASSERT(!sizes.empty());
  return Status::Ok();
}

}  // namespace

const char* timeAverageName(TimeAverage average) {
  switch (average) {
    case TimeAverage::kRank0: return "rank0";
    case TimeAverage::kMean: return "avg";
    case TimeAverage::kMin: return "min";
    case TimeAverage::kMax: return "max";
  }
  return "invalid";
}

Result<ParsedArgs> parseArgs(int argc, const char* const* argv) {
  ParsedArgs parsed;
  RawArgs raw;
  CLI::App app{"tutti-bench: measures and checks tutti collectives (nccl-tests style)",
               "tutti-bench"};
  defineFlags(app, raw, parsed.options);
  // CLI11 reports through exceptions; they stop here and become values.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    parsed.helpRequested = true;
    parsed.helpText = app.help();
    return parsed;
  } catch (const CLI::ParseError& e) {
    return invalid(e.what());
  } catch (const CLI::Error& e) {
    return Status(ErrorCode::kInternal, strFormat("command-line setup: %s", e.what()));
  }
  TUTTI_RETURN_IF_ERROR(finishOptions(raw, parsed.options));
  parsed.options.commandLine = joinCommandLine(argc, argv);
  return parsed;
}

Result<std::vector<std::uint64_t>> sizeSweep(const BenchOptions& options) {
  if (!options.sizeList.empty()) return options.sizeList;
  const std::uint64_t maxBytes = options.maxBytes;
  const std::uint64_t factor = options.stepFactor;
  TUTTI_CHECK_ARG(options.minBytes <= maxBytes,
                  "-b/--minbytes (%llu) must not exceed -e/--maxbytes (%llu)",
                  static_cast<unsigned long long>(options.minBytes),
                  static_cast<unsigned long long>(maxBytes));
  TUTTI_CHECK_ARG(factor > 1 || options.stepBytes > 0 || options.minBytes == maxBytes,
                  "-i/--stepbytes must be > 0 to go from %llu to %llu bytes (or use -f)",
                  static_cast<unsigned long long>(options.minBytes),
                  static_cast<unsigned long long>(maxBytes));
  std::vector<std::uint64_t> sizes;
  std::uint64_t size = options.minBytes;
  // Bounded by kMaxSweepSizes; every branch either grows `size` or leaves the loop.
  while (true) {
    TUTTI_CHECK_ARG(sizes.size() < kMaxSweepSizes,
                    "the sweep from %llu to %llu bytes has more than %zu sizes; use a larger "
                    "-i or -f", static_cast<unsigned long long>(options.minBytes),
                    static_cast<unsigned long long>(maxBytes), kMaxSweepSizes);
    sizes.push_back(size);
    if (size >= maxBytes) break;
    if (factor > 1) {
      if (size == 0) {
        size = 1;
        continue;
      }
      if (size > maxBytes / factor) break;  // the next size would pass -e (or overflow)
      size *= factor;
    } else {
      // Compared as a difference so that size + step cannot overflow.
      if (maxBytes - size < options.stepBytes) break;
      size += options.stepBytes;
    }
  }
  return sizes;
}

int itersFor(const BenchOptions& options, std::uint64_t rowBytes) {
  if (options.iterBytes == 0 || rowBytes == 0) return options.iters;
  const std::uint64_t fit = std::max<std::uint64_t>(1, options.iterBytes / rowBytes);
  return static_cast<int>(std::min<std::uint64_t>(fit, static_cast<std::uint64_t>(options.iters)));
}

int warmupItersFor(const BenchOptions& options, std::uint64_t rowBytes) {
  return std::max(options.minWarmupIters, std::min(options.warmupIters, itersFor(options, rowBytes)));
}

int blocksFor(const BenchOptions& options, int iters) {
  int blocks = options.blocks;
  if (blocks == 0) blocks = options.algorithms.size() > 1 ? kDefaultBlocks : 1;
  return std::max(1, std::min(blocks, iters));
}

std::string candidateName(const std::string& algorithm) {
  return algorithm.empty() ? std::string("auto") : algorithm;
}

std::vector<DataType> allDataTypes() {
  return {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,   DataType::kUint32,
          DataType::kInt64,   DataType::kUint64,  DataType::kFloat16, DataType::kFloat32,
          DataType::kFloat64, DataType::kBFloat16};
}

std::vector<ReduceOp> allReduceOps() {
  return {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg};
}

}  // namespace tutti::bench
