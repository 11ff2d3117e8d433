#pragma once
// A reference world for the benchmark's tests: the inputs of every rank are made by the
// table entry's own fillInput (as the peers running the same benchmark would), and rank q's
// output is computed from the collective's definition (schedule/collective.h) with plain
// element copies and a brute-force reduction, sharing no code with collectives.cc. Only the
// operators sum and max are modelled: enough to check every block and index mapping.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/collectives.h"
#include "bench/data.h"

namespace tutti::bench::world {

using Bytes = std::vector<unsigned char>;

/// The Counts of a call whose count argument is `param` (the inverse of collectiveCounts()
/// for counts that are already whole rank multiples).
inline Counts countsForParam(Collective kind, std::size_t param, int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  switch (kind) {
    case Collective::kAllGather:
    case Collective::kGather:
    case Collective::kReduceScatter:
    case Collective::kScatter:
    case Collective::kAllToAll:
      return collectiveCounts(kind, param * n, nranks);
    default:
      return collectiveCounts(kind, param, nranks);
  }
}

/// The entry whose calls go to `kind` (kSend: sendrecv).
inline const CollectiveEntry& entryOf(Collective kind) {
  for (const CollectiveEntry& entry : collectiveTable()) {
    if (entry.kind == kind) return entry;
  }
  return collectiveTable()[0];
}

/// Rank r's input, made as rank r would make it.
inline Bytes inputOf(const CollectiveEntry& entry, const Counts& counts, DataContext context,
                     int r) {
  context.rank = r;
  Bytes out(counts.send * dataTypeSize(context.dtype) + 1);
  entry.fillInput(out.data(), counts, context);
  return out;
}

/// a op b, for sum and max, with integer wrap-around and signed comparison where the type is.
inline Element combine(const Element& a, const Element& b, DataType dtype, ReduceOp op) {
  if (a.floating) {
    return Element{true, 0, op == ReduceOp::kMax ? std::max(a.real, b.real) : a.real + b.real};
  }
  const unsigned width = static_cast<unsigned>(dataTypeSize(dtype) * 8);
  const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
  if (op != ReduceOp::kMax) return Element{false, (a.bits + b.bits) & mask, 0.0};
  const bool isSigned =
      dtype == DataType::kInt8 || dtype == DataType::kInt32 || dtype == DataType::kInt64;
  if (!isSigned) return a.bits >= b.bits ? a : b;
  auto signedValue = [&](std::uint64_t bits) {
    if (width == 64) return static_cast<std::int64_t>(bits);
    const std::uint64_t sign = 1ull << (width - 1);
    return static_cast<std::int64_t>((bits ^ sign) - sign);
  };
  return signedValue(a.bits) >= signedValue(b.bits) ? a : b;
}

/// Writes rank context.rank's output into `out` (counts.recv elements) from every rank's
/// input, and returns how many leading elements the definition specifies on that rank.
inline std::size_t referenceOutput(Collective kind, const Counts& counts,
                                   const DataContext& context, const std::vector<Bytes>& inputs,
                                   void* out) {
  const DataType t = context.dtype;
  const std::size_t size = dataTypeSize(t);
  const std::size_t k = counts.param;
  const int n = context.nranks;
  const int q = context.rank;
  auto copy = [&](std::size_t to, int from, std::size_t index) {
    std::memcpy(static_cast<unsigned char*>(out) + to * size,
                inputs[static_cast<std::size_t>(from)].data() + index * size, size);
  };
  auto reduceAt = [&](std::size_t to, std::size_t index) {
    Element acc = loadElement(inputs[0].data(), index, t);
    for (int r = 1; r < n; ++r) {
      acc = combine(acc, loadElement(inputs[static_cast<std::size_t>(r)].data(), index, t), t,
                    context.op);
    }
    storeElement(out, to, t, acc);
  };
  const auto qi = static_cast<std::size_t>(q);
  switch (kind) {
    case Collective::kAllReduce:
      for (std::size_t j = 0; j < counts.recv; ++j) reduceAt(j, j);
      return counts.recv;
    case Collective::kReduce:
      if (q != context.root) return 0;
      for (std::size_t j = 0; j < counts.recv; ++j) reduceAt(j, j);
      return counts.recv;
    case Collective::kReduceScatter:
      for (std::size_t j = 0; j < k; ++j) reduceAt(j, qi * k + j);
      return k;
    case Collective::kBroadcast:
      for (std::size_t j = 0; j < counts.recv; ++j) copy(j, context.root, j);
      return counts.recv;
    case Collective::kGather:
      if (q != context.root) return 0;
      [[fallthrough]];
    case Collective::kAllGather:
      for (int b = 0; b < n; ++b) {
        for (std::size_t j = 0; j < k; ++j) copy(static_cast<std::size_t>(b) * k + j, b, j);
      }
      return counts.recv;
    case Collective::kScatter:
      for (std::size_t j = 0; j < k; ++j) copy(j, context.root, qi * k + j);
      return k;
    case Collective::kAllToAll:
      for (int b = 0; b < n; ++b) {
        for (std::size_t j = 0; j < k; ++j) {
          copy(static_cast<std::size_t>(b) * k + j, b, qi * k + j);
        }
      }
      return counts.recv;
    case Collective::kSend:  // sendrecv: from the previous rank
      for (std::size_t j = 0; j < counts.recv; ++j) copy(j, (q + n - 1) % n, j);
      return counts.recv;
    default:
      return 0;
  }
}

}  // namespace tutti::bench::world
