// The rank program of the multi-process collective tests (build/tests/tutti_collective_worker),
// started by tutti-run. Modes:
//   check            all-reduce every dtype x op x placement at counts 0, 1, n-1, n+1 and a
//                    large odd count, then from memAlloc buffers (default and direct_rs_ag),
//                    plus barriers, a sequence of small calls (flat over shared memory)
//                    between larger ones, and point-to-point messages; every element is
//                    compared with an independent expectation. Exit 0 when all is right.
//   every            every collective x every registered algorithm (and the default) at a
//                    few counts, dtypes and roots, then the same on sub-communicators from
//                    split (reversed order and odd/even groups). The ranks learn their hosts
//                    themselves (boot id and network namespace), so that on several hosts
//                    the hierarchical algorithms run too, on large blocks as well (on the
//                    whole communicator); each rank prints
//                    "ACROSS-HOSTS rank r: <collective>:<algorithm>,..." listing those that
//                    applied only because the communicator spans hosts.
//   die <rank> [small]  <rank> starts a large all-reduce and kills itself (SIGKILL) while
//                    it runs (small: kills itself instead of an 8-byte all-reduce); the
//                    others' all-reduce must fail with kPeerFailure naming <rank>.
//                    Survivors print "EXPECTED-FAILURE <message>" and exit 3.
//   mismatch <how>   rank 1 calls something else than the others (how: count, dtype, root,
//                    collective, algorithm, flat_count, flat_mixed, flat_bcast,
//                    agree_bcast); then every rank makes
//                    three more calls. Every rank must fail with kMismatch stating both
//                    calls: it prints
//                    "EXPECTED-FAILURE ..." for its first failed call and exits 3.
//   hang <how> <rank> after two warm-up calls (barrier #0, all-reduce #1) every rank prints
//                    "READY rank r pid p handler=tutti|other"; then the others call
//                    all-reduce #2 with a 3 s deadline while <rank> does not (how = absent:
//                    it waits on a pipe nobody writes, for the test to SIGSTOP or kill it) or
//                    calls something else (how = recv: a receive from rank 0, tag 7, that
//                    nobody sends, with a 60 s deadline). Every rank in a call prints
//                    "EXPECTED-FAILURE ..." and exits 3.
//   repeat <count> [calls]  all-reduces of <count> float32 (sum, the algorithm TUTTI_ALGO
//                    forces or the default), one after another, every element checked; after
//                    the first every rank prints "READY rank r pid p"; calls = 0 (the
//                    default): until one fails. The first failure prints "EXPECTED-FAILURE
//                    ..." and exits 3; all done: "RESULT OK rank r of n: <calls> all-reduces
//                    of <count> (the longest s seconds)". For the fault tests (a peer host
//                    killed, cut off or slowed down while calls run).
//   self             sends from every rank to itself in every order MPI allows, alone and in
//                    flight with a ring to the neighbours, from empty to large messages
//                    (common/self_sends.h); every element checked.
//   idle             after the warm-up calls, prints "READY ..." like hang, then every rank
//                    waits in a receive from the next rank (tag 99, never sent, 120 s
//                    deadline): a process blocked inside tutti, for SIGUSR1 dumps.
// Options, before the mode:
//   --wait-fifo PATH     read one byte from the FIFO at PATH (120 s at most) before joining,
//                        so that a test can set the scene (a flood on the store) first
//   --wrong-secret RANK  rank RANK joins with a secret other than the job's
// Output lines meant for the tests start with "RESULT", "READY" or "EXPECTED-FAILURE".

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "bench/data.h"
#include "common/collective_check.h"
#include "common/self_sends.h"
#include "core/flight_recorder.h"
#include "schedule/collective.h"
#include "base/macros.h"
#include "base/strings.h"
#include "tutti/communicator.h"
#include "tutti/memory.h"

namespace {

using namespace tutti;

constexpr DataType kTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                               DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                               DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kAvg};

// `bytes` from tutti::memAlloc (freed on destruction), or from the heap.
class Buffer {
 public:
  Buffer(std::size_t bytes, bool shared, char fill) : shared_(shared) {
    if (shared_) {
      Result<void*> r = memAlloc(bytes);
      data_ = r.ok() ? static_cast<char*>(r.value()) : nullptr;
    } else {
      heap_.assign(bytes, fill);
      data_ = heap_.data();
    }
    if (data_ != nullptr) std::memset(data_, fill, bytes);
  }
  ~Buffer() {
    if (shared_) (void)memFree(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return data_; }

 private:
  bool shared_;
  std::vector<char> heap_;
  char* data_ = nullptr;
};

// One all-reduce checked element by element; `shared`: both buffers from memAlloc (peers on
// this host read them through their mappings); `algorithm`: forced, or "" for the default.
std::string checkOne(Communicator& comm, std::size_t count, DataType dtype, ReduceOp op,
                     bool inPlace, bool shared = false, const char* algorithm = "") {
  const std::size_t bytes = count * dataTypeSize(dtype);
  Buffer input(bytes + 1, shared, 0), output(bytes + 1, shared, '\xff');
  std::vector<char> expected(bytes + 1);
  std::string what = strFormat("count=%zu %s %s %s%s%s%s", count, dataTypeName(dtype),
                               reduceOpName(op), inPlace ? "in-place" : "out-of-place",
                               shared ? " memAlloc" : "", *algorithm != 0 ? " " : "", algorithm);
  if (input.data() == nullptr || output.data() == nullptr) return what + ": memAlloc failed\n";
  bench::fillInput(input.data(), count, comm.rank(), comm.size(), dtype, op);
  bench::fillExpectedAllReduce(expected.data(), count, comm.size(), dtype, op);
  void* out = inPlace ? input.data() : output.data();
  CallOptions options;
  options.algorithm = algorithm;
  Status s = comm.allreduce(input.data(), out, count, dtype, op, options);
  if (!s.ok()) return what + ": " + s.toString() + "\n";
  std::uint64_t wrong = bench::countWrong(out, expected.data(), count, dtype);
  if (wrong != 0) return what + strFormat(": %llu wrong\n", static_cast<unsigned long long>(wrong));
  return "";
}

// Rank r's i-th input of round k: a float with a full mantissa, so that a sum's bits depend
// on the order of its operands.
float roundInput(int rank, int round, std::size_t i) {
  std::uint64_t h = (static_cast<std::uint64_t>(rank) << 40) ^ (static_cast<std::uint64_t>(round) << 20) ^ i;
  h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
  h ^= h >> 29;
  return static_cast<float>(static_cast<std::int64_t>(h % 2000001) - 1000000) / 999983.0f;
}

// One reduce-scatter (or reduce-scatterv, `v`) of float blocks of `counts`, forced to
// `options`' algorithm (direct): direct folds this rank's own block first, then ranks me-1,
// me-2, ...; the result must be that fold bit for bit. "" or what was wrong.
std::string checkReduceScatterFold(Communicator& comm, const std::vector<std::size_t>& counts,
                                   bool v, int round, bool inPlace, const CallOptions& options) {
  const int n = comm.size();
  const int me = comm.rank();
  const int seed = round + (v ? 2000 : 1000);
  std::size_t total = 0, at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (r < static_cast<std::size_t>(me)) at += counts[r];
    total += counts[r];
  }
  const std::size_t mine = counts[static_cast<std::size_t>(me)];
  std::vector<float> in(total), out(mine + 1, -1.0f), want(mine);
  for (std::size_t i = 0; i < total; ++i) in[i] = roundInput(me, seed, i);
  for (std::size_t j = 0; j < mine; ++j) {
    float acc = roundInput(me, seed, at + j);
    for (int k = 1; k < n; ++k) acc = acc + roundInput((me - k + n) % n, seed, at + j);
    want[j] = acc;
  }
  float* got = inPlace ? in.data() + at : out.data();
  const char* name = v ? "reduce-scatterv" : "reduce-scatter";
  Status s = v ? comm.reduceScatterv(in.data(), got, counts, DataType::kFloat32, ReduceOp::kSum,
                                     options)
               : comm.reduceScatter(in.data(), got, mine, DataType::kFloat32, ReduceOp::kSum,
                                    options);
  if (!s.ok()) return strFormat("round %d %s: %s\n", round, name, s.toString().c_str());
  if (mine > 0 && std::memcmp(got, want.data(), mine * sizeof(float)) != 0)
    return strFormat("round %d %s of %zu: not direct's fold\n", round, name, mine);
  return "";
}

// Small calls that shared memory carries by its flat exchange (direct's one round), between
// calls it does not, so that each rank's two flat slots are reused across other calls and
// across a broadcast its root may finish before the others start. The all-reduces force
// direct, which combines in rank order on every transport: each result must equal, bit for
// bit, the rank-order fold of every rank's input computed here.
std::string checkSmallSequence(Communicator& comm) {
  const int n = comm.size();
  const int me = comm.rank();
  std::string failures;
  CallOptions direct;
  direct.algorithm = "direct";
  // Every round runs whatever failed before, so that the ranks stay in the same calls.
  for (int round = 0; round < 48; ++round) {
    const std::size_t count = 1 + static_cast<std::size_t>(round * 37) % 248;  // <= 992 bytes
    std::vector<float> in(count), out(count), expected(count);
    for (std::size_t i = 0; i < count; ++i) {
      in[i] = roundInput(me, round, i);
      float acc = roundInput(0, round, i);
      for (int r = 1; r < n; ++r) acc = acc + roundInput(r, round, i);
      expected[i] = acc;
    }
    const bool inPlace = round % 2 == 1;
    float* result = inPlace ? in.data() : out.data();
    Status s = comm.allreduce(in.data(), result, count, DataType::kFloat32, ReduceOp::kSum, direct);
    if (!s.ok()) failures += strFormat("round %d all-reduce: %s\n", round, s.toString().c_str());
    else if (std::memcmp(result, expected.data(), count * sizeof(float)) != 0)
      failures += strFormat("round %d all-reduce of %zu: not the rank-order sum\n", round, count);

    const int root = round % n;  // a larger broadcast (messages), its root finishing first
    std::vector<std::int32_t> data(3001);
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = me == root ? static_cast<std::int32_t>(round * 100000 + i) : -1;
    s = comm.broadcast(data.data(), data.data(), data.size(), DataType::kInt32, root);
    for (std::size_t i = 0; i < data.size() && s.ok(); ++i)
      if (data[i] != static_cast<std::int32_t>(round * 100000 + i)) {
        failures += strFormat("round %d broadcast: element %zu wrong\n", round, i);
        break;
      }
    if (!s.ok()) failures += strFormat("round %d broadcast: %s\n", round, s.toString().c_str());

    const std::size_t block = 1 + static_cast<std::size_t>(round) % 7;
    std::vector<std::int32_t> mine(block), all(block * static_cast<std::size_t>(n), -1);
    for (std::size_t i = 0; i < block; ++i) mine[i] = me * 1000 + round * 10 + static_cast<int>(i);
    s = comm.allgather(mine.data(), all.data(), block, DataType::kInt32);
    for (std::size_t i = 0; i < all.size() && s.ok(); ++i) {
      const int r = static_cast<int>(i / block);
      if (all[i] != r * 1000 + round * 10 + static_cast<int>(i % block)) {
        failures += strFormat("round %d all-gather: element %zu wrong\n", round, i);
        break;
      }
    }
    if (!s.ok()) failures += strFormat("round %d all-gather: %s\n", round, s.toString().c_str());

    // All-gatherv by direct (flat over shared memory: each rank publishes its own block, of
    // its own size), blocks uneven and some empty, out of rank order with gaps that must stay
    // untouched; in place (the block already at its place) every other round.
    {
      const std::size_t nb = static_cast<std::size_t>(n);
      std::vector<std::size_t> vCounts(nb), displs(nb);
      std::size_t at = 0;
      for (std::size_t k = 0; k < nb; ++k) {
        const std::size_t r = nb - 1 - k;
        vCounts[r] = (block + 3 * r + static_cast<std::size_t>(round)) % 6;
        displs[r] = at + 1;
        at = displs[r] + vCounts[r];
      }
      const std::size_t myCount = vCounts[static_cast<std::size_t>(me)];
      const std::size_t myAt = displs[static_cast<std::size_t>(me)];
      auto value = [&](std::size_t r, std::size_t i) {
        return static_cast<std::int32_t>(r * 1000 + static_cast<std::size_t>(round) * 10 + i);
      };
      std::vector<std::int32_t> gathered(at + 1, -7), own(myCount);
      for (std::size_t i = 0; i < myCount; ++i) own[i] = value(static_cast<std::size_t>(me), i);
      if (inPlace) std::copy(own.begin(), own.end(), gathered.begin() + static_cast<long>(myAt));
      const void* sendbuf = inPlace ? gathered.data() + myAt : own.data();
      s = comm.allgatherv(sendbuf, myCount, gathered.data(), vCounts, displs, DataType::kInt32,
                          direct);
      std::vector<std::int32_t> want(at + 1, -7);
      for (std::size_t r = 0; r < nb; ++r)
        for (std::size_t i = 0; i < vCounts[r]; ++i) want[displs[r] + i] = value(r, i);
      if (!s.ok())
        failures += strFormat("round %d all-gatherv: %s\n", round, s.toString().c_str());
      else if (gathered != want)
        failures += strFormat("round %d all-gatherv%s: wrong elements\n", round,
                              inPlace ? " in place" : "");
    }

    // All-to-all by direct (flat over shared memory: the whole send buffer published, block
    // `me` of every rank's taken), in place every other round.
    const std::size_t nb = static_cast<std::size_t>(n);
    std::vector<std::int32_t> send(block * nb), recv(block * nb, -1);
    for (std::size_t i = 0; i < send.size(); ++i)
      send[i] = me * 100000 + round * 100 + static_cast<int>(i);  // block i / block goes to rank i / block
    std::int32_t* got = inPlace ? send.data() : recv.data();
    s = comm.alltoall(send.data(), got, block, DataType::kInt32, direct);
    for (std::size_t i = 0; i < send.size() && s.ok(); ++i) {
      const int from = static_cast<int>(i / block);
      const int at = me * static_cast<int>(block) + static_cast<int>(i % block);
      if (got[i] != from * 100000 + round * 100 + at) {
        failures += strFormat("round %d all-to-all: element %zu wrong\n", round, i);
        break;
      }
    }
    if (!s.ok()) failures += strFormat("round %d all-to-all: %s\n", round, s.toString().c_str());

    // Reduce-scatter by direct (flat: the whole input published, block `me` of every rank's
    // reduced), in place (recvbuf = block `me` of sendbuf) every other round; then
    // reduce-scatterv with uneven blocks, some empty.
    failures += checkReduceScatterFold(comm, std::vector<std::size_t>(nb, block), false, round,
                                       inPlace, direct);
    std::vector<std::size_t> vCounts(nb);
    for (std::size_t r = 0; r < nb; ++r)
      vCounts[r] = (block + 2 * r + static_cast<std::size_t>(round)) % 5;
    failures += checkReduceScatterFold(comm, vCounts, true, round, inPlace, direct);
    if (round % 3 == 0) {
      s = comm.barrier();
      if (!s.ok()) failures += strFormat("round %d barrier: %s\n", round, s.toString().c_str());
    }
  }
  return failures;
}

int runChecks(Communicator& comm) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  std::vector<std::size_t> counts = {0, 1, n + 1, 100003};
  if (n > 1) counts.push_back(n - 1);
  std::string failures;
  int checks = 0;
  for (DataType dtype : kTypes)
    for (ReduceOp op : kOps)
      for (std::size_t count : counts)
        for (bool inPlace : {false, true}) {
          failures += checkOne(comm, count, dtype, op, inPlace);
          ++checks;
        }
  // Past 4 MiB: the algorithms and message paths of large vectors (on 2 ranks Rabenseifner,
  // whose halves go by rendezvous over shared memory where the kernel's copy is fast and
  // are reduced a bounce buffer at a time, streaming their stores), an odd count so the
  // halves are uneven. Up to 4 ranks: on 8 (oversubscribed, and under the sanitizers) it
  // costs more than it adds.
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16})
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg})
      for (bool inPlace : {false, true}) {
        if (n > 4) break;
        const std::size_t count = (std::size_t{9} << 20) / 2 / dataTypeSize(dtype) + 1001;
        failures += checkOne(comm, count, dtype, op, inPlace);
        ++checks;
      }
  // Buffers from memAlloc: messages past TUTTI_SHM_MAPPED_BYTES (16K) and past the 256K of
  // heap buffers read and reduced through the peers' mappings over shared memory (over TCP
  // nothing changes), with the default algorithms and with direct_rs_ag, which reads every
  // peer's input; odd counts so the chunks are uneven.
  for (const char* algorithm : {"", "direct_rs_ag"})
    for (std::size_t count : {std::size_t{40009}, std::size_t{600011}})
      for (bool inPlace : {false, true}) {
        failures += checkOne(comm, count, DataType::kFloat32, ReduceOp::kSum, inPlace, true,
                             algorithm);
        ++checks;
      }
  // Shared on some ranks only (600011 floats: past the 1 MiB from which the ranks agree on
  // their buffers): they agree that not all are, and keep the default.
  failures += checkOne(comm, 600011, DataType::kFloat32, ReduceOp::kSum, false,
                       comm.rank() % 2 == 0);
  ++checks;
  for (int i = 0; i < 10; ++i) {
    Status s = comm.barrier();
    if (!s.ok()) failures += "barrier: " + s.toString() + "\n";
  }
  failures += checkSmallSequence(comm);
  ++checks;
  if (comm.size() > 1) {  // a ring of point-to-point messages
    const int next = (comm.rank() + 1) % comm.size();
    const int prev = (comm.rank() + comm.size() - 1) % comm.size();
    std::vector<std::uint64_t> out(4097), in(4097);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = comm.rank() * 1000000ull + i;
    Work send = comm.sendAsync(out.data(), out.size(), DataType::kUint64, next, 11);
    Status r = comm.recv(in.data(), in.size(), DataType::kUint64, prev, 11);
    Status s = send.wait();
    if (!r.ok() || !s.ok()) failures += "p2p: " + r.toString() + " / " + s.toString() + "\n";
    for (std::size_t i = 0; i < in.size() && r.ok(); ++i)
      if (in[i] != prev * 1000000ull + i) {
        failures += strFormat("p2p element %zu wrong\n", i);
        break;
      }
    // MPI's Irecv, Isend, Waitall on every rank: the receive first, then the send (both in
    // flight together, or every rank's receive waits for a send queued behind it); a large
    // message too, which shared memory sends by copy since its receive may come later.
    for (const std::size_t count : {std::size_t{4097}, std::size_t{1} << 20}) {
      std::vector<std::uint64_t> mine(count), theirs(count, 0);
      for (std::size_t i = 0; i < count; ++i) mine[i] = comm.rank() * 7000000ull + i * 3;
      Work recv = comm.recvAsync(theirs.data(), count, DataType::kUint64, prev, 12);
      Work sent = comm.sendAsync(mine.data(), count, DataType::kUint64, next, 12);
      Status rs = recv.wait();
      Status ss = sent.wait();
      if (!rs.ok() || !ss.ok()) {
        failures += "irecv/isend: " + rs.toString() + " / " + ss.toString() + "\n";
        break;
      }
      for (std::size_t i = 0; i < count; ++i)
        if (theirs[i] != prev * 7000000ull + i * 3) {
          failures += strFormat("irecv/isend of %zu: element %zu wrong\n", count, i);
          break;
        }
    }
  }
  if (!failures.empty()) {
    std::fprintf(stdout, "RESULT FAILED rank %d:\n%s", comm.rank(), failures.c_str());
    return 1;
  }
  std::fprintf(stdout, "RESULT OK rank %d of %d: %d all-reduce checks\n", comm.rank(),
               comm.size(), checks);
  return 0;
}

// This process's host, as a number: its boot id and network namespace, which tell apart
// hosts and the pretend hosts of the multi-host tests (namespaces of one machine) alike.
// Learned here, not from tutti's view, so that the check does not take tutti's word for it.
std::uint64_t hostLabel() {
  std::string id;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), id);
  struct stat ns {};
  if (::stat("/proc/self/ns/net", &ns) == 0)
    id += strFormat(":%llu", static_cast<unsigned long long>(ns.st_ino));
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Which host each rank of `comm` is on (one all-gather of the labels); what the checks
// give the hierarchical algorithms' applicability.
Result<HostMap> learnHosts(Communicator& comm) {
  const std::uint64_t mine = hostLabel();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  TUTTI_RETURN_IF_ERROR(comm.allgather(&mine, all.data(), 1, DataType::kUint64));
  std::vector<int> labels;
  for (std::uint64_t label : all)
    labels.push_back(static_cast<int>(std::find(all.begin(), all.end(), label) - all.begin()));
  return HostMap::fromLabels(labels);
}

// Every collective x algorithm on `comm`; `acrossHosts` collects "<collective>:<algorithm>"
// of those that applied only because `comm` spans hosts. `large`: on several hosts, also
// blocks of 1.2 MB (float32 sum, out of place) by those algorithms and the default, which
// cut them into pieces pipelined between the levels.
std::string everyCollective(Communicator& comm, std::set<std::string>& acrossHosts,
                            bool large) {
  std::string failures;
  const std::size_t n = static_cast<std::size_t>(comm.size());
  Result<HostMap> hosts = learnHosts(comm);
  if (!hosts.ok()) return "learning the hosts: " + hosts.status().toString() + "\n";
  for (int k = 0; k < kNumCollectives; ++k) {
    const auto kind = static_cast<Collective>(k);
    if (kind == Collective::kSend || kind == Collective::kRecv) continue;
    std::vector<std::string> algorithms = {""};
    for (const AlgorithmInfo& info : algorithmRegistry())
      if (info.kind == kind) algorithms.emplace_back(info.name);
    std::vector<std::size_t> counts = {0, n + 1, 4099};
    if (large && hosts->hostCount() > 1) counts.push_back(300007);
    for (const std::string& algorithm : algorithms)
      for (std::size_t count : counts)
        for (DataType dtype : {DataType::kFloat32, DataType::kInt8, DataType::kBFloat16})
          for (bool inPlace : {false, true}) {
            if (count > 4099 && (dtype != DataType::kFloat32 || inPlace)) continue;
            test::CollectiveCase c;
            c.kind = kind;
            c.count = count;
            c.dtype = dtype;
            c.op = dtype == DataType::kInt8 ? ReduceOp::kMax : ReduceOp::kSum;
            c.root = static_cast<int>(n) / 2;
            c.inPlace = inPlace;
            c.algorithm = algorithm;
            if (!test::algorithmApplies(c, comm.rank(), comm.size())) {
              c.hosts = &*hosts;
              if (!test::algorithmApplies(c, comm.rank(), comm.size())) continue;
              acrossHosts.insert(std::string(collectiveName(kind)) + ":" + algorithm);
            } else if (count > 4099 && !algorithm.empty()) {
              continue;  // flat algorithms' large blocks: the single-host TCP tests'
            }
            c.hosts = &*hosts;
            failures += test::runAndCheck(comm, c);
          }
  }
  return failures;
}

int runEvery(Communicator& comm) {
  std::set<std::string> acrossHosts;
  std::string failures = everyCollective(comm, acrossHosts, true);
  auto reversed = comm.split(0, -comm.rank());
  if (!reversed.ok() || !reversed->has_value()) failures += "split (reversed) failed\n";
  else failures += everyCollective(**reversed, acrossHosts, false);
  auto halves = comm.split(comm.rank() % 2, comm.rank());
  if (!halves.ok() || !halves->has_value()) failures += "split (odd/even) failed\n";
  else failures += everyCollective(**halves, acrossHosts, false);
  if (!failures.empty()) {
    std::fprintf(stdout, "RESULT FAILED rank %d:\n%s", comm.rank(), failures.c_str());
    return 1;
  }
  std::string list;
  for (const std::string& name : acrossHosts) list += (list.empty() ? "" : ",") + name;
  std::fprintf(stdout, "ACROSS-HOSTS rank %d: %s\n", comm.rank(), list.c_str());
  std::fprintf(stdout, "RESULT OK rank %d of %d: every collective\n", comm.rank(), comm.size());
  return 0;
}

// Prints the failure the test expects ("EXPECTED-FAILURE code=... peer=...: message"), or
// UNEXPECTED-SUCCESS; returns the exit status.
int expectFailure(const Communicator& comm, const Status& s) {
  if (s.ok()) {
    std::fprintf(stdout, "RESULT UNEXPECTED-SUCCESS rank %d\n", comm.rank());
    return 1;
  }
  std::fprintf(stdout, "EXPECTED-FAILURE code=%s peer=%d: %s\n", errorCodeName(s.code()),
               s.peerRank(), s.message().c_str());
  return 3;
}

int runDie(Communicator& comm, int victim, bool small) {
  // 64 MiB of float32: long enough to die mid-way. Small: 8 bytes, which shared memory
  // carries by its flat exchange; the victim dies without contributing.
  const std::size_t count = small ? 2 : 16u << 20;
  std::vector<float> buf(count, 1.0f);
  if (comm.rank() == victim && small) {
    std::fflush(stdout);
    raise(SIGKILL);
  }
  if (comm.rank() == victim) {
    Work w = comm.allreduceAsync(buf.data(), buf.data(), count, DataType::kFloat32, ReduceOp::kSum);
    std::fflush(stdout);
    raise(SIGKILL);
  }
  CallOptions options;
  options.timeout = std::chrono::seconds(60);
  return expectFailure(
      comm, comm.allreduce(buf.data(), buf.data(), count, DataType::kFloat32, ReduceOp::kSum, options));
}

// The deviating call of rank 1 (odd) or everyone else's (odd == false).
Status mismatchedCall(Communicator& comm, const std::string& how, bool odd,
                      std::vector<float>& buf) {
  CallOptions options;
  options.timeout = std::chrono::seconds(60);
  const auto f32 = DataType::kFloat32;
  if (how == "count")
    return comm.allreduce(buf.data(), buf.data(), odd ? 1000 : 1024, f32, ReduceOp::kSum, options);
  if (how == "dtype")
    return comm.allreduce(buf.data(), buf.data(), odd ? 512 : 1024, odd ? DataType::kFloat64 : f32,
                          ReduceOp::kSum, options);
  if (how == "root") return comm.broadcast(buf.data(), buf.data(), 1024, f32, odd ? 1 : 0, options);
  if (how == "collective")
    return odd ? comm.reduce(buf.data(), buf.data(), 1024, f32, ReduceOp::kSum, 0, options)
               : comm.broadcast(buf.data(), buf.data(), 1024, f32, 0, options);
  // Over shared memory, calls of a few hundred bytes go through the flat exchange: both
  // sides there, or one side there and the other sending messages.
  if (how == "flat_count")
    return comm.allreduce(buf.data(), buf.data(), odd ? 3 : 2, f32, ReduceOp::kSum, options);
  if (how == "flat_mixed")
    return comm.allreduce(buf.data(), buf.data(), odd ? 1024 : 2, f32, ReduceOp::kSum, options);
  // Rank 1 only waits for the root's data while the others publish theirs: in the flat
  // exchange (8 bytes), or in the agreement on buffers that comes before a large
  // all-reduce's algorithm (4 MiB).
  if (how == "flat_bcast" || how == "agree_bcast") {
    const std::size_t count = how == "flat_bcast" ? 2 : buf.size();
    return odd ? comm.broadcast(buf.data(), buf.data(), count, f32, 0, options)
               : comm.allreduce(buf.data(), buf.data(), count, f32, ReduceOp::kSum, options);
  }
  // allgatherv of 4 floats a rank, flat over shared memory; rank 1 takes rank 0's block for
  // 5 floats (both sides flat, each checking the other's slot) or 4000 (rank 1 past the
  // flat exchange's room, sending messages).
  if (how == "flat_allgatherv" || how == "allgatherv_mixed") {
    const auto n = static_cast<std::size_t>(comm.size());
    std::vector<std::size_t> counts(n, 4), displs(n);
    if (odd) counts[0] = how == "flat_allgatherv" ? 5 : 4000;
    std::size_t at = 0;
    for (std::size_t r = 0; r < n; ++r) {
      displs[r] = at;
      at += counts[r];
    }
    std::vector<float> mine(counts[static_cast<std::size_t>(comm.rank())], 1.0f), all(at);
    return comm.allgatherv(mine.data(), mine.size(), all.data(), counts, displs, f32, options);
  }
  options.algorithm = odd ? "ring" : "recursive_doubling";
  return comm.allreduce(buf.data(), buf.data(), 1024, f32, ReduceOp::kSum, options);
}

int runMismatch(Communicator& comm, const std::string& how) {
  std::vector<float> buf(how == "agree_bcast" ? std::size_t{1} << 20 : 1024, 1.0f);
  CallOptions options;
  options.timeout = std::chrono::seconds(60);
  Status s = mismatchedCall(comm, how, comm.rank() == 1, buf);
  // Calls that need every rank: none can complete once a rank has failed.
  if (s.ok()) s = comm.allreduce(buf.data(), buf.data(), 16, DataType::kFloat32, ReduceOp::kSum, options);
  if (s.ok()) s = comm.barrier(options);
  if (s.ok()) s = comm.barrier(options);
  return expectFailure(comm, s);
}

// The calls before a hang (barrier #0, all-reduce #1), then the line the tests wait for.
Status warmUpAndReport(Communicator& comm) {
  Status s = comm.barrier();
  std::int64_t x = comm.rank();
  if (s.ok()) s = comm.allreduce(&x, &x, 1, DataType::kInt64, ReduceOp::kSum);
  if (!s.ok()) return s;
  std::fprintf(stdout, "READY rank %d pid %d handler=%s\n", comm.rank(), static_cast<int>(getpid()),
               detail::flightRecorderSignalHandlerInstalled() ? "tutti" : "other");
  std::fflush(stdout);
  return Status::Ok();
}

int runHang(Communicator& comm, const std::string& how, int victim) {
  if (Status s = warmUpAndReport(comm); !s.ok()) return expectFailure(comm, s);
  if (comm.rank() == victim && how == "absent") {
    // Outside any tutti call until the test stops or kills this process (bounded anyway).
    int fds[2];
    if (::pipe(fds) != 0) return 1;
    pollfd p{fds[0], POLLIN, 0};
    ::poll(&p, 1, 120000);
    std::fprintf(stdout, "RESULT NOT-KILLED rank %d\n", comm.rank());
    return 1;
  }
  if (comm.rank() == victim) {
    std::int32_t in[4];
    CallOptions patient;
    patient.timeout = std::chrono::seconds(60);
    return expectFailure(comm, comm.recv(in, 4, DataType::kInt32, 0, 7, patient));
  }
  float x = 1;
  CallOptions quick;
  quick.timeout = std::chrono::seconds(3);
  return expectFailure(comm, comm.allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum, quick));
}

int runRepeat(Communicator& comm, std::size_t count, long calls) {
  const auto f32 = DataType::kFloat32;
  std::vector<float> input(count), buf(count), expected(count);
  bench::fillInput(input.data(), count, comm.rank(), comm.size(), f32, ReduceOp::kSum);
  bench::fillExpectedAllReduce(expected.data(), count, comm.size(), f32, ReduceOp::kSum);
  double longest = 0;
  for (long call = 0; calls == 0 || call < calls; ++call) {
    buf = input;
    const Deadline::Clock::time_point start = Deadline::Clock::now();
    Status s = comm.allreduce(buf.data(), buf.data(), count, f32, ReduceOp::kSum);
    if (!s.ok()) return expectFailure(comm, s);
    const std::chrono::duration<double> took = Deadline::Clock::now() - start;
    longest = std::max(longest, took.count());
    if (const std::uint64_t wrong = bench::countWrong(buf.data(), expected.data(), count, f32)) {
      std::fprintf(stdout, "RESULT FAILED rank %d: all-reduce %ld: %llu wrong elements\n",
                   comm.rank(), call, static_cast<unsigned long long>(wrong));
      return 1;
    }
    if (call == 0) {
      std::fprintf(stdout, "READY rank %d pid %d\n", comm.rank(), static_cast<int>(getpid()));
      std::fflush(stdout);
    }
  }
  std::fprintf(stdout, "RESULT OK rank %d of %d: %ld all-reduces of %zu (the longest %.1f s)\n",
               comm.rank(), comm.size(), calls, count, longest);
  return 0;
}

int runSelf(Communicator& comm) {
  std::string failures;
  for (std::size_t count : test::kSelfCounts) failures += test::checkSendsToSelf(comm, count);
  if (!failures.empty()) {
    std::fprintf(stdout, "RESULT FAILED rank %d: %s\n", comm.rank(), failures.c_str());
    return 1;
  }
  std::fprintf(stdout, "RESULT OK rank %d of %d\n", comm.rank(), comm.size());
  return 0;
}

int runIdle(Communicator& comm) {
  if (Status s = warmUpAndReport(comm); !s.ok()) return expectFailure(comm, s);
  std::int32_t in = 0;
  CallOptions patient;
  patient.timeout = std::chrono::seconds(120);
  return expectFailure(comm, comm.recv(&in, 1, DataType::kInt32, (comm.rank() + 1) % comm.size(),
                                       99, patient));
}

// Blocks until the FIFO at `path` yields a byte: the test's go-ahead. False on error or
// after 120 s.
bool waitForGo(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  Deadline deadline = Deadline::afterSeconds(120);
  bool got = false;
  while (!got && !deadline.expired()) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, deadline.pollTimeoutMs()) <= 0) continue;
    char byte = 0;
    got = ::read(fd, &byte, 1) == 1;
  }
  ::close(fd);
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* program = argv[0];
  int arg = 1;
  while (arg + 1 < argc && std::strncmp(argv[arg], "--", 2) == 0) {
    const std::string flag = argv[arg];
    const char* value = argv[arg + 1];
    arg += 2;
    if (flag == "--wait-fifo" && !waitForGo(value)) {
      std::fprintf(stdout, "RESULT FAILED: no go-ahead on %s\n", value);
      return 1;
    }
    // Before anything reads the environment: the configuration is read once.
    const char* rank = std::getenv("TUTTI_RANK");
    if (flag == "--wrong-secret" && rank != nullptr && std::strcmp(rank, value) == 0)
      ::setenv("TUTTI_SECRET", "a-secret-that-is-not-this-jobs-0123456789", 1);
  }
  argv += arg - 1;
  argc -= arg - 1;
  std::string mode = argc > 1 ? argv[1] : "check";
  auto comm = Communicator::fromEnv();
  if (!comm.ok()) {
    std::fprintf(stdout, "RESULT FAILED to create the communicator: %s\n",
                 comm.status().toString().c_str());
    return 1;
  }
  if (mode == "check") return runChecks(*comm);
  if (mode == "every") return runEvery(*comm);
  if (mode == "die" && argc > 2)
    return runDie(*comm, std::atoi(argv[2]), argc > 3 && std::strcmp(argv[3], "small") == 0);
  if (mode == "mismatch" && argc > 2) return runMismatch(*comm, argv[2]);
  if (mode == "hang" && argc > 3) return runHang(*comm, argv[2], std::atoi(argv[3]));
  if (mode == "idle") return runIdle(*comm);
  if (mode == "self") return runSelf(*comm);
  if (mode == "repeat" && argc > 2)
    return runRepeat(*comm, std::strtoull(argv[2], nullptr, 10),
                     argc > 3 ? std::strtol(argv[3], nullptr, 10) : 0);
  std::fprintf(stderr,
               "usage: %s [--wait-fifo PATH] [--wrong-secret RANK] check | every | die <rank> [small] | "
               "mismatch <how> | hang <how> <rank> | idle | self | repeat <count> [calls]\n",
               program);
  return 2;
}
