#include "common/collective_check.h"

#include <algorithm>
#include <cstring>

#include "base/strings.h"
#include "algorithms/algorithm.h"
#include "bench/data.h"
#include "schedule/collective.h"

namespace tutti::test {
namespace {

using bench::Element;

bool isV(Collective k) {
  return k == Collective::kGatherV || k == Collective::kScatterV || k == Collective::kAllGatherV ||
         k == Collective::kReduceScatterV || k == Collective::kAllToAllV;
}

// The spec the library will see for this case on `rank` (used for layouts and definitions).
CollectiveSpec specOf(const CollectiveCase& c, int rank, int n) {
  CollectiveSpec s;
  s.kind = c.kind;
  s.rank = rank;
  s.size = n;
  s.count = c.count;
  s.dtype = c.dtype;
  s.op = c.op;
  s.root = c.root;
  s.inPlace = c.inPlace;
  s.hosts = c.hosts;
  if (isV(c.kind)) {
    auto counts = vCounts(c.count, n);
    s.counts.assign(counts.begin(), counts.end());
    auto displs = vDispls(counts);
    s.displs.assign(displs.begin(), displs.end());
    if (c.kind == Collective::kAllToAllV) {
      std::size_t off = 0;
      s.counts.clear();
      s.displs.clear();
      for (int b = 0; b < n; ++b) {
        s.counts.push_back(alltoallvCount(c.count, rank, b));
        s.displs.push_back(off);
        off += s.counts.back() + 1;
      }
      off = 0;
      for (int b = 0; b < n; ++b) {
        s.recvCounts.push_back(alltoallvCount(c.count, b, rank));
        s.recvDispls.push_back(off);
        off += s.recvCounts.back() + 1;
      }
      if (c.inPlace) {
        // In place needs identical send and receive layouts on every rank, so what r sends
        // b must equal what b sends r: use a symmetric count.
        off = 0;
        for (int b = 0; b < n; ++b) {
          const std::size_t sym = alltoallvCount(c.count, std::min(rank, b), std::max(rank, b));
          s.counts[static_cast<std::size_t>(b)] = s.recvCounts[static_cast<std::size_t>(b)] = sym;
          s.displs[static_cast<std::size_t>(b)] = s.recvDispls[static_cast<std::size_t>(b)] = off;
          off += sym + 1;
        }
      }
    }
  }
  return s;
}

// Value of rank r's input element i. Reductions use values whose reduction is exact;
// data-movement collectives use the benchmark's movement values (exact, distinct across
// ranks).
Element inputOf(const CollectiveCase& c, int r, std::uint64_t i, int n) {
  if (isReduction(c.kind)) return bench::inputValue(r, i, c.dtype, c.op, n);
  return bench::movementValue(r, i, c.dtype, n);
}

// The expected value of output element p on rank q, or false when the definition leaves
// it unspecified (gaps of v-collectives).
bool expectedAt(const CollectiveCase& c, const std::vector<CollectiveSpec>& specs, int q,
                std::uint64_t p, Element* out) {
  const CollectiveSpec& s = specs[static_cast<std::size_t>(q)];
  const int n = s.size;
  const std::uint64_t k = s.count;
  auto blockOf = [&](const std::vector<std::uint64_t>& counts, const std::vector<std::uint64_t>& displs,
                     int* b, std::uint64_t* j) {
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (p >= displs[i] && p < displs[i] + counts[i]) {
        *b = static_cast<int>(i);
        *j = p - displs[i];
        return true;
      }
    }
    return false;
  };
  int b = 0;
  std::uint64_t j = 0;
  switch (c.kind) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      *out = bench::expectedAllReduce(p, c.dtype, c.op, n);
      return true;
    case Collective::kReduceScatter:
      *out = bench::expectedAllReduce(static_cast<std::uint64_t>(q) * k + p, c.dtype, c.op, n);
      return true;
    case Collective::kReduceScatterV: {
      std::uint64_t offset = 0;
      for (int i = 0; i < q; ++i) offset += s.counts[static_cast<std::size_t>(i)];
      *out = bench::expectedAllReduce(offset + p, c.dtype, c.op, n);
      return true;
    }
    case Collective::kBroadcast:
      *out = inputOf(c, c.root, p, n);
      return true;
    case Collective::kAllGather:
    case Collective::kGather:
      *out = inputOf(c, static_cast<int>(p / k), p % k, n);
      return true;
    case Collective::kScatter:
      *out = inputOf(c, c.root, static_cast<std::uint64_t>(q) * k + p, n);
      return true;
    case Collective::kAllToAll:
      *out = inputOf(c, static_cast<int>(p / k), static_cast<std::uint64_t>(q) * k + p % k, n);
      return true;
    case Collective::kAllGatherV:
    case Collective::kGatherV:
      if (!blockOf(s.counts, s.displs, &b, &j)) return false;
      *out = inputOf(c, b, j, n);
      return true;
    case Collective::kScatterV:
      *out = inputOf(c, c.root, s.displs[static_cast<std::size_t>(q)] + p, n);
      return true;
    case Collective::kAllToAllV: {
      if (!blockOf(s.recvCounts, s.recvDispls, &b, &j)) return false;
      const CollectiveSpec& sender = specs[static_cast<std::size_t>(b)];
      *out = inputOf(c, b, sender.displs[static_cast<std::size_t>(q)] + j, n);
      return true;
    }
    default:
      return false;
  }
}

Status call(Communicator& comm, const CollectiveCase& c, const CollectiveSpec& s,
            const void* in, void* out) {
  CallOptions o;
  o.algorithm = c.algorithm;
  o.timeout = std::chrono::seconds(120);
  std::vector<std::size_t> counts(s.counts.begin(), s.counts.end());
  std::vector<std::size_t> displs(s.displs.begin(), s.displs.end());
  std::vector<std::size_t> rcounts(s.recvCounts.begin(), s.recvCounts.end());
  std::vector<std::size_t> rdispls(s.recvDispls.begin(), s.recvDispls.end());
  const std::size_t mine = counts.empty() ? 0 : counts[static_cast<std::size_t>(s.rank)];
  auto run = [&](auto blocking, auto async) { return c.async ? async().wait() : blocking(); };
  switch (c.kind) {
    case Collective::kAllReduce:
      return run([&] { return comm.allreduce(in, out, c.count, c.dtype, c.op, o); },
                 [&] { return comm.allreduceAsync(in, out, c.count, c.dtype, c.op, o); });
    case Collective::kBroadcast:
      return run([&] { return comm.broadcast(in, out, c.count, c.dtype, c.root, o); },
                 [&] { return comm.broadcastAsync(in, out, c.count, c.dtype, c.root, o); });
    case Collective::kReduce:
      return run([&] { return comm.reduce(in, out, c.count, c.dtype, c.op, c.root, o); },
                 [&] { return comm.reduceAsync(in, out, c.count, c.dtype, c.op, c.root, o); });
    case Collective::kAllGather:
      return run([&] { return comm.allgather(in, out, c.count, c.dtype, o); },
                 [&] { return comm.allgatherAsync(in, out, c.count, c.dtype, o); });
    case Collective::kReduceScatter:
      return run([&] { return comm.reduceScatter(in, out, c.count, c.dtype, c.op, o); },
                 [&] { return comm.reduceScatterAsync(in, out, c.count, c.dtype, c.op, o); });
    case Collective::kGather:
      return run([&] { return comm.gather(in, out, c.count, c.dtype, c.root, o); },
                 [&] { return comm.gatherAsync(in, out, c.count, c.dtype, c.root, o); });
    case Collective::kScatter:
      return run([&] { return comm.scatter(in, out, c.count, c.dtype, c.root, o); },
                 [&] { return comm.scatterAsync(in, out, c.count, c.dtype, c.root, o); });
    case Collective::kAllToAll:
      return run([&] { return comm.alltoall(in, out, c.count, c.dtype, o); },
                 [&] { return comm.alltoallAsync(in, out, c.count, c.dtype, o); });
    case Collective::kAllGatherV:
      return run([&] { return comm.allgatherv(in, mine, out, counts, displs, c.dtype, o); },
                 [&] { return comm.allgathervAsync(in, mine, out, counts, displs, c.dtype, o); });
    case Collective::kGatherV:
      return run([&] { return comm.gatherv(in, mine, out, counts, displs, c.dtype, c.root, o); },
                 [&] { return comm.gathervAsync(in, mine, out, counts, displs, c.dtype, c.root, o); });
    case Collective::kScatterV:
      return run([&] { return comm.scatterv(in, counts, displs, out, mine, c.dtype, c.root, o); },
                 [&] { return comm.scattervAsync(in, counts, displs, out, mine, c.dtype, c.root, o); });
    case Collective::kReduceScatterV:
      return run([&] { return comm.reduceScatterv(in, out, counts, c.dtype, c.op, o); },
                 [&] { return comm.reduceScattervAsync(in, out, counts, c.dtype, c.op, o); });
    case Collective::kAllToAllV:
      return run([&] { return comm.alltoallv(in, counts, displs, out, rcounts, rdispls, c.dtype, o); },
                 [&] { return comm.alltoallvAsync(in, counts, displs, out, rcounts, rdispls, c.dtype, o); });
    case Collective::kBarrier:
      return run([&] { return comm.barrier(o); }, [&] { return comm.barrierAsync(o); });
    default:
      return Status(ErrorCode::kNotSupported, "case not covered by the checker");
  }
}

std::string elementText(const Element& e) {
  return e.floating ? strFormat("%g", e.real) : strFormat("%llu", static_cast<unsigned long long>(e.bits));
}

}  // namespace

std::vector<std::size_t> vCounts(std::size_t count, int n) {
  std::vector<std::size_t> out;
  for (int r = 0; r < n; ++r) {
    // Every third rank contributes nothing; the others differ in size.
    std::size_t v = r % 3 == 1 ? 0 : count + static_cast<std::size_t>((r * 5) % 4);
    out.push_back(count == 0 ? 0 : v);
  }
  return out;
}

std::vector<std::size_t> vDispls(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> out;
  std::size_t off = 0;
  for (std::size_t c : counts) {
    out.push_back(off);
    off += c + 1;
  }
  return out;
}

std::size_t alltoallvCount(std::size_t count, int from, int to) {
  if (count == 0) return 0;
  return static_cast<std::size_t>((from * 3 + to * 5) % 7 == 0 ? 0 : count + static_cast<std::size_t>((from + 2 * to) % 3));
}

bool algorithmApplies(const CollectiveCase& c, int rank, int n) {
  if (c.algorithm.empty()) return true;
  const CollectiveSpec spec = specOf(c, rank, n);
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == c.kind && c.algorithm == info.name) return info.unsupportedReason(spec).empty();
  }
  return false;
}

std::string describeCase(const CollectiveCase& c) {
  std::string text = strFormat("%s count=%zu %s", collectiveName(c.kind), c.count, dataTypeName(c.dtype));
  if (isReduction(c.kind)) text += strFormat(" %s", reduceOpName(c.op));
  if (isRooted(c.kind)) text += strFormat(" root=%d", c.root);
  text += c.inPlace ? " in-place" : " out-of-place";
  if (!c.algorithm.empty()) text += " algo=" + c.algorithm;
  if (c.async) text += " async";
  return text;
}

std::string runAndCheck(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size();
  const int q = comm.rank();
  std::vector<CollectiveSpec> specs;
  for (int r = 0; r < n; ++r) specs.push_back(specOf(c, r, n));
  const CollectiveSpec& s = specs[static_cast<std::size_t>(q)];
  const BufferLayout layout = bufferLayout(s);
  const std::size_t elem = dataTypeSize(c.dtype);
  // One allocation holds both buffers when they alias; a guard element after each buffer
  // catches writes past the end.
  std::vector<char> inStore((layout.inputCount + 1) * elem), outStore((layout.outputCount + 1) * elem);
  char* in = inStore.data();
  char* out = outStore.data();
  std::memset(out, 0x5a, outStore.size());
  if (layout.inputInOutputAt) in = out + *layout.inputInOutputAt * elem;
  if (layout.outputInInputAt) out = in + *layout.outputInInputAt * elem;
  for (std::uint64_t i = 0; i < layout.inputCount; ++i)
    bench::storeElement(in, i, c.dtype, inputOf(c, q, i, n));
  std::vector<char> guard(inStore.end() - static_cast<std::ptrdiff_t>(elem), inStore.end());
  std::vector<char> outGuard(outStore.end() - static_cast<std::ptrdiff_t>(elem), outStore.end());
  Status st = call(comm, c, s, layout.inputCount || layout.inputInOutputAt ? in : nullptr,
                   layout.outputCount || layout.outputInInputAt ? out : nullptr);
  const std::string what = describeCase(c);
  if (!st.ok()) return what + ": " + st.toString() + "\n";
  std::uint64_t wrong = 0;
  std::string first;
  for (std::uint64_t p = 0; p < layout.outputCount; ++p) {
    Element expected;
    if (!expectedAt(c, specs, q, p, &expected)) continue;
    Element got = bench::loadElement(out, p, c.dtype);
    if (!bench::sameElement(got, expected)) {
      if (wrong++ == 0)
        first = strFormat(", first at %llu (got %s, expected %s)", static_cast<unsigned long long>(p),
                          elementText(got).c_str(), elementText(expected).c_str());
    }
  }
  if (!layout.inputInOutputAt && !layout.outputInInputAt &&
      (std::memcmp(guard.data(), inStore.data() + inStore.size() - elem, elem) != 0 ||
       std::memcmp(outGuard.data(), outStore.data() + outStore.size() - elem, elem) != 0))
    return what + ": wrote past the end of a buffer\n";
  if (wrong > 0)
    return what + strFormat(": %llu wrong elements", static_cast<unsigned long long>(wrong)) + first + "\n";
  return "";
}

}  // namespace tutti::test
