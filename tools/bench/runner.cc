#include "bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>

#include "base/assert.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bench/data.h"
#include "tutti/memory.h"

namespace tutti::bench {
namespace {

// Page alignment gives the library's vector code aligned buffers, as cudaMalloc'd buffers
// are for nccl-tests.
constexpr std::size_t kBufferAlignment = 4096;

// A zeroed, page-aligned buffer: from the heap, or from tutti::memAlloc (-R 1). Zeroing
// writes every page once, so that page faults happen here and not inside timed operations.
class AlignedBuffer {
 public:
  static Result<AlignedBuffer> allocate(std::size_t bytes, bool shared) {
    if (shared) {
      TUTTI_ASSIGN_OR_RETURN(void* memory, memAlloc(bytes == 0 ? 1 : bytes));
      return AlignedBuffer(static_cast<unsigned char*>(memory), true);
    }
    void* memory = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{kBufferAlignment},
                                  std::nothrow);
    if (memory == nullptr) {
      return Status(ErrorCode::kSystemError,
                    strFormat("cannot allocate a %s benchmark buffer", humanBytes(bytes).c_str()));
    }
    std::memset(memory, 0, bytes);
    return AlignedBuffer(static_cast<unsigned char*>(memory), false);
  }

  unsigned char* data() const { return data_.get(); }

 private:
  struct Deleter {
    bool shared = false;
    void operator()(unsigned char* p) const {
      if (shared)
        (void)memFree(p);
      else
        ::operator delete(p, std::align_val_t{kBufferAlignment});
    }
  };
  AlignedBuffer(unsigned char* data, bool shared) : data_(data, Deleter{shared}) {}
  std::unique_ptr<unsigned char, Deleter> data_;
};

// Rounds the raw sizes for one data type, dropping repeats of the previous row.
std::vector<Counts> countsForType(const CollectiveEntry& entry,
                                  const std::vector<std::uint64_t>& sizes, DataType dtype,
                                  int nranks) {
  const std::size_t typeSize = dataTypeSize(dtype);
  std::vector<Counts> out;
  for (const std::uint64_t size : sizes) {
    const Counts counts = collectiveCounts(entry.kind, size / typeSize, nranks);
    if (!out.empty() && rowBytes(out.back(), typeSize) == rowBytes(counts, typeSize) &&
        out.back().param == counts.param) {
      continue;
    }
    out.push_back(counts);
  }
  return out;
}

std::string describeRow(const CollectiveEntry& entry, const RowPlan& plan) {
  if (!entry.sized) return std::string(entry.name());
  std::string text = strFormat("%s of %llu bytes (%zu x %s", std::string(entry.name()).c_str(),
                               static_cast<unsigned long long>(plan.bytes), plan.counts.param,
                               dataTypeName(plan.dtype));
  if (plan.op) text += strFormat(", %s", reduceOpName(*plan.op));
  if (plan.root >= 0) text += strFormat(", root %d", plan.root);
  return text + ")";
}

// Wrong elements and bus bandwidth summed over the placements of some rows.
struct Totals {
  std::int64_t wrong = 0;
  double busbw = 0;
  std::size_t placements = 0;

  void add(const RowResult& row) {
    add(row.outOfPlace);
    if (row.inPlace) add(*row.inPlace);
  }
  void add(const PlacementResult& placement) {
    wrong += placement.wrong.value_or(0);
    busbw += placement.busbwGBs;
    ++placements;
  }
  double meanBusbw() const {
    return placements == 0 ? 0.0 : busbw / static_cast<double>(placements);
  }
};

// One collective's rows with their algorithms, resolved before anything runs.
struct CollectivePlan {
  const CollectiveEntry* entry = nullptr;
  std::vector<RowPlan> rows;
  /// Per row, the algorithm each --algo candidate runs (the library's choice resolved).
  std::vector<std::vector<std::string>> algorithms;
  /// Calls (row x placement) proven by the verifier, with --verify.
  std::size_t verifiedCalls = 0;
};

class Runner {
 public:
  Runner(BenchComm& comm, const BenchOptions& options, std::FILE* out)
      : comm_(comm), options_(options), out_(out) {}

  Result<RunSummary> run();

 private:
  Result<CollectivePlan> planCollective(const CollectiveEntry& entry,
                                        const std::vector<std::uint64_t>& sizes) const;
  Status allocateBuffers(const std::vector<CollectivePlan>& plans);
  Status runCollective(const CollectivePlan& plan, RunSummary& summary);
  Result<std::vector<RowResult>> runRow(const RowPlan& plan,
                                        const std::vector<std::string>& algorithms);
  Result<std::string> algorithmFor(const CollectiveEntry& entry, const RowPlan& plan,
                                   const std::string& forced) const;
  Result<std::size_t> verifyRow(const CollectiveEntry& entry, const RowPlan& plan,
                                const std::string& forced) const;
  Result<std::vector<PlacementResult>> runPlacement(const RowPlan& plan,
                                                    const std::vector<std::string>& algorithms,
                                                    bool inPlace);
  Result<std::vector<double>> timeOperations(const RowPlan& plan, const CallArgs& call,
                                             const std::vector<std::string>& algorithms);
  Result<std::int64_t> checkOperation(const RowPlan& plan, const CallArgs& call,
                                      const std::string& algorithm, bool inPlace);
  Result<std::vector<double>> combineTimes(std::vector<double> seconds);
  void* inputBuffer(const RowPlan& plan, bool inPlace) const;
  CallArgs placeCall(const RowPlan& plan, bool inPlace) const;
  DataContext dataContext(const RowPlan& plan) const;
  void print(const std::string& text);

  BenchComm& comm_;
  const BenchOptions& options_;
  std::FILE* out_;
  // The collective being run, and how many leading output elements its current row
  // defines on this rank (what the check compares).
  const CollectiveEntry* entry_ = nullptr;
  std::size_t checkedCount_ = 0;
  std::optional<AlignedBuffer> send_;
  std::optional<AlignedBuffer> recv_;
  std::optional<AlignedBuffer> expected_;
};

Result<RunSummary> Runner::run() {
  TUTTI_ASSIGN_OR_RETURN(std::vector<std::uint64_t> sizes, sizeSweep(options_));
  // Every collective's rows and algorithms are resolved before anything runs or prints, so
  // an --algo that does not apply to some row fails at once, on every rank alike.
  RunSummary summary;
  std::vector<CollectivePlan> plans;
  for (const CollectiveEntry* entry : options_.collectives) {
    TUTTI_ASSIGN_OR_RETURN(CollectivePlan plan, planCollective(*entry, sizes));
    plans.push_back(std::move(plan));
  }
  TUTTI_RETURN_IF_ERROR(allocateBuffers(plans));
  for (const CollectivePlan& plan : plans) TUTTI_RETURN_IF_ERROR(runCollective(plan, summary));
  Totals totals;
  for (const RowResult& row : summary.rows) totals.add(row);
  summary.wrong = totals.wrong;
  summary.avgBusbwGBs = totals.meanBusbw();
  if (options_.collectives.size() > 1) {
    print(strFormat("# All %zu collectives: out of bounds values : %lld %s\n#\n", plans.size(),
                    static_cast<long long>(summary.wrong), summary.wrong == 0 ? "OK" : "FAILED"));
  }
  if (comm_.rank() == 0 && !options_.jsonPath.empty()) {
    TUTTI_RETURN_IF_ERROR(writeFileAtomically(options_.jsonPath, formatJson(summary.rows)));
  }
  return summary;
}

Result<CollectivePlan> Runner::planCollective(const CollectiveEntry& entry,
                                              const std::vector<std::uint64_t>& sizes) const {
  CollectivePlan plan;
  plan.entry = &entry;
  TUTTI_ASSIGN_OR_RETURN(plan.rows, planRows(entry, options_, sizes, comm_.size()));
  for (const RowPlan& row : plan.rows) {
    std::vector<std::string>& names = plan.algorithms.emplace_back();
    for (const std::string& forced : options_.algorithms) {
      TUTTI_ASSIGN_OR_RETURN(std::string algorithm, algorithmFor(entry, row, forced));
      // A segment forced with the algorithm ("ring@256K") stays in what the row reports.
      const std::size_t at = forced.find('@');
      if (at != std::string::npos) algorithm += forced.substr(at);
      names.push_back(std::move(algorithm));
      if (options_.verify) {
        TUTTI_ASSIGN_OR_RETURN(std::size_t verified, verifyRow(entry, row, forced));
        plan.verifiedCalls += verified;
      }
    }
  }
  return plan;
}

Status Runner::allocateBuffers(const std::vector<CollectivePlan>& plans) {
  std::size_t maxBytes = 0;
  std::size_t maxExpected = 0;
  for (const CollectivePlan& plan : plans) {
    for (const RowPlan& row : plan.rows) {
      maxBytes = std::max<std::size_t>(maxBytes, row.bytes);
      maxExpected = std::max(maxExpected, row.counts.recv * dataTypeSize(row.dtype));
    }
  }
  // Both buffers hold a whole row: in place, the input and output share the receive
  // buffer, which must then hold the larger of the two (nccl-tests sizes them alike).
  const bool shared = options_.registerBuffers == 1;
  TUTTI_ASSIGN_OR_RETURN(send_, AlignedBuffer::allocate(maxBytes, shared));
  TUTTI_ASSIGN_OR_RETURN(recv_, AlignedBuffer::allocate(maxBytes, shared));
  if (options_.check > 0) {
    TUTTI_ASSIGN_OR_RETURN(expected_, AlignedBuffer::allocate(maxExpected, false));
  }
  return Status::Ok();
}

// One collective's table, as one nccl-tests binary prints it.
Status Runner::runCollective(const CollectivePlan& plan, RunSummary& summary) {
  entry_ = plan.entry;
  std::string verified;
  if (options_.verify) {
    verified = strFormat("# Schedules verified : %zu calls, every rank's schedule, before running\n",
                         plan.verifiedCalls);
  }
  print(formatSettings(options_, entry_->name(), comm_.size()) + verified + formatColumnHeader());
  Totals totals;
  for (std::size_t i = 0; i < plan.rows.size(); ++i) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<RowResult> rows, runRow(plan.rows[i], plan.algorithms[i]));
    for (RowResult& row : rows) {
      print(formatRow(row));
      totals.add(row);
      summary.rows.push_back(std::move(row));
    }
  }
  print(formatSummary(totals.wrong, options_.check > 0, totals.meanBusbw()));
  return Status::Ok();
}

// One row per candidate, measured together: each placement's timed calls of all candidates
// take turns (timeOperations).
Result<std::vector<RowResult>> Runner::runRow(const RowPlan& plan,
                                              const std::vector<std::string>& algorithms) {
  // The expectation does not depend on the placement: compute it once per row. A
  // collective that moves no data has nothing to compare.
  checkedCount_ = 0;
  if (options_.check > 0 && entry_->sized) {
    checkedCount_ = entry_->fillExpected(expected_->data(), plan.counts, dataContext(plan));
  }
  RowResult row;
  row.collective = std::string(entry_->name());
  row.bytes = plan.bytes;
  row.count = plan.counts.param;
  row.dtype = plan.dtype;
  row.sized = entry_->sized;
  row.op = plan.op;
  row.root = plan.root;
  row.ranks = comm_.size();
  row.iters = itersFor(options_, plan.bytes);
  row.warmupIters = warmupItersFor(options_, plan.bytes);
  row.average = options_.average;
  std::vector<RowResult> rows(algorithms.size(), row);
  for (std::size_t c = 0; c < rows.size(); ++c) {
    rows[c].algorithm = algorithms[c];
    if (options_.algorithms.size() > 1) rows[c].candidate = candidateName(options_.algorithms[c]);
  }
  // The calls force what --algo forces; the library's choice ("auto") runs unforced, as a
  // program's calls do, so that its own learning (the contenders the tuner tries) runs too.
  const std::vector<std::string>& forced = options_.algorithms;
  TUTTI_ASSIGN_OR_RETURN(std::vector<PlacementResult> outOfPlace,
                         runPlacement(plan, forced, /*inPlace=*/false));
  for (std::size_t c = 0; c < rows.size(); ++c) rows[c].outOfPlace = outOfPlace[c];
  if (entry_->inPlace && options_.inPlace) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<PlacementResult> inPlace,
                           runPlacement(plan, forced, /*inPlace=*/true));
    for (std::size_t c = 0; c < rows.size(); ++c) rows[c].inPlace = inPlace[c];
  }
  // The library's choice as it stands after the row: what it learnt to keep, if it learnt.
  for (std::size_t c = 0; c < rows.size(); ++c) {
    if (!forced[c].empty()) continue;
    TUTTI_ASSIGN_OR_RETURN(rows[c].algorithm, algorithmFor(*entry_, plan, forced[c]));
  }
  return rows;
}

Result<std::string> Runner::algorithmFor(const CollectiveEntry& entry, const RowPlan& plan,
                                         const std::string& forced) const {
  Result<std::string> name = comm_.algorithmFor(entry.kind, plan.counts.param, plan.dtype, forced);
  if (name.ok()) return name;
  if (forced.empty()) {
    return name.status().withContext("choosing the algorithm for " + describeRow(entry, plan));
  }
  return Status(ErrorCode::kInvalidArgument,
                strFormat("--algo %s does not apply to %s: %s", forced.c_str(),
                          describeRow(entry, plan).c_str(), name.status().message().c_str()));
}

// Both placements the row will run, as the library will run them. Every rank verifies
// the same calls (the schedules of all ranks), so all stop alike on a finding.
Result<std::size_t> Runner::verifyRow(const CollectiveEntry& entry, const RowPlan& plan,
                                      const std::string& forced) const {
  std::size_t verified = 0;
  // One rank's sendrecv is a message to itself: no schedules of two ranks to verify.
  if (entry.kind == Collective::kSend && comm_.size() == 1) return verified;
  for (const bool inPlace : {false, true}) {
    if (inPlace && (!entry.inPlace || !options_.inPlace)) continue;
    CallShape call;
    call.kind = entry.kind;
    call.count = plan.counts.param;
    call.dtype = plan.dtype;
    call.op = plan.op.value_or(ReduceOp::kSum);
    call.root = std::max(plan.root, 0);
    call.inPlace = inPlace;
    Status status = comm_.verifyCall(call, forced);
    if (!status.ok()) {
      return status.withContext("--verify: " + describeRow(entry, plan) +
                                (inPlace ? ", in place" : ", out of place") +
                                (options_.algorithms.size() > 1 ? ", " + candidateName(forced) : ""));
    }
    ++verified;
  }
  return verified;
}

// Every candidate's measurement of one placement of the row, in candidate order, each run as
// `algorithms` force it (empty: the library chooses).
Result<std::vector<PlacementResult>> Runner::runPlacement(
    const RowPlan& plan, const std::vector<std::string>& algorithms, bool inPlace) {
  const std::string context =
      describeRow(*entry_, plan) + (inPlace ? ", in place" : ", out of place");
  const CallArgs call = placeCall(plan, inPlace);
  entry_->fillInput(inputBuffer(plan, inPlace), plan.counts, dataContext(plan));
  Result<std::vector<double>> seconds = timeOperations(plan, call, algorithms);
  if (!seconds.ok()) return seconds.status().withContext(context);
  const std::size_t typeSize = dataTypeSize(plan.dtype);
  const bool several = options_.algorithms.size() > 1;
  std::vector<PlacementResult> results;
  for (std::size_t c = 0; c < algorithms.size(); ++c) {
    const std::string& algorithm = algorithms[c];
    PlacementResult& result = results.emplace_back();
    result.timeUs = (*seconds)[c] * 1e6;
    result.algbwGBs = algorithmBandwidth(
        algorithmBytes(entry_->kind, plan.counts, typeSize, comm_.size()), (*seconds)[c]);
    result.busbwGBs = result.algbwGBs * busBandwidthFactor(entry_->kind, comm_.size());
    // A collective that moves no data has nothing to check: its #wrong stays N/A.
    for (int i = 0; entry_->sized && i < options_.check; ++i) {
      Result<std::int64_t> wrong = checkOperation(plan, call, algorithm, inPlace);
      if (!wrong.ok()) {
        return wrong.status().withContext(
            context + (several ? ", " + candidateName(options_.algorithms[c]) : "") + ", checking");
      }
      result.wrong = *wrong;
      // As nccl-tests: one failed check is enough, further ones would repeat it.
      if (*wrong != 0) break;
    }
  }
  return results;
}

// The time per operation of each candidate. Each runs its warm-ups, in turn; then the
// timed calls, split into blocks (blocksFor), go candidate by candidate, block by block,
// each block starting one candidate later: A B C, B C A, C A B ..., so that a drift of the
// machine's speed (another process, where the hypervisor puts the vCPUs) falls on all of
// them alike, and so does following a given other one; each block of several candidates
// starts with an untimed call of its candidate. With one candidate and one block this
// is nccl-tests' loop. A barrier before each block lines the ranks up, so the clock measures
// the collective rather than a late rank; the timed calls of a block run back to back. Each
// block's time per operation is combined over ranks (-a); a candidate's time is their mean
// weighted by calls (the mean per operation) with up to two blocks, and their median with
// three or more, so that a block disturbed by another process's burst does not move it.
Result<std::vector<double>> Runner::timeOperations(const RowPlan& plan, const CallArgs& call,
                                                   const std::vector<std::string>& candidates) {
  TUTTI_ASSERT(plan.counts.param == call.count);
  const int iters = itersFor(options_, plan.bytes);
  const int warmups = warmupItersFor(options_, plan.bytes);
  const int blocks = blocksFor(options_, iters);
  for (const std::string& algorithm : candidates) {
    for (int i = 0; i < warmups; ++i) TUTTI_RETURN_IF_ERROR(entry_->run(comm_, call, algorithm));
  }
  const std::size_t count = candidates.size();
  // Seconds per operation of candidate c's block b, at [c * blocks + b].
  std::vector<double> perBlock(count * static_cast<std::size_t>(blocks), 0.0);
  std::vector<int> callsOf(static_cast<std::size_t>(blocks), 0);
  for (int b = 0; b < blocks; ++b) {
    // Calls of block b: the iters spread evenly, the first blocks taking the remainder.
    const int calls = iters / blocks + (b < iters % blocks ? 1 : 0);
    callsOf[static_cast<std::size_t>(b)] = calls;
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t c = (k + static_cast<std::size_t>(b)) % count;
      // Each block starts with one untimed call where several candidates take turns: the
      // others' calls since this one's last may have taken what it keeps between calls
      // (pooled buffers, whose pages fault in again; caches), which one call brings back.
      if (count > 1) TUTTI_RETURN_IF_ERROR(entry_->run(comm_, call, candidates[c]));
      TUTTI_RETURN_IF_ERROR(comm_.align());
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) {
        TUTTI_RETURN_IF_ERROR(entry_->run(comm_, call, candidates[c]));
      }
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      perBlock[c * static_cast<std::size_t>(blocks) + static_cast<std::size_t>(b)] =
          took.count() / calls;
    }
  }
  TUTTI_ASSIGN_OR_RETURN(perBlock, combineTimes(std::move(perBlock)));
  std::vector<double> out;
  for (std::size_t c = 0; c < count; ++c) {
    const auto first = perBlock.begin() + static_cast<std::ptrdiff_t>(c * static_cast<std::size_t>(blocks));
    std::vector<double> mine(first, first + blocks);
    if (blocks >= 3) {
      std::sort(mine.begin(), mine.end());
      const std::size_t mid = mine.size() / 2;
      out.push_back(mine.size() % 2 == 1 ? mine[mid] : (mine[mid - 1] + mine[mid]) / 2);
    } else {
      double total = 0;
      for (int b = 0; b < blocks; ++b) total += mine[static_cast<std::size_t>(b)] * callsOf[static_cast<std::size_t>(b)];
      out.push_back(total / iters);
    }
  }
  return out;
}

Result<std::int64_t> Runner::checkOperation(const RowPlan& plan, const CallArgs& call,
                                            const std::string& algorithm, bool inPlace) {
  const DataContext context = dataContext(plan);
  entry_->fillInput(inputBuffer(plan, inPlace), plan.counts, context);
  // Out of place, poison the output so that elements the call never writes are caught
  // (all-ones bytes are NaN in every floating type). In place it holds the input.
  if (!inPlace) std::memset(call.recv, 0xff, plan.counts.recv * dataTypeSize(plan.dtype));
  TUTTI_RETURN_IF_ERROR(entry_->run(comm_, call, algorithm));
  const std::int64_t local = static_cast<std::int64_t>(
      countWrong(call.recv, expected_->data(), checkedCount_, plan.dtype));
  std::int64_t total = 0;
  TUTTI_RETURN_IF_ERROR(
      comm_.allreduce(&local, &total, 1, DataType::kInt64, ReduceOp::kSum, std::string()));
  return total;
}

// Each rank measured its own times; -a picks which number describes the row. All ranks
// get the same result, so they agree on the whole report.
Result<std::vector<double>> Runner::combineTimes(std::vector<double> seconds) {
  // Rank 0's time is a sum in which every other rank contributes zero.
  ReduceOp op = ReduceOp::kSum;
  switch (options_.average) {
    case TimeAverage::kRank0:
      if (comm_.rank() != 0) std::fill(seconds.begin(), seconds.end(), 0.0);
      break;
    case TimeAverage::kMean: break;
    case TimeAverage::kMin: op = ReduceOp::kMin; break;
    case TimeAverage::kMax: op = ReduceOp::kMax; break;
  }
  std::vector<double> combined(seconds.size(), 0.0);
  TUTTI_RETURN_IF_ERROR(comm_.allreduce(seconds.data(), combined.data(), seconds.size(),
                                        DataType::kFloat64, op, std::string()));
  if (options_.average == TimeAverage::kMean) {
    for (double& value : combined) value /= comm_.size();
  }
  return combined;
}

// In place the input lies inside the receive buffer, at the rank's slot for collectives
// that split the buffer by rank (nccl-tests' in-place offsets).
void* Runner::inputBuffer(const RowPlan& plan, bool inPlace) const {
  if (!inPlace) return send_->data();
  const auto rank = static_cast<std::size_t>(comm_.rank());
  return recv_->data() + plan.counts.sendInPlaceOffset * rank * dataTypeSize(plan.dtype);
}

CallArgs Runner::placeCall(const RowPlan& plan, bool inPlace) const {
  const auto rank = static_cast<std::size_t>(comm_.rank());
  CallArgs call;
  call.send = inputBuffer(plan, inPlace);
  call.recv = recv_->data() +
              (inPlace ? plan.counts.recvInPlaceOffset * rank * dataTypeSize(plan.dtype) : 0);
  call.count = plan.counts.param;
  call.dtype = plan.dtype;
  call.op = plan.op.value_or(ReduceOp::kSum);
  call.root = plan.root;
  return call;
}

DataContext Runner::dataContext(const RowPlan& plan) const {
  return DataContext{comm_.rank(), comm_.size(), plan.dtype, plan.op.value_or(ReduceOp::kSum),
                     plan.root};
}

void Runner::print(const std::string& text) {
  if (comm_.rank() != 0 || out_ == nullptr) return;
  std::fputs(text.c_str(), out_);
  // Flushed per line so progress shows through tutti-run's pipes.
  std::fflush(out_);
}

}  // namespace

Result<std::vector<RowPlan>> planRows(const CollectiveEntry& entry, const BenchOptions& options,
                                      const std::vector<std::uint64_t>& sizes, int nranks) {
  TUTTI_ASSERT(!options.dtypes.empty());
  // A barrier's time does not depend on a size or type: one row stands for all of them.
  if (!entry.sized) {
    return std::vector<RowPlan>{RowPlan{options.dtypes[0], std::nullopt, -1, Counts{}, 0}};
  }
  std::vector<std::optional<ReduceOp>> ops;
  if (entry.reduces) {
    ops.assign(options.ops.begin(), options.ops.end());
  } else {
    ops.push_back(std::nullopt);
  }
  std::vector<int> roots;
  if (!entry.rooted) {
    roots.push_back(-1);
  } else if (options.root == -1) {
    for (int r = 0; r < nranks; ++r) roots.push_back(r);
  } else {
    TUTTI_CHECK_ARG(options.root < nranks, "-r/--root %d is not a rank of %d", options.root,
                    nranks);
    roots.push_back(options.root);
  }
  std::vector<RowPlan> plans;
  for (const DataType dtype : options.dtypes) {
    const std::vector<Counts> counts = countsForType(entry, sizes, dtype, nranks);
    for (const std::optional<ReduceOp>& op : ops) {
      for (const int root : roots) {
        for (const Counts& c : counts) {
          plans.push_back(RowPlan{dtype, op, root, c, rowBytes(c, dataTypeSize(dtype))});
        }
      }
    }
  }
  return plans;
}

Result<RunSummary> runBenchmark(BenchComm& comm, const BenchOptions& options, std::FILE* out) {
  TUTTI_ASSERT(!options.collectives.empty());
  Runner runner(comm, options, out);
  return runner.run();
}

}  // namespace tutti::bench
