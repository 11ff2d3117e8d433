#include "schedule/verify_data.h"

#include <algorithm>

#include "base/macros.h"
#include "base/strings.h"

namespace tutti::verify {
namespace {

using Final = ExpectedBlock::Final;

// Output elements [lo, lo + count) hold input element j + delta of ranks [rankLo, rankHi).
void addBlock(std::vector<ExpectedBlock>* blocks, std::uint64_t lo, std::uint64_t count, int rankLo,
              int rankHi, std::int64_t delta, Final finalized = Final::kNo) {
  if (count == 0) return;
  blocks->push_back(ExpectedBlock{lo, lo + count, {Term{rankLo, rankHi, delta}}, finalized});
}

std::int64_t signedOf(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// Elements of the ranks before q in reducescatterv's concatenated input.
std::uint64_t prefix(const std::vector<std::uint64_t>& counts, int q) {
  std::uint64_t sum = 0;
  for (int b = 0; b < q; ++b) sum += counts[static_cast<std::size_t>(b)];
  return sum;
}

// "3" or "5..7" for ranks [lo, hi), after a comma unless first.
std::string rangeText(bool first, int lo, int hi) {
  const char* sep = first ? "" : ", ";
  return hi - lo == 1 ? strFormat("%s%d", sep, lo) : strFormat("%s%d..%d", sep, lo, hi - 1);
}

// Rank ranges in `want` that `have` lacks, as "3, 5..7".
std::string missingRanks(const std::vector<Term>& want, const std::vector<Term>& have) {
  std::string text;
  for (const Term& w : want) {
    int from = w.rankLo;
    for (const Term& h : have) {
      if (h.rankHi <= from || h.rankLo >= w.rankHi) continue;
      if (h.rankLo > from) text += rangeText(text.empty(), from, h.rankLo);
      from = std::max(from, h.rankHi);
    }
    if (from < w.rankHi) text += rangeText(text.empty(), from, w.rankHi);
  }
  return text;
}

// Why `p` does not satisfy `block`; `sameTerms` when only the finalization differs.
std::string mismatchReason(const ValuePool& pool, const Piece& p, const ExpectedBlock& block,
                           bool sameTerms) {
  if (sameTerms)
    return p.finalized ? "finalized, but this collective does not reduce"
                       : "never finalized (kAvg would not be divided)";
  if (p.value == kUninitialised) return "never written";
  std::vector<Term> have;  // the effective terms
  for (std::size_t i = 0; i < pool.size(p.value); ++i) {
    have.push_back(pool.term(p.value, i));
    have.back().delta += p.shift;
  }
  const std::string missing = missingRanks(block.terms, have);
  return missing.empty() ? "wrong ranks or wrong elements" : "missing ranks " + missing;
}

}  // namespace

// The table of collective.h, case by case. Deltas are (input index) - (output index):
// out_q[j] = in_b[j + delta]; a v-collective's blocks sit at their displacements.
std::vector<ExpectedBlock> expectedOutput(const std::vector<CollectiveSpec>& specs, int q) {
  const CollectiveSpec& s = specs[static_cast<std::size_t>(q)];
  const int n = s.size;
  const std::uint64_t c = s.count;
  const auto uq = static_cast<std::uint64_t>(q);
  // A reduction over one rank may skip the finalization: dividing by 1 changes nothing.
  const Final reduced = n == 1 ? Final::kEither : Final::kYes;
  std::vector<ExpectedBlock> blocks;
  switch (s.kind) {
    case Collective::kAllReduce:
      addBlock(&blocks, 0, c, 0, n, 0, reduced);
      break;
    case Collective::kBroadcast:
      addBlock(&blocks, 0, c, s.root, s.root + 1, 0);
      break;
    case Collective::kReduce:
      if (q == s.root) addBlock(&blocks, 0, c, 0, n, 0, reduced);
      break;
    case Collective::kReduceScatter:
      addBlock(&blocks, 0, c, 0, n, signedOf(uq * c), reduced);
      break;
    case Collective::kScatter:
      addBlock(&blocks, 0, c, s.root, s.root + 1, signedOf(uq * c));
      break;
    case Collective::kAllGather:
    case Collective::kGather:
      if (s.kind == Collective::kGather && q != s.root) break;
      for (int b = 0; b < n; ++b) {
        const std::uint64_t at = static_cast<std::uint64_t>(b) * c;
        addBlock(&blocks, at, c, b, b + 1, -signedOf(at));
      }
      break;
    case Collective::kAllToAll:
      for (int b = 0; b < n; ++b) {
        const std::uint64_t at = static_cast<std::uint64_t>(b) * c;
        addBlock(&blocks, at, c, b, b + 1, signedOf(uq * c) - signedOf(at));
      }
      break;
    case Collective::kGatherV:
    case Collective::kAllGatherV:
      if (s.kind == Collective::kGatherV && q != s.root) break;
      for (int b = 0; b < n; ++b) {
        const auto ub = static_cast<std::size_t>(b);
        addBlock(&blocks, s.displs[ub], s.counts[ub], b, b + 1, -signedOf(s.displs[ub]));
      }
      break;
    case Collective::kScatterV:
      addBlock(&blocks, 0, s.counts[uq], s.root, s.root + 1, signedOf(s.displs[uq]));
      break;
    case Collective::kReduceScatterV:
      addBlock(&blocks, 0, s.counts[uq], 0, n, signedOf(prefix(s.counts, q)), reduced);
      break;
    case Collective::kAllToAllV:
      for (int b = 0; b < n; ++b) {
        const auto ub = static_cast<std::size_t>(b);
        const std::uint64_t sentAt = specs[ub].displs[uq];  // where b keeps what it sends q
        addBlock(&blocks, s.recvDispls[ub], s.recvCounts[ub], b, b + 1,
                 signedOf(sentAt) - signedOf(s.recvDispls[ub]));
      }
      break;
    case Collective::kRecv:
      if (s.peer >= 0) addBlock(&blocks, 0, c, s.peer, s.peer + 1, 0);
      break;
    case Collective::kBarrier:
    case Collective::kSend:
      break;
  }
  return blocks;
}

SymbolicRun::SymbolicRun(const std::vector<CollectiveSpec>& specs,
                         const std::vector<Schedule>& schedules,
                         const std::vector<RankBuffers>& buffers)
    : specs_(specs), schedules_(schedules), buffers_(buffers), memory_(schedules.size()) {
  for (std::size_t r = 0; r < schedules.size(); ++r) {
    memory_[r].spaces.reserve(kSpaceCount);
    for (int space = 0; space < kSpaceCount; ++space)
      memory_[r].spaces.emplace_back(buffers[r].spaceSize(space), &memory_[r].nodes);
    // Rank r's input element p holds itself: one term, no shift.
    const std::uint64_t length = buffers[r].length(BufferKind::kInput);
    const ValueId own = pool_.add({Term{static_cast<int>(r), static_cast<int>(r) + 1, 0}});
    write(static_cast<int>(r), Region{BufferKind::kInput, 0, length},
          {Piece{0, length, 0, own, false}});
  }
}

void SymbolicRun::read(int rank, const Region& region, std::vector<Piece>* out) {
  const auto r = static_cast<std::size_t>(rank);
  const Extent e = buffers_[r].map(region);
  memory_[r].spaces[static_cast<std::size_t>(e.space)].read(e.lo, region.count, out);
}

void SymbolicRun::write(int rank, const Region& region, const std::vector<Piece>& pieces) {
  if (region.count == 0) return;
  const auto r = static_cast<std::size_t>(rank);
  const Extent e = buffers_[r].map(region);
  memory_[r].spaces[static_cast<std::size_t>(e.space)].write(e.lo, pieces);
}

Status SymbolicRun::reduceInto(int rank, StepId step, const std::vector<Piece>& a,
                               const char* aName, const std::vector<Piece>& b, const char* bName) {
  const Schedule& s = schedules_[static_cast<std::size_t>(rank)];
  const Region& dst = s.steps[step].dst;
  CombineError e;
  if (!combinePieces(pool_, a, b, signedOf(dst.offset), &c_, &terms_, &e)) {
    const Region where{dst.buffer, dst.offset + e.lo, e.hi - e.lo};
    const char* who = e.operand == 0 ? aName : e.operand == 1 ? bName : "result";
    return stepError(s, step,
                     strFormat("reducing %s with %s for %s: the %s %s", aName, bName,
                               regionText(where).c_str(), who, e.what.c_str()));
  }
  write(rank, dst, c_);
  return Status::Ok();
}

// Finalizing is an operation on values like any other: it must find every element
// computed (a reduction result or a copy of one) and not yet finalized.
Status SymbolicRun::finalize(int rank, StepId step) {
  const Schedule& s = schedules_[static_cast<std::size_t>(rank)];
  const Region& dst = s.steps[step].dst;
  read(rank, dst, &a_);
  for (Piece& p : a_) {
    const Region where{dst.buffer, dst.offset + p.lo, p.hi - p.lo};
    if (p.value == kUninitialised)
      return stepError(s, step,
                       strFormat("finalizes %s, which holds nothing (uninitialised)",
                                 regionText(where).c_str()));
    if (p.finalized)
      return stepError(
          s, step,
          strFormat("finalizes %s a second time (it holds %s)", regionText(where).c_str(),
                    describeValue(pool_, p, signedOf(dst.offset)).c_str()));
    p.finalized = true;
  }
  write(rank, dst, a_);
  return Status::Ok();
}

Status SymbolicRun::onLocal(int rank, StepId step) {
  const Step& st = schedules_[static_cast<std::size_t>(rank)].steps[step];
  if (st.op == OpCode::kCopy) {
    read(rank, st.src, &a_);
    write(rank, st.dst, a_);
  } else {
    // reduce: dst = dst (op) src.
    read(rank, st.dst, &a_);
    read(rank, st.src, &b_);
    TUTTI_RETURN_IF_ERROR(reduceInto(rank, step, a_, "destination", b_, "source"));
  }
  return st.finalize ? finalize(rank, step) : Status::Ok();
}

// The message is read from the sender when it is delivered rather than when it was posted:
// checkHazards() has proved that nothing writes a region while a send of it is in flight,
// so both moments see the same contents.
Status SymbolicRun::onTransfer(int sender, StepId sendStep, int receiver, StepId recvStep) {
  const Step& from = schedules_[static_cast<std::size_t>(sender)].steps[sendStep];
  const Step& to = schedules_[static_cast<std::size_t>(receiver)].steps[recvStep];
  read(sender, sentRegion(from), &b_);
  if (from.forwardOnly) {
    // Its result went out with the message; what the sender's dst holds now is unspecified.
    c_.assign(1, Piece{0, from.dst.count, 0, kUninitialised, false});
    if (from.dst.count > 0) write(sender, from.dst, c_);
  }
  if (to.op == OpCode::kRecvReduce || to.op == OpCode::kRecvReduceSend) {
    read(receiver, to.src, &a_);
    TUTTI_RETURN_IF_ERROR(reduceInto(receiver, recvStep, a_, "source", b_, "received data"));
  } else {
    write(receiver, to.dst, b_);
  }
  return to.finalize ? finalize(receiver, recvStep) : Status::Ok();
}

Status SymbolicRun::checkOutputs() {
  for (std::size_t q = 0; q < schedules_.size(); ++q)
    TUTTI_RETURN_IF_ERROR(checkRank(static_cast<int>(q)));
  return Status::Ok();
}

// Compares interval by interval: the output's pieces against the definition's blocks, so
// the cost is the number of pieces, not of elements.
Status SymbolicRun::checkRank(int q) {
  const CollectiveSpec& spec = specs_[static_cast<std::size_t>(q)];
  const std::uint64_t length = buffers_[static_cast<std::size_t>(q)].length(BufferKind::kOutput);
  std::vector<Piece> pieces;
  read(q, Region{BufferKind::kOutput, 0, length}, &pieces);
  for (const ExpectedBlock& block : expectedOutput(specs_, q)) {
    auto it = std::partition_point(pieces.begin(), pieces.end(),
                                   [&](const Piece& p) { return p.hi <= block.lo; });
    for (; it != pieces.end() && it->lo < block.hi; ++it) {
      const Piece& p = *it;
      bool same = p.value != kUninitialised && pool_.size(p.value) == block.terms.size();
      for (std::size_t i = 0; same && i < block.terms.size(); ++i) {
        Term t = pool_.term(p.value, i);
        t.delta += p.shift;
        same = t == block.terms[i];
      }
      const bool finalOk =
          block.finalized == Final::kEither || p.finalized == (block.finalized == Final::kYes);
      if (same && finalOk) continue;
      const Region where{BufferKind::kOutput, std::max(p.lo, block.lo),
                         std::min(p.hi, block.hi) - std::max(p.lo, block.lo)};
      const std::string why = mismatchReason(pool_, p, block, same);
      return Status(ErrorCode::kInternal,
                    strFormat("rank %d %s holds %s, but %s defines %s%s: %s", q,
                              regionText(where).c_str(), describeValue(pool_, p, 0).c_str(),
                              collectiveName(spec.kind), describeTerms(block.terms).c_str(),
                              block.finalized == Final::kYes ? ", finalized" : "", why.c_str()));
    }
  }
  return Status::Ok();
}

BarrierKnowledge::BarrierKnowledge(const std::vector<Schedule>& schedules, const Matching& matching,
                                   bool inOrderIssue)
    : schedules_(schedules),
      matching_(matching),
      inOrderIssue_(inOrderIssue),
      words_((schedules.size() + 63) / 64),
      bits_(matching.base.back() * words_, 0),
      issued_(schedules.size() * words_, 0) {}

Status BarrierKnowledge::onIssue(int rank, StepId step) {
  const Schedule& s = schedules_[static_cast<std::size_t>(rank)];
  const Step& st = s.steps[step];
  std::uint64_t* mine = bits(rank, step);
  std::uint64_t* before = &issued_[static_cast<std::size_t>(rank) * words_];
  mine[rank / 64] |= std::uint64_t{1} << (rank % 64);
  for (std::uint32_t d = 0; d < st.depCount; ++d) {
    const std::uint64_t* dep = bits(rank, s.deps[st.depBegin + d]);
    for (std::size_t w = 0; w < words_; ++w) mine[w] |= dep[w];
  }
  if (!inOrderIssue_) return Status::Ok();
  for (std::size_t w = 0; w < words_; ++w) {
    mine[w] |= before[w];
    before[w] = mine[w];
  }
  return Status::Ok();
}

Status BarrierKnowledge::onTransfer(int sender, StepId sendStep, int receiver, StepId recvStep) {
  const std::uint64_t* theirs = bits(sender, sendStep);
  std::uint64_t* mine = bits(receiver, recvStep);
  for (std::size_t w = 0; w < words_; ++w) mine[w] |= theirs[w];
  return Status::Ok();
}

// A rank leaves when all its steps are complete, so it knows the union of what they know.
Status BarrierKnowledge::check() const {
  const int n = static_cast<int>(schedules_.size());
  std::vector<std::uint64_t> known(words_);
  for (int r = 0; r < n; ++r) {
    std::fill(known.begin(), known.end(), 0);
    known[static_cast<std::size_t>(r / 64)] |= std::uint64_t{1} << (r % 64);
    for (StepId i = 0; i < schedules_[static_cast<std::size_t>(r)].steps.size(); ++i) {
      for (std::size_t w = 0; w < words_; ++w) known[w] |= bits(r, i)[w];
    }
    int heard = 0, unheard = -1;
    for (int x = 0; x < n; ++x) {
      if (known[static_cast<std::size_t>(x / 64)] >> (x % 64) & 1)
        ++heard;
      else if (unheard < 0)
        unheard = x;
    }
    if (unheard >= 0)
      return Status(ErrorCode::kInternal,
                    strFormat("barrier: rank %d can leave before rank %d has entered: none of its "
                              "receives, directly or through the steps they depend on, follows "
                              "rank %d's entry (it has heard from %d of %d ranks)",
                              r, unheard, unheard, heard, n));
  }
  return Status::Ok();
}

}  // namespace tutti::verify
