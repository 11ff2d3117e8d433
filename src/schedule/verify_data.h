#pragma once
// What the verifier's simulation computes (verifier.h, items 1 and 5): the symbolic
// contents of every rank's buffers as steps run, compared at the end with the collective's
// definition; and, for barriers, which ranks each rank has heard from.

#include <cstdint>
#include <memory_resource>
#include <vector>

#include "schedule/collective.h"
#include "schedule/symbolic_buffer.h"
#include "schedule/verify_common.h"
#include "schedule/verify_progress.h"

namespace tutti::verify {

/// One stretch of a rank's output as the definition fixes it: output elements j in
/// [lo, hi) hold `terms` (deltas relative to j), finalized as `finalized` says.
struct ExpectedBlock {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::vector<Term> terms;
  enum class Final : std::uint8_t { kNo, kYes, kEither } finalized = Final::kNo;
};

/// The definition of collective.h for rank q's output, as blocks (elements no block covers,
/// such as the gaps between v-collective displacements, are unspecified). `specs` are all
/// ranks' specs, consistent with each other.
std::vector<ExpectedBlock> expectedOutput(const std::vector<CollectiveSpec>& specs, int q);

/// Symbolic memory of every rank: each input starts as "rank r's element p", everything
/// else uninitialised; steps move and reduce values as the executor moves and reduces
/// bytes. Errors (kInternal, naming rank, step and elements): reducing uninitialised or
/// finalized data, counting a rank twice, finalizing twice or finalizing nothing.
class SymbolicRun final : public StepObserver {
 public:
  SymbolicRun(const std::vector<CollectiveSpec>& specs, const std::vector<Schedule>& schedules,
              const std::vector<RankBuffers>& buffers);

  Status onIssue(int, StepId) override { return Status::Ok(); }
  Status onLocal(int rank, StepId step) override;
  Status onTransfer(int sender, StepId sendStep, int receiver, StepId recvStep) override;

  /// After the run: every rank's output against expectedOutput(). kInternal naming the
  /// rank, the output elements, what they hold and what the definition says.
  Status checkOutputs();

 private:
  // One rank's address spaces. Each rank has its own node pool, so that a rank's interval
  // maps sit together in memory rather than interleaved with every other rank's.
  struct Memory {
    std::pmr::unsynchronized_pool_resource nodes;
    std::vector<SymbolicBuffer> spaces;
  };

  void read(int rank, const Region& region, std::vector<Piece>* out);
  void write(int rank, const Region& region, const std::vector<Piece>& pieces);
  // dst (of `rank`'s `step`) = a (op) b; the names describe the operands in errors.
  Status reduceInto(int rank, StepId step, const std::vector<Piece>& a, const char* aName,
                    const std::vector<Piece>& b, const char* bName);
  Status finalize(int rank, StepId step);
  Status checkRank(int q);

  const std::vector<CollectiveSpec>& specs_;
  const std::vector<Schedule>& schedules_;
  const std::vector<RankBuffers>& buffers_;
  ValuePool pool_;
  std::vector<Memory> memory_;
  // Reused across steps, so a step allocates nothing once warm.
  std::vector<Piece> a_, b_, c_;
  std::vector<Term> terms_;
};

/// The barrier's property through knowledge: a step knows its own rank, what the steps it
/// depends on know, and, for a receive, what the sending step knew. With `inOrderIssue`, a
/// step also knows what the rank knew when it issued the step before (the executor issues
/// in order, so step i starts after step i - 1 started, after i - 1's dependencies
/// completed). When every step is done, each rank must know every rank: it cannot leave
/// before all have entered.
class BarrierKnowledge final : public StepObserver {
 public:
  BarrierKnowledge(const std::vector<Schedule>& schedules, const Matching& matching,
                   bool inOrderIssue);

  Status onIssue(int rank, StepId step) override;
  Status onLocal(int, StepId) override { return Status::Ok(); }
  Status onTransfer(int sender, StepId sendStep, int receiver, StepId recvStep) override;

  /// kInternal naming a rank that can leave without having heard from some rank.
  Status check() const;

 private:
  std::uint64_t* bits(int rank, StepId step) {
    return &bits_[(matching_.base[static_cast<std::size_t>(rank)] + step) * words_];
  }
  const std::uint64_t* bits(int rank, StepId step) const {
    return &bits_[(matching_.base[static_cast<std::size_t>(rank)] + step) * words_];
  }

  const std::vector<Schedule>& schedules_;
  const Matching& matching_;
  const bool inOrderIssue_;
  std::size_t words_;
  std::vector<std::uint64_t> bits_;    // per global step, a set of ranks
  std::vector<std::uint64_t> issued_;  // per rank: what it knew when it last issued a step
};

}  // namespace tutti::verify
