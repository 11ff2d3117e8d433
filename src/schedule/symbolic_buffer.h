#pragma once
// Symbolic buffer contents for the verifier: what every element holds, as intervals.
//
// An element holds a *value*: the input elements reduced into it so far, written as terms
// (rankLo, rankHi, delta): "input element p + delta of every rank in [rankLo, rankHi)",
// where p is the element's position. Data that moves together keeps one value and only its
// position changes, so a run of elements that moved together is one interval however long
// it is, and 1,024 ranks with large counts cost what their steps cost, not their elements.
//
// Values live in a ValuePool with their first term's delta factored out into the interval
// (its *shift*): moving an interval changes its shift only, and neighbours holding the same
// value under the same shift merge into one interval. A value is made once per reduction
// and never deduplicated (a hash table of a million values costs more, in cache misses,
// than all the rest of a reduction), so equal term lists may have different ids: whoever
// compares values against a definition compares terms. Canonical form of a term list:
// sorted by rankLo, rank ranges disjoint, neighbours with the same delta merged.

#include <cstdint>
#include <map>
#include <memory_resource>
#include <string>
#include <vector>

namespace tutti::verify {

/// Input element p + delta of every rank in [rankLo, rankHi) (p: the element's position).
struct Term {
  std::int32_t rankLo = 0;
  std::int32_t rankHi = 0;
  std::int64_t delta = 0;
  bool operator==(const Term& other) const = default;
};

using ValueId = std::uint32_t;
/// The value of elements nothing has written: no term.
inline constexpr ValueId kUninitialised = 0;

/// Term lists, appended and never removed. Ids are dense and stable; kUninitialised is the
/// empty list.
class ValuePool {
 public:
  ValuePool();

  /// Stores `terms` (canonical, first delta 0) and returns its id.
  ValueId add(const std::vector<Term>& terms);
  /// Number of terms of `value`, and term `i` of it.
  std::size_t size(ValueId value) const { return begin_[value + 1] - begin_[value]; }
  const Term& term(ValueId value, std::size_t i) const { return terms_[begin_[value] + i]; }

 private:
  std::vector<Term> terms_;
  std::vector<std::uint64_t> begin_;  // value v's terms: terms_[begin_[v], begin_[v + 1])
};

/// A run of elements [lo, hi) holding `value` with `shift` added to every term's delta,
/// optionally finalized. Pieces handed out by SymbolicBuffer::read() use positions relative
/// to the start of the region read; shifts are relative to the same origin.
struct Piece {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::int64_t shift = 0;
  ValueId value = kUninitialised;
  bool finalized = false;

  /// True when `next`, starting where this ends, holds the same data (so they merge).
  bool continuesWith(const Piece& next) const {
    return hi == next.lo && value == next.value && finalized == next.finalized &&
           (value == kUninitialised || shift == next.shift);
  }
};

/// One address space of one rank: a map from element intervals to values covering
/// [0, size), uninitialised at first.
class SymbolicBuffer {
 public:
  /// `memory` backs the interval map's nodes; it must outlive the buffer.
  SymbolicBuffer(std::uint64_t size, std::pmr::memory_resource* memory);

  std::uint64_t size() const { return size_; }
  /// Replaces *out with the pieces covering [lo, lo + count), positions relative to lo.
  /// (Not const: it remembers where it looked, for the next access.)
  void read(std::uint64_t lo, std::uint64_t count, std::vector<Piece>* out);
  /// Stores `pieces` (relative positions, covering [0, n) in order) at [lo, lo + n).
  void write(std::uint64_t lo, const std::vector<Piece>& pieces);

 private:
  struct Cell {
    std::uint64_t hi = 0;
    std::int64_t shift = 0;  // absolute: element x holds input element x + delta + shift
    ValueId value = kUninitialised;
    bool finalized = false;
  };
  using Map = std::pmr::map<std::uint64_t, Cell>;

  // The cell containing `at` (< size_). Tries the cell used last and its neighbours before
  // searching the tree: algorithms walk their buffers chunk by chunk, up or down, and a
  // tree search over a thousand cells is a chain of cache misses.
  Map::iterator locate(std::uint64_t at);
  // The cell starting at `at` (< size_), splitting the one that contains it if needed.
  Map::iterator cellAt(std::uint64_t at);
  // Makes `first` end at `hi`, removing or trimming the cells it then overlaps.
  void clearAfter(Map::iterator first, std::uint64_t hi);
  // Joins `it` and the cell after it when they hold the same data; true if it did.
  bool mergeWithNext(Map::iterator it);

  std::uint64_t size_;
  Map cells_;           // keyed by each interval's first element; the intervals tile [0, size_)
  Map::iterator hint_;  // the cell used last (valid between calls)
};

/// Why a combine was refused, and where (relative positions of the operands).
struct CombineError {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  int operand = -1;  // 0: `a` is at fault, 1: `b`, -1: the two together
  std::string what;
};

/// Element-wise reduction of two equally long piece lists: *out = a (op) b, where each
/// element's terms are the union of the two. Refuses (returns false and fills *error) an
/// uninitialised or finalized operand, and a rank contributing to both sides (it would be
/// counted twice). Error texts describe values at positions j = origin + relative position.
/// `scratch` is reused storage.
bool combinePieces(ValuePool& pool, const std::vector<Piece>& a, const std::vector<Piece>& b,
                   std::int64_t origin, std::vector<Piece>* out, std::vector<Term>* scratch,
                   CombineError* error);

/// "in_0..3[j] + in_5[j+4], finalized": what `piece` holds at positions j, where position j
/// is `origin` + the piece-relative position (so j can be a buffer index).
std::string describeValue(const ValuePool& pool, const Piece& piece, std::int64_t origin);
/// The same for a term list whose deltas are already relative to j.
std::string describeTerms(const std::vector<Term>& terms);

}  // namespace tutti::verify
