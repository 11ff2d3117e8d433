#include "schedule/symbolic_buffer.h"

#include <algorithm>

#include "base/assert.h"
#include "base/strings.h"

namespace tutti::verify {
namespace {

std::string termText(const Term& t, std::int64_t delta) {
  std::string ranks = t.rankHi - t.rankLo == 1 ? strFormat("in_%d", t.rankLo)
                                               : strFormat("in_%d..%d", t.rankLo, t.rankHi - 1);
  if (delta == 0) return ranks + "[j]";
  return ranks + strFormat("[j%+lld]", static_cast<long long>(delta));
}

}  // namespace

ValuePool::ValuePool() : begin_{0, 0} {}

ValueId ValuePool::add(const std::vector<Term>& terms) {
  if (terms.empty()) return kUninitialised;
  TUTTI_ASSERT_CMP(terms.front().delta, ==, 0);
  TUTTI_ASSERT_CMP(begin_.size(), <, std::size_t{0xffffffff});  // ids are 32 bits
  terms_.insert(terms_.end(), terms.begin(), terms.end());
  begin_.push_back(terms_.size());
  return static_cast<ValueId>(begin_.size() - 2);
}

SymbolicBuffer::SymbolicBuffer(std::uint64_t size, std::pmr::memory_resource* memory)
    : size_(size), cells_(memory) {
  if (size_ > 0) cells_.emplace(0, Cell{size_, 0, kUninitialised, false});
  hint_ = cells_.begin();
}

SymbolicBuffer::Map::iterator SymbolicBuffer::locate(std::uint64_t at) {
  auto holds = [&](Map::iterator it) { return it->first <= at && at < it->second.hi; };
  if (holds(hint_)) return hint_;
  if (auto next = std::next(hint_); next != cells_.end() && holds(next)) return hint_ = next;
  if (hint_ != cells_.begin() && holds(std::prev(hint_))) return hint_ = std::prev(hint_);
  return hint_ = std::prev(cells_.upper_bound(at));  // exists: the cells tile [0, size_)
}

SymbolicBuffer::Map::iterator SymbolicBuffer::cellAt(std::uint64_t at) {
  auto it = locate(at);
  if (it->first == at) return it;
  Cell right = it->second;
  it->second.hi = at;
  return cells_.emplace_hint(std::next(it), at, right);
}

void SymbolicBuffer::clearAfter(Map::iterator first, std::uint64_t hi) {
  if (first->second.hi > hi) {
    // One cell covers the whole range: its tail keeps its data.
    Cell rest = first->second;
    first->second.hi = hi;
    cells_.emplace_hint(std::next(first), hi, rest);
    return;
  }
  auto it = std::next(first);
  while (it != cells_.end() && it->first < hi) {
    if (it->second.hi <= hi) {
      it = cells_.erase(it);
      continue;
    }
    // The cell crossing hi now starts there (shifts are absolute: its data is unchanged).
    const Cell rest = it->second;
    it = cells_.erase(it);
    cells_.emplace_hint(it, hi, rest);
    break;
  }
  first->second.hi = hi;
}

bool SymbolicBuffer::mergeWithNext(Map::iterator it) {
  auto next = std::next(it);
  if (next == cells_.end()) return false;
  const Piece left{it->first, it->second.hi, it->second.shift, it->second.value,
                   it->second.finalized};
  const Piece right{next->first, next->second.hi, next->second.shift, next->second.value,
                    next->second.finalized};
  if (!left.continuesWith(right)) return false;
  it->second.hi = next->second.hi;
  cells_.erase(next);
  return true;
}

// Pieces come out relative to lo, shifts included: element lo + p holding input element
// lo + p + delta + shift is relative element p holding p + delta + (shift + lo).
void SymbolicBuffer::read(std::uint64_t lo, std::uint64_t count, std::vector<Piece>* out) {
  out->clear();
  if (count == 0) return;
  TUTTI_ASSERT_CMP(lo + count, <=, size_);
  const std::uint64_t hi = lo + count;
  for (auto it = locate(lo); it != cells_.end() && it->first < hi; ++it) {
    const Cell& c = it->second;
    Piece p;
    p.lo = std::max(it->first, lo) - lo;
    p.hi = std::min(c.hi, hi) - lo;
    p.value = c.value;
    p.finalized = c.finalized;
    p.shift = c.value == kUninitialised ? 0 : c.shift + static_cast<std::int64_t>(lo);
    out->push_back(p);
  }
}

void SymbolicBuffer::write(std::uint64_t lo, const std::vector<Piece>& pieces) {
  if (pieces.empty()) return;
  const std::uint64_t hi = lo + pieces.back().hi;
  if (hi == lo) return;
  TUTTI_ASSERT_CMP(hi, <=, size_);
  TUTTI_ASSERT_CMP(pieces.front().lo, ==, 0u);
  // One cell [lo, hi) that the first piece reuses; the others are inserted after it.
  const Map::iterator first = cellAt(lo);
  clearAfter(first, hi);
  Map::iterator last = first;
  bool placed = false;
  for (const Piece& p : pieces) {
    if (p.lo == p.hi) continue;
    const Cell cell{lo + p.hi,
                    p.value == kUninitialised ? 0 : p.shift - static_cast<std::int64_t>(lo),
                    p.value, p.finalized};
    if (!placed) {
      last->second = cell;
      placed = true;
      continue;
    }
    const Piece before{last->first, last->second.hi, last->second.shift, last->second.value,
                       last->second.finalized};
    if (before.continuesWith(Piece{lo + p.lo, cell.hi, cell.shift, cell.value, cell.finalized}))
      last->second.hi = cell.hi;
    else
      last = cells_.emplace_hint(std::next(last), lo + p.lo, cell);
  }
  // Keep runs maximal: join the neighbours on both sides when they hold the same data.
  // Cells may have been erased: the hint becomes the (surviving) cell holding lo.
  mergeWithNext(last);
  hint_ = first;
  if (first != cells_.begin()) {
    const auto before = std::prev(first);
    if (mergeWithNext(before)) hint_ = before;
  }
}

namespace {

// Merges two values' terms (deltas made effective with their shifts) into `out`, in
// canonical form. Returns the first rank present on both sides, or -1.
int mergeTerms(const ValuePool& pool, const Piece& a, const Piece& b, std::vector<Term>* out) {
  out->clear();
  std::size_t i = 0, j = 0;
  const std::size_t na = pool.size(a.value), nb = pool.size(b.value);
  while (i < na || j < nb) {
    Term t;
    const bool takeA =
        j == nb || (i < na && pool.term(a.value, i).rankLo < pool.term(b.value, j).rankLo);
    if (takeA) {
      t = pool.term(a.value, i++);
      t.delta += a.shift;
    } else {
      t = pool.term(b.value, j++);
      t.delta += b.shift;
    }
    if (!out->empty()) {
      Term& last = out->back();
      if (t.rankLo < last.rankHi) return t.rankLo;  // ranges meet: counted twice
      if (t.rankLo == last.rankHi && t.delta == last.delta) {
        last.rankHi = t.rankHi;
        continue;
      }
    }
    out->push_back(t);
  }
  return -1;
}

}  // namespace

// Walks both piece lists at once, cutting at every boundary of either: each cut is one
// element range where both operands are uniform, so its result is one value.
bool combinePieces(ValuePool& pool, const std::vector<Piece>& a, const std::vector<Piece>& b,
                   std::int64_t origin, std::vector<Piece>* out, std::vector<Term>* scratch,
                   CombineError* error) {
  out->clear();
  std::size_t i = 0, j = 0;
  std::uint64_t pos = 0;
  while (i < a.size() && j < b.size()) {
    const Piece& pa = a[i];
    const Piece& pb = b[j];
    const std::uint64_t end = std::min(pa.hi, pb.hi);
    auto fail = [&](int operand, std::string what) {
      *error = CombineError{pos, end, operand, std::move(what)};
      return false;
    };
    if (pa.value == kUninitialised || pb.value == kUninitialised)
      return fail(pa.value == kUninitialised ? 0 : 1, "is uninitialised");
    if (pa.finalized || pb.finalized)
      return fail(pa.finalized ? 0 : 1,
                  strFormat("is already finalized (it holds %s)",
                            describeValue(pool, pa.finalized ? pa : pb, origin).c_str()));
    const int twice = mergeTerms(pool, pa, pb, scratch);
    if (twice >= 0)
      return fail(-1, strFormat("would count rank %d's contribution twice: %s (op) %s", twice,
                                describeValue(pool, pa, origin).c_str(),
                                describeValue(pool, pb, origin).c_str()));
    Piece p;
    p.lo = pos;
    p.hi = end;
    p.shift = scratch->front().delta;
    for (Term& t : *scratch) t.delta -= p.shift;
    p.value = pool.add(*scratch);
    if (!out->empty() && out->back().continuesWith(p))
      out->back().hi = end;
    else
      out->push_back(p);
    pos = end;
    if (pa.hi == end) ++i;
    if (pb.hi == end) ++j;
  }
  TUTTI_ASSERT(i == a.size() && j == b.size());  // equally long operands
  return true;
}

std::string describeValue(const ValuePool& pool, const Piece& piece, std::int64_t origin) {
  if (piece.value == kUninitialised) return "nothing (uninitialised)";
  std::string text;
  for (std::size_t i = 0; i < pool.size(piece.value); ++i) {
    const Term& t = pool.term(piece.value, i);
    if (!text.empty()) text += " + ";
    text += termText(t, t.delta + piece.shift - origin);
  }
  return piece.finalized ? text + ", finalized" : text;
}

std::string describeTerms(const std::vector<Term>& terms) {
  std::string text;
  for (const Term& t : terms) {
    if (!text.empty()) text += " + ";
    text += termText(t, t.delta);
  }
  return text;
}

}  // namespace tutti::verify
