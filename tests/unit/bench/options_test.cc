#include "bench/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tutti::bench {
namespace {

Result<ParsedArgs> parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"tutti-bench"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return parseArgs(static_cast<int>(argv.size()), argv.data());
}

BenchOptions parseOk(const std::vector<std::string>& args) {
  Result<ParsedArgs> parsed = parse(args);
  EXPECT_TRUE(parsed.ok()) << parsed.status().toString();
  if (!parsed.ok()) return BenchOptions{};
  EXPECT_FALSE(parsed->helpRequested);
  return parsed->options;
}

// Expects kInvalidArgument whose message contains `needle`.
void expectError(const std::vector<std::string>& args, const std::string& needle) {
  Result<ParsedArgs> parsed = parse(args);
  ASSERT_FALSE(parsed.ok()) << needle;
  EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find(needle), std::string::npos)
      << "message: " << parsed.status().message() << "\nwanted: " << needle;
}

TEST(BenchOptions, DefaultsAreNcclTests) {
  const BenchOptions o = parseOk({"allreduce"});
  ASSERT_EQ(o.collectives.size(), 1u);
  EXPECT_EQ(o.collectives[0]->kind, Collective::kAllReduce);
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.stepBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 5);
  EXPECT_EQ(o.check, 1);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::kFloat32});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kSum});
  EXPECT_EQ(o.root, 0);
  EXPECT_EQ(o.average, TimeAverage::kMean);
  EXPECT_EQ(o.algorithms, std::vector<std::string>{""});  // the library chooses
  EXPECT_EQ(o.blocks, 0);
  EXPECT_EQ(blocksFor(o, 20), 1);
  EXPECT_TRUE(o.jsonPath.empty());
  EXPECT_EQ(o.async, 0);
  EXPECT_EQ(o.computeUs, 0.0);
  EXPECT_EQ(o.commandLine, "tutti-bench allreduce");
}

TEST(BenchOptions, ShortFlags) {
  const BenchOptions o = parseOk({"all_reduce", "-b", "8", "-e", "16M", "-f", "4", "-i", "64",
                                  "-n", "7", "-w", "0", "-c", "0", "-d", "half", "-o", "max",
                                  "-r", "-1", "-a", "3", "--algo", "ring", "--json", "r.json",
                                  "-z", "1"});
  ASSERT_EQ(o.collectives.size(), 1u);
  EXPECT_EQ(o.collectives[0]->name(), "allreduce");
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 16u << 20);
  EXPECT_EQ(o.stepFactor, 4u);
  EXPECT_EQ(o.stepBytes, 64u);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmupIters, 0);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::kFloat16});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kMax});
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.average, TimeAverage::kMax);
  EXPECT_EQ(o.algorithms, std::vector<std::string>{"ring"});
  EXPECT_EQ(o.jsonPath, "r.json");
  EXPECT_EQ(o.async, 1);
}

TEST(BenchOptions, LongFlags) {
  const BenchOptions o =
      parseOk({"allreduce", "--minbytes", "1K", "--maxbytes", "1G", "--stepfactor", "2",
               "--stepbytes", "4K", "--iters", "3", "--warmup_iters", "1", "--check", "2",
               "--datatype", "bfloat16", "--op", "prod", "--root", "2", "--average", "0",
               "--async", "1", "--compute", "250.5"});
  EXPECT_EQ(o.minBytes, 1024u);
  EXPECT_EQ(o.maxBytes, 1u << 30);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.stepBytes, 4096u);
  EXPECT_EQ(o.iters, 3);
  EXPECT_EQ(o.warmupIters, 1);
  EXPECT_EQ(o.check, 2);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::kBFloat16});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kProd});
  EXPECT_EQ(o.root, 2);
  EXPECT_EQ(o.average, TimeAverage::kRank0);
  EXPECT_EQ(o.async, 1);
  EXPECT_EQ(o.computeUs, 250.5);
}

TEST(BenchOptions, DataTypeNames) {
  const std::pair<const char*, DataType> names[] = {
      {"int8", DataType::kInt8},        {"uint8", DataType::kUint8},
      {"int32", DataType::kInt32},      {"uint32", DataType::kUint32},
      {"int64", DataType::kInt64},      {"uint64", DataType::kUint64},
      {"half", DataType::kFloat16},     {"float16", DataType::kFloat16},
      {"float", DataType::kFloat32},    {"float32", DataType::kFloat32},
      {"double", DataType::kFloat64},   {"float64", DataType::kFloat64},
      {"bfloat16", DataType::kBFloat16}};
  for (const auto& [name, dtype] : names) {
    EXPECT_EQ(parseOk({"allreduce", "-d", name}).dtypes, std::vector<DataType>{dtype}) << name;
  }
  EXPECT_EQ(parseOk({"allreduce", "-d", "int8,double"}).dtypes,
            (std::vector<DataType>{DataType::kInt8, DataType::kFloat64}));
}

TEST(BenchOptions, AllExpandsInNcclTestsOrder) {
  const BenchOptions o = parseOk({"allreduce", "-d", "all", "-o", "all"});
  EXPECT_EQ(o.dtypes, (std::vector<DataType>{
                          DataType::kInt8, DataType::kUint8, DataType::kInt32, DataType::kUint32,
                          DataType::kInt64, DataType::kUint64, DataType::kFloat16,
                          DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16}));
  EXPECT_EQ(o.ops, (std::vector<ReduceOp>{ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                          ReduceOp::kMin, ReduceOp::kAvg}));
  EXPECT_EQ(parseOk({"allreduce", "-o", "avg"}).ops, std::vector<ReduceOp>{ReduceOp::kAvg});
  EXPECT_EQ(parseOk({"allreduce", "-o", "min"}).ops, std::vector<ReduceOp>{ReduceOp::kMin});
}

TEST(BenchOptions, AllRunsEveryCollectiveInTableOrder) {
  const BenchOptions o = parseOk({"all", "-b", "0", "-e", "64K", "-f", "8"});
  ASSERT_EQ(o.collectives.size(), collectiveTable().size());
  for (std::size_t i = 0; i < o.collectives.size(); ++i) {
    EXPECT_EQ(o.collectives[i], &collectiveTable()[i]);
  }
  // Every alias selects its one collective.
  for (const char* name : {"all_gather", "reduce_scatter", "all_to_all", "send_recv", "bcast"}) {
    const BenchOptions one = parseOk({name});
    ASSERT_EQ(one.collectives.size(), 1u) << name;
    EXPECT_NE(one.collectives[0]->name(), name);
  }
}

TEST(BenchOptions, Errors) {
  expectError({}, "collective");
  expectError({"allgatherx"}, "unknown collective 'allgatherx'; known collectives: allreduce");
  expectError({"allgatherx"}, "barrier, or all");
  expectError({"allreduce", "-d", "quad"}, "unknown data type 'quad'");
  expectError({"allreduce", "-d", "float,"}, "unknown data type ''");
  expectError({"allreduce", "-o", "mean"}, "unknown reduction operator 'mean'");
  expectError({"allreduce", "-b", "12Q"}, "-b/--minbytes: '12Q' is not a size");
  expectError({"allreduce", "-e", "-5"}, "-e/--maxbytes");
  expectError({"allreduce", "-b", "64", "-e", "8"}, "-b/--minbytes (64) must not exceed");
  expectError({"allreduce", "-n", "0"}, "-n/--iters must be >= 1, got 0");
  expectError({"allreduce", "-n", "abc"}, "abc");
  expectError({"allreduce", "-w", "-1"}, "-w/--warmup_iters must be >= 0");
  expectError({"allreduce", "-c", "-1"}, "-c/--check must be >= 0");
  expectError({"allreduce", "-a", "4"}, "-a/--average must be 0");
  expectError({"allreduce", "-z", "2"}, "-z/--async must be 0 or 1, got 2");
  expectError({"allreduce", "--compute", "-1"}, "--compute must be 0 to 10000000 microseconds, got -1");
  expectError({"allreduce", "-f", "0"}, "-f/--stepfactor must be >= 1, got 0");
  expectError({"allreduce", "-r", "-2"}, "-r/--root");
  expectError({"allreduce", "--bogus"}, "--bogus");
  expectError({"allreduce", "extra"}, "extra");
  expectError({"allreduce", "-b", "0", "-e", "1M", "-i", "0"}, "-i/--stepbytes must be > 0");
  expectError({"allreduce", "-b", "0", "-e", "1G", "-i", "1"}, "more than 65536 sizes");
}

TEST(BenchOptions, SizeListReplacesTheSweep) {
  const BenchOptions o = parseOk({"allreduce", "--sizes", "8, 64K,4M", "--iter-bytes", "1G",
                                  "--no-in-place"});
  EXPECT_EQ(o.sizeList, (std::vector<std::uint64_t>{8, 64u << 10, 4u << 20}));
  EXPECT_EQ(*sizeSweep(o), o.sizeList);
  EXPECT_EQ(o.minBytes, 8u);  // the report's header names the list's ends
  EXPECT_EQ(o.maxBytes, 4u << 20);
  EXPECT_EQ(o.iterBytes, 1u << 30);
  EXPECT_FALSE(o.inPlace);
  EXPECT_TRUE(parseOk({"allreduce"}).inPlace);
  expectError({"allreduce", "--sizes", "8,4K,4K"}, "--sizes: 4K does not exceed the size before it");
  expectError({"allreduce", "--sizes", "8,x"}, "--sizes: 'x' is not a size");
  expectError({"allreduce", "--sizes", "8", "-e", "64"}, "--sizes replaces -b/-e/-f/-i");
  expectError({"allreduce", "--iter-bytes", "1Q"}, "--iter-bytes: '1Q' is not a size");
}

TEST(BenchOptions, IterBytesShrinksTheIterationsOfLargeSizes) {
  BenchOptions o;
  o.iters = 100;
  o.warmupIters = 5;
  EXPECT_EQ(itersFor(o, 1u << 30), 100);  // no --iter-bytes: -n at every size
  o.iterBytes = 64u << 20;
  EXPECT_EQ(itersFor(o, 8), 100);               // capped by -n
  EXPECT_EQ(itersFor(o, 1u << 20), 64);
  EXPECT_EQ(itersFor(o, 3u << 20), 21);         // rounded down
  EXPECT_EQ(itersFor(o, 256u << 20), 1);        // at least one
  EXPECT_EQ(itersFor(o, 0), 100);               // a barrier's row
  EXPECT_EQ(warmupItersFor(o, 1u << 20), 5);
  EXPECT_EQ(warmupItersFor(o, 32u << 20), 2);   // no more warm-ups than timed calls
  o.minWarmupIters = 4;
  EXPECT_EQ(warmupItersFor(o, 32u << 20), 4);   // --min-warmup: whatever --iter-bytes leaves
  EXPECT_EQ(warmupItersFor(o, 1u << 20), 5);    // -w where that is more
  EXPECT_EQ(itersFor(o, 32u << 20), 2);         // the timed calls unchanged
}

TEST(BenchOptions, MinWarmupIsParsedAndChecked) {
  EXPECT_EQ(parseOk({"allreduce", "--min-warmup", "16"}).minWarmupIters, 16);
  expectError({"allreduce", "--min-warmup", "-1"}, "--min-warmup must be >= 0, got -1");
}

TEST(BenchOptions, AlgoListsCandidatesInOrderAndBlocksSplitTheirCalls) {
  BenchOptions o = parseOk({"allreduce", "--algo", "auto,ring, rabenseifner"});
  EXPECT_EQ(o.algorithms, (std::vector<std::string>{"", "ring", "rabenseifner"}));
  EXPECT_EQ(blocksFor(o, 200), kDefaultBlocks);  // several candidates take turns
  EXPECT_EQ(blocksFor(o, 3), 3);                 // never more blocks than calls
  EXPECT_EQ(blocksFor(o, 1), 1);
  EXPECT_EQ(candidateName(o.algorithms[0]), "auto");
  EXPECT_EQ(candidateName(o.algorithms[1]), "ring");
  o = parseOk({"allreduce", "--algo", "ring,tree", "--blocks", "2"});
  EXPECT_EQ(blocksFor(o, 200), 2);
  o = parseOk({"allreduce", "--algo", "ring", "--blocks", "4"});
  EXPECT_EQ(blocksFor(o, 200), 4);  // one candidate may be split too
  EXPECT_EQ(parseOk({"allreduce", "--algo", "auto"}).algorithms, std::vector<std::string>{""});
  expectError({"allreduce", "--algo", "ring,auto,ring"}, "--algo 'ring,auto,ring': ring is listed twice");
  expectError({"allreduce", "--algo", "auto,"}, "--algo 'auto,': an empty name");
  expectError({"allreduce", "--blocks", "-1"}, "--blocks must be >= 0, got -1");
}

TEST(BenchOptions, HelpIsNotAnError) {
  Result<ParsedArgs> parsed = parse({"--help"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_TRUE(parsed->helpRequested);
  EXPECT_NE(parsed->helpText.find("--minbytes"), std::string::npos);
  EXPECT_NE(parsed->helpText.find("--algo"), std::string::npos);
  EXPECT_TRUE(parse({"allreduce", "-h"})->helpRequested);
}

TEST(BenchOptions, CommandLineIsQuotedWhereNeeded) {
  EXPECT_EQ(parseOk({"allreduce", "--json", "my file.json", "-b", "8", "-e", "8"}).commandLine,
            "tutti-bench allreduce --json 'my file.json' -b 8 -e 8");
}

std::vector<std::uint64_t> sweep(std::uint64_t minBytes, std::uint64_t maxBytes,
                                 std::uint64_t factor, std::uint64_t step) {
  BenchOptions o;
  o.minBytes = minBytes;
  o.maxBytes = maxBytes;
  o.stepFactor = factor;
  o.stepBytes = step;
  Result<std::vector<std::uint64_t>> sizes = sizeSweep(o);
  EXPECT_TRUE(sizes.ok()) << sizes.status().toString();
  return sizes.ok() ? *sizes : std::vector<std::uint64_t>{};
}

TEST(BenchOptions, SweepMultipliesOrAdds) {
  EXPECT_EQ(sweep(8, 16u << 20, 4, 1),
            (std::vector<std::uint64_t>{8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288,
                                        2097152, 8388608}));
  // The last size is included when the factor lands on it.
  EXPECT_EQ(sweep(8, 128, 2, 1), (std::vector<std::uint64_t>{8, 16, 32, 64, 128}));
  // -f 1 means "add -i", as nccl-tests.
  EXPECT_EQ(sweep(0, 10, 1, 4), (std::vector<std::uint64_t>{0, 4, 8}));
  EXPECT_EQ(sweep(100, 100, 1, 0), (std::vector<std::uint64_t>{100}));
  EXPECT_EQ(sweep(32u << 20, 32u << 20, 1, 1u << 20), (std::vector<std::uint64_t>{32u << 20}));
  // A product from zero stays zero: the sweep goes on from 1.
  EXPECT_EQ(sweep(0, 8, 2, 1), (std::vector<std::uint64_t>{0, 1, 2, 4, 8}));
  EXPECT_EQ(sweep(0, 0, 2, 1), (std::vector<std::uint64_t>{0}));
}

TEST(BenchOptions, SweepNeverOverflows) {
  const std::vector<std::uint64_t> sizes = sweep(1, ~0ull, 3, 1);
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.size(), 41u);  // 3^40 < 2^64 < 3^41
  for (std::size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], sizes[i - 1] * 3);
  EXPECT_EQ(sweep(~0ull - 1, ~0ull, 1, 5), std::vector<std::uint64_t>{~0ull - 1});
}

}  // namespace
}  // namespace tutti::bench
