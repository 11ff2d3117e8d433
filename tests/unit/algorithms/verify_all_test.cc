// Every algorithm of the registry, verified symbolically (schedule/verifier.h) over world
// sizes 1..17, 64 and 1024, awkward counts, in and out of place, several roots and segment
// sizes. Data-driven: an algorithm added to registry.cc is verified here without touching
// this file. Each registry entry is one test (and one that forces it by name), named after
// its collective and algorithm.
//
// Cost is bounded per entry. Segments of 1 and 7 elements, which multiply the steps by the
// number of segments, only run with counts that give a few segments per chunk (n + 1 and
// a medium count: about three segments of 7 per ring chunk, with a short last one); the
// large count runs unsegmented. At 1,024 ranks two shapes: count 0, and count n + 1 out of
// place, where every rank works and one chunk is longer (an algorithm with O(n) steps per
// rank has 2M steps there, one to two seconds of verification).

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"
#include "base/strings.h"
#include "schedule/verifier.h"

namespace tutti {
namespace {

constexpr std::uint64_t kLargeSegment = std::uint64_t{1} << 40;
constexpr std::uint64_t kLargeCount = 10007;  // odd, prime: no world divides it
constexpr int kMaxFailuresShown = 3;
constexpr int kBigWorld = 1024;

// One call shape; every rank's spec is derived from it.
struct Shape {
  int n = 1;
  std::uint64_t count = 0;
  bool inPlace = false;
  int root = 0;  // rooted collectives; the peer's partner for point-to-point
  std::uint64_t segment = kLargeSegment;
  const HostMap* hosts = nullptr;  // hierarchical algorithms: the ranks' hosts

  std::string text() const {
    return strFormat("n=%d count=%llu%s root=%d segment=%llu%s", n,
                     static_cast<unsigned long long>(count), inPlace ? " in-place" : "", root,
                     static_cast<unsigned long long>(segment),
                     hosts ? (" " + hosts->toString()).c_str() : "");
  }
};

// Host layouts of n ranks for the hierarchical algorithms: two hosts (uneven where n is
// odd), one rank per host, ranks dealt to two hosts in turn (hosts that are not blocks of
// consecutive ranks), three uneven hosts, and 8 hosts of 8 for 64 ranks. Built once;
// the specs point into it.
const std::vector<HostMap>& hostLayouts(int n) {
  static std::map<int, std::vector<HostMap>> cache;
  auto [it, fresh] = cache.try_emplace(n);
  if (!fresh || n < 2) return it->second;
  std::vector<HostMap>& maps = it->second;
  // 64 ranks: 8 hosts of 8. Not at 1,024: the all-gather's and reduce-scatter's host phase
  // has every rank message each local rank once per host (2M steps, 10 s per entry), and
  // 64 ranks already have several columns and hosts per column.
  if (n > 17) {
    if (n <= 64) maps.push_back(HostMap::blocks(std::vector<int>(static_cast<std::size_t>(n / 8), 8)));
    return maps;
  }
  maps.push_back(HostMap::blocks({n / 2, n - n / 2}));
  if (n >= 3 && n <= 8) maps.push_back(HostMap::blocks(std::vector<int>(static_cast<std::size_t>(n), 1)));
  if (n >= 4) {
    std::vector<int> dealt;
    for (int r = 0; r < n; ++r) dealt.push_back(r % 2);
    maps.push_back(HostMap::fromLabels(dealt));
  }
  if (n >= 6) maps.push_back(HostMap::blocks({1, 2, n - 3}));
  return maps;
}

// The shape itself, and where the algorithm needs hosts, the shape on each host layout.
std::vector<Shape> withHosts(const AlgorithmInfo& info, const Shape& shape, bool needsHosts) {
  if (!needsHosts) return {shape};
  std::vector<Shape> out;
  for (const HostMap& map : hostLayouts(shape.n)) {
    Shape s = shape;
    s.hosts = &map;
    out.push_back(s);
  }
  (void)info;
  return out;
}

// Hierarchical algorithms apply only where the spec carries hosts.
bool needsHosts(const AlgorithmInfo& info) {
  CollectiveSpec probe;
  probe.kind = info.kind;
  probe.size = 2;
  return !info.unsupportedReason(probe).empty() && !hierarchyUnsupported(probe).empty() &&
         std::string_view(info.name).substr(0, 4) == "hier";
}

std::vector<Shape> shapesFor(Collective kind);

// Every shape an entry is verified at.
std::vector<Shape> gridFor(const AlgorithmInfo& info) {
  const bool hosts = needsHosts(info);
  std::vector<Shape> grid;
  for (const Shape& flat : shapesFor(info.kind))
    for (const Shape& shape : withHosts(info, flat, hosts)) grid.push_back(shape);
  return grid;
}

bool isVector(Collective kind) {
  return kind == Collective::kGatherV || kind == Collective::kScatterV ||
         kind == Collective::kAllGatherV || kind == Collective::kReduceScatterV ||
         kind == Collective::kAllToAllV;
}

// Per-rank block sizes around `c` with zeros and uneven values: rank b's block (or what b
// sends to q for alltoallv; symmetric when `symmetric`, as in-place alltoallv needs).
std::uint64_t blockCount(std::uint64_t c, int b, int q, bool symmetric) {
  if (c == 0) return 0;
  const int key = symmetric ? b + q : b + 2 * q;
  if (key % 4 == 1) return 0;
  return c + static_cast<std::uint64_t>((b + q) % 3);
}

// Displacements in rank order, leaving a gap of one element after every odd block.
std::vector<std::uint64_t> displsWithGaps(const std::vector<std::uint64_t>& counts) {
  std::vector<std::uint64_t> displs(counts.size());
  std::uint64_t at = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    displs[b] = at;
    at += counts[b] + (b % 2);
  }
  return displs;
}

void fillVectorArrays(const Shape& shape, int q, CollectiveSpec* spec) {
  const std::size_t n = static_cast<std::size_t>(shape.n);
  spec->counts.assign(n, 0);
  for (int b = 0; b < shape.n; ++b) {
    // alltoallv: what q sends to b; the others: rank b's block.
    spec->counts[static_cast<std::size_t>(b)] = spec->kind == Collective::kAllToAllV
                                                    ? blockCount(shape.count, q, b, shape.inPlace)
                                                    : blockCount(shape.count, b, 0, false);
  }
  if (spec->kind == Collective::kReduceScatterV) return;
  spec->displs = displsWithGaps(spec->counts);
  if (spec->kind != Collective::kAllToAllV) return;
  spec->recvCounts.assign(n, 0);
  for (int b = 0; b < shape.n; ++b)
    spec->recvCounts[static_cast<std::size_t>(b)] = blockCount(shape.count, b, q, shape.inPlace);
  spec->recvDispls = displsWithGaps(spec->recvCounts);
}

CollectiveSpec specFor(Collective kind, const Shape& shape, int rank) {
  CollectiveSpec s;
  s.kind = kind;
  s.rank = rank;
  s.size = shape.n;
  s.count = shape.count;
  s.op = ReduceOp::kAvg;  // the finalization must happen exactly once
  s.root = shape.root;
  s.inPlace = shape.inPlace;
  s.segmentCount = shape.segment;
  s.hosts = shape.hosts;
  if (isVector(kind)) fillVectorArrays(shape, rank, &s);
  return s;
}

// True where `count` is a per-rank block of a buffer of n blocks (so the buffer is n times
// larger than the count).
bool countsBlocks(Collective kind) {
  switch (kind) {
    case Collective::kAllGather:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return true;
    default:
      return isVector(kind);
  }
}

// Counts that some rank's chunk is awkward for: none, one element (most chunks empty),
// n - 1 and n + 1 (one chunk empty, one longer), and a medium count with ~3 segments of 7
// per chunk. The large count keeps buffers near 10,007 elements: per-rank blocks of it
// would give block-pipelined algorithms n times the work without testing anything new.
std::uint64_t mediumCount(Collective kind, int n) {
  return countsBlocks(kind) ? 23 : 23 * static_cast<std::uint64_t>(n) + 1;
}

std::vector<std::uint64_t> countsFor(Collective kind, int n) {
  const auto u = static_cast<std::uint64_t>(n);
  const std::uint64_t large =
      countsBlocks(kind) ? std::max(kLargeCount / u, u + 3) | 1 : kLargeCount;
  std::vector<std::uint64_t> counts{0, 1, u - 1, u + 1, mediumCount(kind, n), large};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::vector<int> rootsFor(Collective kind, int n) {
  if (!isRooted(kind) && !isPointToPoint(kind)) return {0};
  std::vector<int> roots{0, n - 1, n / 2};
  if (isPointToPoint(kind)) roots.erase(roots.begin());  // the partner of rank 0
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

std::vector<Shape> shapesFor(Collective kind) {
  std::vector<int> worlds;
  for (int n = 1; n <= 17; ++n) worlds.push_back(n);
  worlds.push_back(64);
  const bool noData = kind == Collective::kBarrier;
  const bool p2p = isPointToPoint(kind);
  std::vector<Shape> shapes;
  for (int n : worlds) {
    for (std::uint64_t count : noData ? std::vector<std::uint64_t>{0} : countsFor(kind, n)) {
      for (bool inPlace : {false, true}) {
        if (inPlace && (noData || p2p)) continue;
        for (int root : rootsFor(kind, n)) {
          for (std::uint64_t segment : {std::uint64_t{1}, std::uint64_t{7}, kLargeSegment}) {
            if (noData && segment != kLargeSegment) continue;
            // Small segments multiply the steps: a few segments per chunk are enough.
            if (segment == 1 && count > static_cast<std::uint64_t>(n) + 1) continue;
            if (segment == 7 && count > std::max<std::uint64_t>(n + 1, mediumCount(kind, n)))
              continue;
            // Multi-segment pipelines are exercised in the small worlds; at 64 ranks they
            // cost minutes (tens of millions of steps) and find nothing the small worlds do
            // not, so the big worlds move whole chunks.
            if (segment != kLargeSegment && n > 17) continue;
            shapes.push_back(Shape{n, count, inPlace, root, segment});
          }
        }
      }
    }
  }
  // 1,024 ranks: nothing to move, and every rank at work with one chunk longer.
  shapes.push_back(Shape{kBigWorld, 0, false, kBigWorld - 1, kLargeSegment});
  if (!noData)
    shapes.push_back(Shape{kBigWorld, kBigWorld + 1, false, kBigWorld / 2, kLargeSegment});
  return shapes;
}

// The registry entry that serves the other end of a point-to-point pair.
const AlgorithmInfo* partnerFor(const CollectiveSpec& spec) {
  auto chosen = selectAlgorithm(spec, "");
  return chosen.ok() ? *chosen : nullptr;
}

// Builds every rank's spec and schedule for `info` at `shape`; false (with *why) when the
// algorithm, or a point-to-point partner, does not apply.
bool buildWorld(const AlgorithmInfo& info, const Shape& shape, std::vector<CollectiveSpec>* specs,
                std::vector<Schedule>* schedules, std::string* why) {
  specs->clear();
  schedules->clear();
  const bool p2p = isPointToPoint(info.kind);
  if (p2p && shape.n < 2) {
    *why = "one rank has no peer";
    return false;
  }
  const Collective other = info.kind == Collective::kSend ? Collective::kRecv : Collective::kSend;
  for (int r = 0; r < shape.n; ++r) {
    CollectiveSpec s = specFor(info.kind, shape, r);
    const AlgorithmInfo* builder = &info;
    if (p2p) {
      // Rank 0 runs the entry under test with rank `root`; every other rank is idle.
      s.peer = r == 0 ? shape.root : r == shape.root ? 0 : -1;
      if (s.peer < 0) s.count = 0;
      if (r == shape.root) {
        s.kind = other;
        builder = partnerFor(s);
        if (builder == nullptr) {
          *why = strFormat("no %s algorithm to pair with", collectiveName(other));
          return false;
        }
      }
    }
    specs->push_back(s);
    if (p2p && s.peer < 0) {
      schedules->push_back(std::move(ScheduleBuilder(r, shape.n)).build());
      continue;
    }
    *why = builder->unsupportedReason(s);
    if (!why->empty()) return false;
    schedules->push_back(builder->build(s));
  }
  return true;
}

class VerifyAll : public testing::TestWithParam<std::size_t> {};

TEST_P(VerifyAll, EveryShape) {
  const AlgorithmInfo& info = algorithmRegistry()[GetParam()];
  const auto start = std::chrono::steady_clock::now();
  std::size_t verified = 0, unsupported = 0, steps = 0;
  int failures = 0;
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  std::string why;
  for (const Shape& shape : gridFor(info)) {
    if (!buildWorld(info, shape, &specs, &schedules, &why)) {
      ++unsupported;
      continue;
    }
    for (const Schedule& s : schedules) steps += s.steps.size();
    Status st = verifySchedules(specs, schedules);
    if (st.ok()) {
      ++verified;
      continue;
    }
    ADD_FAILURE() << info.name << " (" << collectiveName(info.kind) << ") at " << shape.text()
                  << ":\n  " << st.toString();
    if (++failures == kMaxFailuresShown) break;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Shown with every run: how much of the grid applies, and what it cost.
  std::printf("  %s %s: %zu shapes verified, %zu not applicable, %zu steps, %.1f s\n",
              collectiveName(info.kind), info.name, verified, unsupported, steps, seconds);
  EXPECT_GT(verified, 0u) << info.name << " (" << collectiveName(info.kind)
                          << ") applies to none of the shapes; last reason: " << why;
}

// Forced by its name, the entry is what selectAlgorithm picks wherever it applies (names
// repeat across collectives: "ring" of all-gather must not run all-reduce's).
TEST_P(VerifyAll, ForcedByNameItIsChosen) {
  const AlgorithmInfo& info = algorithmRegistry()[GetParam()];
  std::size_t applicable = 0;
  for (const Shape& shape : gridFor(info)) {
    if (shape.n > 17) continue;
    for (int r = 0; r < shape.n; ++r) {
      CollectiveSpec spec = specFor(info.kind, shape, r);
      if (isPointToPoint(info.kind)) spec.peer = (r + 1) % shape.n;
      if (!info.unsupportedReason(spec).empty()) continue;
      ++applicable;
      auto chosen = selectAlgorithm(spec, info.name);
      ASSERT_TRUE(chosen.ok()) << shape.text() << ": " << chosen.status().toString();
      ASSERT_EQ(*chosen, &info) << shape.text() << ": chose " << (*chosen)->name << " of "
                                << collectiveName((*chosen)->kind);
    }
  }
  EXPECT_GT(applicable, 0u);
}

std::string entryName(const testing::TestParamInfo<std::size_t>& param) {
  const AlgorithmInfo& info = algorithmRegistry()[param.param];
  std::string name = std::string(collectiveName(info.kind)) + "_" + info.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// Across hosts whose ranks are dealt in turn (not numbered host by host), the flat rings of
// all-reduce and all-gather(v) run in host order: each rank sends to the next rank of the
// order, so the ring crosses each host boundary once each way, and the result is right.
TEST(RingsAcrossHosts, RunInHostOrder) {
  for (int n = 4; n <= 9; ++n) {
    std::vector<int> dealt;
    for (int r = 0; r < n; ++r) dealt.push_back(r % 2);
    const HostMap map = HostMap::fromLabels(dealt);
    std::vector<int> order;
    for (const auto& ranks : map.ranksOf) order.insert(order.end(), ranks.begin(), ranks.end());
    for (const char* kindName : {"allreduce", "allgather", "allgatherv"}) {
      const Collective kind = *parseCollective(kindName);
      for (const AlgorithmInfo& info : algorithmRegistry()) {
        if (info.kind != kind || std::string_view(info.name) != "ring") continue;
        Shape shape{n, static_cast<std::uint64_t>(3 * n + 1), false, 0, 5, &map};
        std::vector<CollectiveSpec> specs;
        std::vector<Schedule> schedules;
        std::string why;
        ASSERT_TRUE(buildWorld(info, shape, &specs, &schedules, &why)) << why;
        EXPECT_TRUE(verifySchedules(specs, schedules).ok()) << kindName << " n=" << n;
        for (int v = 0; v < n; ++v) {
          const Schedule& s = schedules[static_cast<std::size_t>(order[static_cast<std::size_t>(v)])];
          const int next = order[static_cast<std::size_t>((v + 1) % n)];
          for (const Step& step : s.steps)
            if (opSends(step.op)) {
              EXPECT_EQ(step.sendPeer, next) << kindName << " n=" << n;
            }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, VerifyAll,
                         testing::Range<std::size_t>(0, algorithmRegistry().size()), entryName);

}  // namespace
}  // namespace tutti
