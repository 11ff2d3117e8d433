// The rank program of the root-mismatch tests (build/tests/tutti_root_worker), started by
// tutti-run. It calls the rooted collectives through the C API, as a user of tutti.h would.
//
//   tutti_root_worker <collectives> <counts> <modes> [<deviant> <root>]
//
// For every collective (comma-separated names: broadcast, scatter, reduce, gather, gatherv,
// scatterv), count (comma-separated elements per rank block) and mode, the rank splits a
// fresh copy of the world, runs one case on it and destroys the copy:
//   match    every rank passes root 0; every element of the result is compared with an
//            independent expectation, and the call and the destroy must succeed.
//   destroy  rank <deviant> (default 1) passes root <root> (default: its own rank), the
//            others root 0; then the copy is destroyed. Each rank must fail, in the call
//            with tuttiMismatch and an error naming both calls, or, when its call could
//            succeed (a root that only sends), in tuttiCommDestroy with tuttiMismatch.
//   next     the same calls, then a barrier on the copy: the call or else the barrier must
//            fail with tuttiMismatch and an error naming both calls (the destroy then
//            succeeds: the failure was reported), or, where the message that shows the
//            mismatch reaches this rank only later, the destroy must return tuttiMismatch.
// The mismatch modes need at least 2 ranks and a deviant rank of the world; elsewhere they
// are left out. A case that fails prints "CASE FAIL ..."; at the end every rank prints
// "ROOTS DONE rank r of n: k cases, f failed" and exits 0 when f is 0.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace {

using Value = std::int32_t;

// What rank r holds at index i of its own block: distinct per rank and index, small enough
// that a sum over 8 ranks stays far from overflow.
Value valueOf(int r, std::size_t i) {
  return static_cast<Value>((r + 1) * 1000000 + static_cast<Value>(i % 999983));
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > at) out.push_back(text.substr(at, end - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

struct Case {
  std::string collective;
  std::size_t count = 0;
  std::string mode;
  int root = 0;  // this rank's root
};

// The buffers and arrays of one case, sized for whichever rank acts as the root.
struct Buffers {
  std::vector<Value> send;
  std::vector<Value> recv;
  std::vector<std::size_t> counts;  // gatherv, scatterv: rank r's block
  std::vector<std::size_t> displs;
};

Buffers buffersFor(const Case& c, int rank, int n) {
  Buffers b;
  const auto nn = static_cast<std::size_t>(n);
  b.counts.resize(nn);
  b.displs.resize(nn);
  std::size_t at = 0;
  for (std::size_t r = 0; r < nn; ++r) {
    b.counts[r] = c.count + 3 * r;  // blocks of different sizes, with gaps between them
    b.displs[r] = at + r;
    at = b.displs[r] + b.counts[r];
  }
  const std::size_t whole = std::max(at, nn * c.count) + 8;
  b.send.assign(whole, -1);
  b.recv.assign(whole, -1);
  const std::string& k = c.collective;
  if (k == "broadcast" || k == "reduce") {
    for (std::size_t i = 0; i < c.count; ++i) b.send[i] = valueOf(rank, i);
  } else if (k == "gather") {
    for (std::size_t i = 0; i < c.count; ++i) b.send[i] = valueOf(rank, i);
  } else if (k == "gatherv") {
    for (std::size_t i = 0; i < b.counts[static_cast<std::size_t>(rank)]; ++i)
      b.send[i] = valueOf(rank, i);
  } else if (k == "scatter") {  // block r of the root's input is meant for rank r
    for (std::size_t r = 0; r < nn; ++r)
      for (std::size_t i = 0; i < c.count; ++i) b.send[r * c.count + i] = valueOf(static_cast<int>(r), i);
  } else if (k == "scatterv") {
    for (std::size_t r = 0; r < nn; ++r)
      for (std::size_t i = 0; i < b.counts[r]; ++i) b.send[b.displs[r] + i] = valueOf(static_cast<int>(r), i);
  }
  return b;
}

tuttiResult_t runCall(tuttiComm_t comm, const Case& c, int rank, Buffers& b) {
  const std::string& k = c.collective;
  const tuttiDataType_t t = tuttiInt32;
  const std::size_t mine = b.counts[static_cast<std::size_t>(rank)];
  if (k == "broadcast") return tuttiBroadcast(b.send.data(), b.recv.data(), c.count, t, c.root, comm);
  if (k == "reduce")
    return tuttiReduce(b.send.data(), b.recv.data(), c.count, t, tuttiSum, c.root, comm);
  if (k == "gather") return tuttiGather(b.send.data(), b.recv.data(), c.count, t, c.root, comm);
  if (k == "scatter") return tuttiScatter(b.send.data(), b.recv.data(), c.count, t, c.root, comm);
  if (k == "gatherv")
    return tuttiGatherv(b.send.data(), mine, b.recv.data(), b.counts.data(), b.displs.data(), t,
                        c.root, comm);
  if (k == "scatterv")
    return tuttiScatterv(b.send.data(), b.counts.data(), b.displs.data(), b.recv.data(), mine, t,
                         c.root, comm);
  std::printf("CASE FAIL unknown collective %s\n", k.c_str());
  return tuttiInternalError;
}

// Every element this rank's output defines, against the collective's definition (root 0).
std::string checkResult(const Case& c, int rank, int n, const Buffers& b) {
  const std::string& k = c.collective;
  const auto nn = static_cast<std::size_t>(n);
  auto expect = [&](std::size_t at, Value want) -> std::string {
    if (b.recv[at] == want) return "";
    return "element " + std::to_string(at) + " is " + std::to_string(b.recv[at]) + ", expected " +
           std::to_string(want);
  };
  std::string wrong;
  if (k == "broadcast") {
    for (std::size_t i = 0; i < c.count && wrong.empty(); ++i) wrong = expect(i, valueOf(0, i));
  } else if (k == "reduce" && rank == 0) {
    for (std::size_t i = 0; i < c.count && wrong.empty(); ++i) {
      Value sum = 0;
      for (int r = 0; r < n; ++r) sum += valueOf(r, i);
      wrong = expect(i, sum);
    }
  } else if (k == "gather" && rank == 0) {
    for (std::size_t r = 0; r < nn; ++r)
      for (std::size_t i = 0; i < c.count && wrong.empty(); ++i)
        wrong = expect(r * c.count + i, valueOf(static_cast<int>(r), i));
  } else if (k == "gatherv" && rank == 0) {
    for (std::size_t r = 0; r < nn; ++r)
      for (std::size_t i = 0; i < b.counts[r] && wrong.empty(); ++i)
        wrong = expect(b.displs[r] + i, valueOf(static_cast<int>(r), i));
  } else if (k == "scatter") {
    for (std::size_t i = 0; i < c.count && wrong.empty(); ++i) wrong = expect(i, valueOf(rank, i));
  } else if (k == "scatterv") {
    for (std::size_t i = 0; i < b.counts[static_cast<std::size_t>(rank)] && wrong.empty(); ++i)
      wrong = expect(i, valueOf(rank, i));
  }
  return wrong;
}

// Whether `message` states both calls: "rank 1 called broadcast #0 (count 16 int32 root 1,
// binomial) while rank 0 called broadcast #0 (count 16 int32 root 0, binomial)".
bool namesBoth(const std::string& message, const std::string& collective, int deviantRoot) {
  return message.find(collective + " #") != std::string::npos &&
         message.find("root " + std::to_string(deviantRoot) + ", ") != std::string::npos &&
         message.find("root 0, ") != std::string::npos &&
         message.find(" while rank ") != std::string::npos;
}

class Runner {
 public:
  Runner(tuttiComm_t world, int rank, int size, int deviant, int deviantRoot)
      : world_(world), rank_(rank), size_(size), deviant_(deviant), deviantRoot_(deviantRoot) {}

  // Runs one case on a fresh copy of the world; "" when it went as it must.
  std::string run(Case c) {
    const bool mismatch = c.mode != "match";
    c.root = mismatch && rank_ == deviant_ ? deviantRoot_ : 0;
    tuttiComm_t copy = nullptr;
    if (tuttiCommSplit(world_, 0, rank_, &copy) != tuttiSuccess || copy == nullptr)
      return std::string("split: ") + tuttiCommGetLastError(world_);
    tuttiSetTimeout(copy, 30);  // a case that hangs fails within the job's bound
    Buffers b = buffersFor(c, rank_, size_);
    const tuttiResult_t call = runCall(copy, c, rank_, b);
    std::string message = call == tuttiSuccess ? "" : tuttiCommGetLastError(copy);
    tuttiResult_t next = tuttiSuccess;
    std::string nextMessage;
    if (c.mode == "next" && call == tuttiSuccess) {
      next = tuttiBarrier(copy);
      if (next != tuttiSuccess) nextMessage = tuttiCommGetLastError(copy);
    }
    const tuttiResult_t destroyed = tuttiCommDestroy(copy);
    std::string why = judge(c, b, call, message, next, nextMessage, destroyed);
    // Ranks stay in step on the world, which the copy's failure must not touch.
    if (tuttiBarrier(world_) != tuttiSuccess)
      why += std::string(" (and the world's barrier failed: ") + tuttiCommGetLastError(world_) + ")";
    return why;
  }

 private:
  std::string judge(const Case& c, const Buffers& b, tuttiResult_t call, const std::string& message,
                    tuttiResult_t next, const std::string& nextMessage,
                    tuttiResult_t destroyed) const {
    auto name = [](tuttiResult_t r) { return std::string(tuttiGetErrorString(r)); };
    if (c.mode == "match") {
      if (call != tuttiSuccess) return "the call failed: " + message;
      if (destroyed != tuttiSuccess) return "the destroy failed: " + name(destroyed);
      return checkResult(c, rank_, size_, b);
    }
    if (call == tuttiMismatch) {
      if (!namesBoth(message, c.collective, deviantRoot_))
        return "the call's error does not name both calls: " + message;
      if (destroyed != tuttiSuccess)
        return "the destroy after a reported mismatch failed: " + name(destroyed);
      return "";
    }
    if (call != tuttiSuccess)
      return "the call failed with " + name(call) + " instead of a mismatch: " + message;
    if (c.mode == "destroy") {
      if (destroyed != tuttiMismatch)
        return "the call succeeded and the destroy returned " + name(destroyed) +
               ": the mismatch passed silently";
      return "";
    }
    // The stray message that shows the mismatch may reach its receiver only after that
    // rank's next call: then the destroy must say so.
    if (next == tuttiSuccess) {
      if (destroyed != tuttiMismatch)
        return "the call and the next call succeeded, and the destroy returned " +
               name(destroyed) + ": the mismatch passed silently";
      return "";
    }
    if (next != tuttiMismatch)
      return "the call succeeded and the next call returned " + name(next) + " (" + nextMessage +
             ") instead of the mismatch";
    if (!namesBoth(nextMessage, c.collective, deviantRoot_))
      return "the next call's error does not name both calls: " + nextMessage;
    if (destroyed != tuttiSuccess)
      return "the destroy after a reported mismatch failed: " + name(destroyed);
    return "";
  }

  tuttiComm_t world_;
  const int rank_;
  const int size_;
  const int deviant_;
  const int deviantRoot_;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <collectives> <counts> <modes> [<deviant> <root>]\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> collectives = splitList(argv[1]);
  const std::vector<std::string> counts = splitList(argv[2]);
  const std::vector<std::string> modes = splitList(argv[3]);
  const int deviant = argc > 4 ? std::atoi(argv[4]) : 1;
  const int deviantRoot = argc > 5 ? std::atoi(argv[5]) : deviant;
  tuttiComm_t world = nullptr;
  if (tuttiCommInitFromEnv(&world) != tuttiSuccess) {
    std::printf("ROOTS FAILED to create the world\n");
    return 1;
  }
  int rank = 0, size = 0;
  tuttiCommUserRank(world, &rank);
  tuttiCommCount(world, &size);
  Runner runner(world, rank, size, deviant, deviantRoot);
  int cases = 0, failed = 0;
  for (const std::string& mode : modes) {
    if (mode != "match" && (size < 2 || deviant >= size || deviantRoot >= size)) continue;
    for (const std::string& collective : collectives) {
      for (const std::string& count : counts) {
        Case c{collective, static_cast<std::size_t>(std::strtoull(count.c_str(), nullptr, 10)),
               mode};
        const std::string why = runner.run(c);
        ++cases;
        if (!why.empty()) {
          ++failed;
          std::printf("CASE FAIL %s count %s mode %s rank %d of %d: %s\n", collective.c_str(),
                      count.c_str(), mode.c_str(), rank, size, why.c_str());
        }
      }
    }
  }
  const tuttiResult_t destroyed = tuttiCommDestroy(world);
  if (destroyed != tuttiSuccess) {
    ++failed;
    std::printf("CASE FAIL destroying the world: %s\n", tuttiGetErrorString(destroyed));
  }
  std::printf("ROOTS DONE rank %d of %d: %d cases, %d failed\n", rank, size, cases, failed);
  return failed == 0 ? 0 : 1;
}
