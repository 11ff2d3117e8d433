// The rank program of the steady-state tests (build/tests/tutti_steady_worker), started by
// tutti-run: repeated calls allocate nothing, fault no page in and map nothing (issue 4:
// scratch and staging are pooled per communicator and reused).
//
//   tutti_steady_worker [heap|shared]
//
// For every collective (and point-to-point messages around a ring), at 8 B, 64 KiB, 1 MiB
// and 8 MiB in all, out of place and in place where the collective has both, each call
// followed by a barrier: a few warm-up calls, then windows of kCalls more (until every rank
// has judged kJudgedWindows of them, at most kWindows) while the
// process's heap allocations (malloc, calloc, realloc, aligned allocations and operator
// new, from every thread), minor and major page faults (getrusage) and new memory mappings
// (/proc/self/maps) are counted. Phase 0 makes only blocking calls; phase 1 the same after
// an asynchronous all-reduce (which starts the communicator's worker thread, and blocking
// calls then take another path), itself a case. The buffers, from the heap or from
// tutti::memAlloc (`shared`), are allocated and touched before the warm-up. A window in
// which one of tutti's growing pools grew, or a call took a way of the path learner's for
// the first time (base/pool_growth.h), is not judged; every one in which none did must
// count nothing, and there must be one.
// Prints "RESULT OK rank r calls c" when every judged window counted nothing, else one
// "RESULT FAILED rank r: phase p <collective> <size> <placement>: ..." line per offender.
// With STEADY_BACKTRACE set, every allocation in a window prints its stack to stderr and a
// failed window its times (CLOCK_MONOTONIC, for `perf record -k CLOCK_MONOTONIC -e
// page-faults -d` to find the faults).

#include <execinfo.h>
#include <fcntl.h>
#include <time.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "tutti/communicator.h"
#include "base/pool_growth.h"
#include "tutti/memory.h"

// ---- counting every allocation of the process ---------------------------------------------
// glibc's own entry points stay reachable as __libc_*; a definition here takes precedence
// over the C library's for the whole process, shared libraries included. Sanitizers
// replace these functions themselves, so under them only operator new is counted (the
// library is C++; its own allocations go through it).

namespace {
std::atomic<long> gAllocations{0};
// With STEADY_BACKTRACE set, each counted allocation in a window prints its stack to
// stderr (addresses: addr2line -f -C -i -e build/tests/tutti_steady_worker).
std::atomic<bool> gTrace{false};
thread_local bool tInTrace = false;
void noteAllocation() {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  if (gTrace.load(std::memory_order_relaxed) && !tInTrace) {
    tInTrace = true;
    void* frames[24];
    const int n = backtrace(frames, 24);
    backtrace_symbols_fd(frames, n, 2);
    write(2, "--\n", 3);
    tInTrace = false;
  }
}
}  // namespace

#if defined(TUTTI_ASAN) || defined(TUTTI_TSAN)
#define TUTTI_STEADY_COUNTS_MALLOC 0
#else
#define TUTTI_STEADY_COUNTS_MALLOC 1
#endif

#if TUTTI_STEADY_COUNTS_MALLOC
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t size) {
  noteAllocation();
  return __libc_malloc(size);
}
void* calloc(std::size_t n, std::size_t size) {
  noteAllocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t size) {
  noteAllocation();
  return __libc_realloc(p, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  noteAllocation();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
  noteAllocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  noteAllocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}
#endif

namespace {
void* allocate(std::size_t size) {
#if !TUTTI_STEADY_COUNTS_MALLOC
  noteAllocation();
#endif
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* allocateAligned(std::size_t size, std::align_val_t alignment) {
#if !TUTTI_STEADY_COUNTS_MALLOC
  noteAllocation();
#endif
  void* p = nullptr;
  const auto a = std::max(static_cast<std::size_t>(alignment), sizeof(void*));
  if (posix_memalign(&p, a, size == 0 ? a : size) != 0) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t a) { return allocateAligned(size, a); }
void* operator new[](std::size_t size, std::align_val_t a) { return allocateAligned(size, a); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& t) noexcept {
  return operator new(size, t);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using namespace tutti;

constexpr int kWarmup = 3;
constexpr int kCalls = 5;
constexpr int kWindows = 10;       // at most
constexpr int kJudgedWindows = 3;  // enough: the windows end once this many were judged
constexpr std::size_t kTotals[] = {8, 64 << 10, 1 << 20, 8 << 20};  // bytes in all

// Mappings of the process: lines of /proc/self/maps, read without allocating.
char gMapsBuffer[1 << 16];

long countMappings() {
  char* buf = gMapsBuffer;
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long lines = 0;
  ssize_t n = 0;
  while ((n = read(fd, buf, sizeof(gMapsBuffer))) > 0)
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  close(fd);
  return lines;
}

struct Counts {
  long allocations = 0;
  long minorFaults = 0;
  long majorFaults = 0;
  long mappings = 0;

  static Counts now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return Counts{gAllocations.load(), u.ru_minflt, u.ru_majflt, countMappings()};
  }
};

// A buffer of `bytes` (at least one float), touched, from the heap or memAlloc.
class Buffer {
 public:
  Buffer(std::size_t bytes, bool shared) : bytes_(std::max<std::size_t>(bytes, 4)) {
    if (shared) {
      Result<void*> r = memAlloc(bytes_);
      if (!r.ok()) {
        std::printf("RESULT FAILED memAlloc: %s\n", r.status().toString().c_str());
        std::exit(1);
      }
      shared_ = static_cast<char*>(r.value());
    } else {
      heap_.resize(bytes_);
    }
    std::memset(data(), 1, bytes_);
  }
  ~Buffer() {
    if (shared_ != nullptr) (void)memFree(shared_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* f() { return reinterpret_cast<float*>(data()); }
  char* data() { return shared_ != nullptr ? shared_ : heap_.data(); }

 private:
  std::size_t bytes_;
  char* shared_ = nullptr;
  std::vector<char> heap_;
};

}  // namespace

int main(int argc, char** argv) {
  const bool shared = argc > 1 && std::strcmp(argv[1], "shared") == 0;
  const bool trace = std::getenv("STEADY_BACKTRACE") != nullptr;
  // The counting itself must not fault pages in while it counts.
  std::memset(gMapsBuffer, 0, sizeof(gMapsBuffer));
  (void)Counts::now();
  if (trace) {
    void* frames[4];
    backtrace(frames, 4);  // loads what it needs now, not in the measured calls
  }
  auto made = Communicator::fromEnv();
  if (!made.ok()) {
    std::printf("RESULT FAILED communicator: %s\n", made.status().toString().c_str());
    return 1;
  }
  Communicator comm = std::move(made.value());
  const int r = comm.rank();
  const int n = comm.size();
  const std::size_t un = static_cast<std::size_t>(n);
  const DataType f32 = DataType::kFloat32;
  const ReduceOp sum = ReduceOp::kSum;
  int failures = 0;
  long calls = 0;
  // Each call is followed by a barrier, so that no rank runs more than a call ahead: a rank
  // that sends and leaves (a broadcast's root, a reduce's leaves) could otherwise run up to
  // its transport's cap ahead, and its receivers buffer what arrives early in pooled
  // buffers whose number follows the furthest it ever got, a matter of timing. The
  // barrier's own calls count with the others (it allocates nothing either).
  auto callAndBarrier = [&](const std::function<Status()>& call) {
    Status s = call();
    return s.ok() ? comm.barrier() : s;
  };

  for (int phase = 0; phase < 2; ++phase)
  for (std::size_t total : kTotals) {
    const std::size_t count = std::max<std::size_t>(1, total / 4);     // elements in all
    const std::size_t block = std::max<std::size_t>(1, count / un);    // per rank's block
    Buffer in(count * 4, shared), out(count * 4, shared);
    Buffer blocksIn(block * un * 4, shared), blocksOut(block * un * 4, shared);
    float* bi = blocksIn.f();
    float* bo = blocksOut.f();
    const std::vector<std::size_t> counts(un, block);
    std::vector<std::size_t> displs(un);
    for (std::size_t i = 0; i < un; ++i) displs[i] = i * block;

    struct Case {
      const char* name;
      const char* placement;
      std::function<Status()> call;
    };
    const std::vector<Case> cases = {
        {"allreduce", "out", [&] { return comm.allreduce(in.f(), out.f(), count, f32, sum); }},
        {"allreduce", "in", [&] { return comm.allreduce(out.f(), out.f(), count, f32, sum); }},
        {"broadcast", "out", [&] { return comm.broadcast(in.f(), out.f(), count, f32, 0); }},
        {"broadcast", "in", [&] { return comm.broadcast(out.f(), out.f(), count, f32, 0); }},
        {"reduce", "out", [&] { return comm.reduce(in.f(), out.f(), count, f32, sum, 0); }},
        {"allgather", "out", [&] { return comm.allgather(bi, bo, block, f32); }},
        {"allgather", "in",
         [&] { return comm.allgather(bo + displs[static_cast<std::size_t>(r)], bo, block, f32); }},
        {"allgatherv", "out",
         [&] { return comm.allgatherv(bi, block, bo, counts, displs, f32); }},
        {"reducescatter", "out", [&] { return comm.reduceScatter(bi, bo, block, f32, sum); }},
        {"reducescatterv", "out", [&] { return comm.reduceScatterv(bi, bo, counts, f32, sum); }},
        {"alltoall", "out", [&] { return comm.alltoall(bi, bo, block, f32); }},
        {"alltoall", "in", [&] { return comm.alltoall(bo, bo, block, f32); }},
        {"alltoallv", "out",
         [&] { return comm.alltoallv(bi, counts, displs, bo, counts, displs, f32); }},
        {"gather", "out", [&] { return comm.gather(bi, bo, block, f32, 0); }},
        {"gatherv", "out", [&] { return comm.gatherv(bi, block, bo, counts, displs, f32, 0); }},
        {"scatter", "out", [&] { return comm.scatter(bi, bo, block, f32, 0); }},
        {"scatterv", "out", [&] { return comm.scatterv(bi, counts, displs, bo, block, f32, 0); }},
        {"barrier", "-", [&] { return comm.barrier(); }},
        {"sendrecv", "ring",
         [&] {
           // Around the ring: even ranks send first, odd ranks receive first.
           const int next = (r + 1) % n, prev = (r + n - 1) % n;
           if (n == 1) return Status::Ok();
           if (r % 2 == 0) {
             Status s = comm.send(in.f(), count, f32, next, 5);
             return s.ok() ? comm.recv(out.f(), count, f32, prev, 5) : s;
           }
           Status s = comm.recv(out.f(), count, f32, prev, 5);
           return s.ok() ? comm.send(in.f(), count, f32, next, 5) : s;
         }},
    };
    std::vector<Case> all;
    // An asynchronous call starts the communicator's worker thread, after which blocking
    // calls take another path: phase 1 has an asynchronous all-reduce first.
    if (phase == 1)
      all.push_back({"allreduce-async", "out", [&] {
                       return comm.allreduceAsync(in.f(), out.f(), count, f32, sum).wait();
                     }});
    all.insert(all.end(), cases.begin(), cases.end());
    for (const Case& c : all) {
      for (int i = 0; i < kWarmup; ++i) {
        Status s = callAndBarrier(c.call);
        if (!s.ok()) {
          std::printf("RESULT FAILED rank %d: phase %d %s %zu B %s: %s\n", r, phase, c.name, total,
                      c.placement, s.toString().c_str());
          return 1;
        }
      }
      // kWindows windows of kCalls calls. Each in which nothing grew on this rank (no
      // early-message buffer, SparePool: timing decides how many messages arrive before
      // their receives, and the pools grow to the most ever needed; no way of the path
      // learner's called for the first time) must show nothing, and one at least must be
      // such. Every rank makes the same calls.
      // The windows of a case end once every rank has judged kJudgedWindows of them (or
      // after kWindows): the ranks agree on it after each window, outside it, by an
      // all-reduce (min) of their counts, since a pool may grow on one rank and not another.
      int judged = 0;
      for (int window = 0; window < kWindows; ++window) {
        if (window > 0) {
          std::int32_t mine = judged, fewest = 0;
          Status s = comm.allreduce(&mine, &fewest, 1, DataType::kInt32, ReduceOp::kMin);
          if (!s.ok()) {
            std::printf("RESULT FAILED rank %d: phase %d %s %zu B %s: %s\n", r, phase, c.name,
                        total, c.placement, s.toString().c_str());
            return 1;
          }
          if (fewest >= kJudgedWindows) break;
        }
        timespec windowStart{};
        clock_gettime(CLOCK_MONOTONIC, &windowStart);
        const std::uint64_t growthBefore = poolGrowth().done;
        const Counts before = Counts::now();
        if (trace) {
          char line[160];
          const int len = std::snprintf(line, sizeof(line), "== rank %d phase %d %s %zu B %s window %d\n",
                                        r, phase, c.name, total, c.placement, window);
          (void)!write(2, line, static_cast<std::size_t>(len));
        }
        gTrace.store(trace);
        for (int i = 0; i < kCalls; ++i) {
          Status s = callAndBarrier(c.call);
          if (!s.ok()) {
            std::printf("RESULT FAILED rank %d: phase %d %s %zu B %s: %s\n", r, phase, c.name,
                        total, c.placement, s.toString().c_str());
            return 1;
          }
        }
        gTrace.store(false);
        const Counts after = Counts::now();
        const PoolGrowth growth = poolGrowth();
        const bool grew = growth.done != growthBefore || growth.underWay != 0;
        calls += kCalls;
        if (!grew) {
          ++judged;
          const long allocations = after.allocations - before.allocations;
          const long minor = after.minorFaults - before.minorFaults;
          const long major = after.majorFaults - before.majorFaults;
          const long mappings = after.mappings - before.mappings;
          // Fewer mappings is fine: the shm transport unmaps peers' freed memAlloc buffers
          // once a second, whatever call is running.
          if (allocations != 0 || minor != 0 || major != 0 || mappings > 0) {
            ++failures;
            std::printf("RESULT FAILED rank %d: phase %d %s %zu B %s: %ld allocations, %ld "
                        "minor and %ld major page faults, %ld new mappings in window %d of "
                        "%d calls\n",
                        r, phase, c.name, total, c.placement, allocations, minor, major,
                        mappings, window, kCalls);
            if (trace) {
              timespec end{};
              clock_gettime(CLOCK_MONOTONIC, &end);
              std::printf("WINDOW pid %d from %ld.%09ld to %ld.%09ld\n", getpid(),
                          static_cast<long>(windowStart.tv_sec), windowStart.tv_nsec,
                          static_cast<long>(end.tv_sec), end.tv_nsec);
            }
          }
        }
      }
      if (judged == 0) {
        ++failures;
        std::printf("RESULT FAILED rank %d: phase %d %s %zu B %s: a pool grew in each of %d "
                    "windows of %d calls\n",
                    r, phase, c.name, total, c.placement, kWindows, kCalls);
      }
    }
  }
  // A rank that leaves the last window's barrier first would otherwise close its
  // communicator while others are still in that window, and a peer's departure is no call
  // of the steady state (its notice is made into an error, should a receive still wait).
  Status last = comm.barrier();
  if (!last.ok()) {
    std::printf("RESULT FAILED rank %d: the closing barrier: %s\n", r, last.toString().c_str());
    return 1;
  }
  if (failures == 0) std::printf("RESULT OK rank %d calls %ld\n", r, calls);
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
