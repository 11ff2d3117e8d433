#include "core/flight_recorder.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/assert.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/strings.h"
#include "base/wait.h"
#include "schedule/collective.h"

namespace tutti::detail {
namespace {

// The seqlock's ordering without standalone fences (which ThreadSanitizer does not model,
// and GCC rejects under -fsanitize=thread): every field is stored with release, so a reader
// whose acquire load sees a field of a new write also sees the odd version stored before
// it, and its later look at the version (after acquire loads, which nothing later can
// overtake) finds it changed. On x86 both are plain moves: the same code as relaxed.
constexpr std::memory_order kFieldStore = std::memory_order_release;
constexpr std::memory_order kFieldLoad = std::memory_order_acquire;

// A reader gives a slot this many tries: the writer rewrites a slot in nanoseconds, so only
// a reader preempted mid-copy sees a change, and then usually once.
constexpr int kReadTries = 64;

std::int64_t sinceEpochNs(FlightRecorder::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

FlightRecorder::Clock::time_point fromEpochNs(std::int64_t ns) {
  return FlightRecorder::Clock::time_point(
      std::chrono::duration_cast<FlightRecorder::Clock::duration>(std::chrono::nanoseconds(ns)));
}

std::uint64_t packShape(const CallSummary& c) {
  return static_cast<std::uint64_t>(c.kind) | (static_cast<std::uint64_t>(c.dtype) << 8) |
         (static_cast<std::uint64_t>(c.op) << 16) |
         (static_cast<std::uint64_t>(c.perRankCounts ? 1 : 0) << 24);
}

void unpackShape(std::uint64_t shape, CallSummary* c) {
  c->kind = static_cast<Collective>(shape & 0xff);
  c->dtype = static_cast<DataType>((shape >> 8) & 0xff);
  c->op = static_cast<ReduceOp>((shape >> 16) & 0xff);
  c->perRankCounts = ((shape >> 24) & 1) != 0;
}


}  // namespace

std::string describeCall(const CallSummary& c, std::optional<std::uint64_t> countsHash) {
  switch (c.kind) {
    case Collective::kSend:
    case Collective::kRecv:
      return strFormat("%s %s rank %d (tag %d, count %llu %s)", collectiveName(c.kind),
                       c.kind == Collective::kSend ? "to" : "from", c.peer, c.tag,
                       static_cast<unsigned long long>(c.count), dataTypeName(c.dtype));
    case Collective::kBarrier:
      return strFormat("barrier #%llu", static_cast<unsigned long long>(c.seq));
    default:
      break;
  }
  std::string text = strFormat("%s #%llu (", collectiveName(c.kind),
                               static_cast<unsigned long long>(c.seq));
  if (c.perRankCounts && countsHash.has_value())
    text += strFormat("per-rank counts hashing to 0x%016llx",
                      static_cast<unsigned long long>(*countsHash));
  else if (c.perRankCounts)
    text += "per-rank counts";
  else text += strFormat("count %llu", static_cast<unsigned long long>(c.count));
  text += strFormat(" %s", dataTypeName(c.dtype));
  if (isReduction(c.kind)) text += strFormat(" %s", reduceOpName(c.op));
  if (isRooted(c.kind)) text += strFormat(" root %d", c.root);
  return text + strFormat(", %s)", c.algorithm);
}

FlightRecorder::FlightRecorder(std::string commName, int rank, std::size_t capacity)
    : commName_(std::move(commName)),
      rank_(rank),
      capacity_(capacity),
      slots_(capacity > 0 ? std::make_unique<Slot[]>(capacity) : nullptr) {}

FlightRecorder::Handle FlightRecorder::begin(const CallSummary& call, Clock::time_point issued) {
  if (capacity_ == 0) return Handle{};
  const std::uint64_t op = next_.load(std::memory_order_relaxed);  // this thread's own count
  const std::size_t index = cursor_;
  cursor_ = cursor_ + 1 == capacity_ ? 0 : cursor_ + 1;
  Slot& s = slots_[index];
  const std::uint64_t v = s.version.load(std::memory_order_relaxed);
  s.version.store(v + 1, std::memory_order_relaxed);
  s.op.store(op, kFieldStore);
  s.seq.store(call.seq, kFieldStore);
  s.count.store(call.count, kFieldStore);
  s.shape.store(packShape(call), kFieldStore);
  const int party = isPointToPoint(call.kind) ? call.peer : call.root;
  s.where.store(static_cast<std::uint32_t>(party) |
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(call.tag)) << 32),
                kFieldStore);
  s.algorithm.store(call.algorithm, kFieldStore);
  s.issuedNs.store(sinceEpochNs(issued), kFieldStore);
  s.endedNs.store(0, kFieldStore);
  s.state.store(static_cast<std::uint32_t>(Outcome::kRunning), kFieldStore);
  s.version.store(v + 2, std::memory_order_release);
  next_.store(op + 1, std::memory_order_release);
  return Handle{op, index};
}

void FlightRecorder::end(const Handle& handle, ErrorCode code) {
  if (handle.slot == kNoSlot) return;
  Slot& s = slots_[handle.slot];
  // begin() of the next operation comes after this end(), so the slot is still this one's.
  TUTTI_DASSERT(s.op.load(std::memory_order_relaxed) == handle.op);
  const Outcome outcome = code == ErrorCode::kOk ? Outcome::kOk : Outcome::kFailed;
  const std::uint64_t v = s.version.load(std::memory_order_relaxed);
  s.version.store(v + 1, std::memory_order_relaxed);
  // The failure path can afford the clock (see the header).
  if (outcome == Outcome::kFailed) s.endedNs.store(sinceEpochNs(Clock::now()), kFieldStore);
  s.state.store(static_cast<std::uint32_t>(outcome) | (static_cast<std::uint32_t>(code) << 8),
                kFieldStore);
  s.version.store(v + 2, std::memory_order_release);
}

bool FlightRecorder::read(std::size_t index, Entry* e) const {
  const Slot& s = slots_[index];
  for (int attempt = 0; attempt < kReadTries; ++attempt) {
    const std::uint64_t before = s.version.load(std::memory_order_acquire);
    if ((before & 1) != 0) {
      cpuRelax();
      continue;
    }
    e->op = s.op.load(kFieldLoad);
    e->call.seq = s.seq.load(kFieldLoad);
    e->call.count = s.count.load(kFieldLoad);
    unpackShape(s.shape.load(kFieldLoad), &e->call);
    const std::uint64_t where = s.where.load(kFieldLoad);
    const auto party = static_cast<int>(static_cast<std::uint32_t>(where));
    e->call.tag = static_cast<int>(static_cast<std::uint32_t>(where >> 32));
    e->call.peer = isPointToPoint(e->call.kind) ? party : -1;
    e->call.root = isPointToPoint(e->call.kind) ? 0 : party;
    e->call.algorithm = s.algorithm.load(kFieldLoad);
    e->issued = fromEpochNs(s.issuedNs.load(kFieldLoad));
    e->ended = fromEpochNs(s.endedNs.load(kFieldLoad));
    const std::uint32_t state = s.state.load(kFieldLoad);
    e->outcome = static_cast<Outcome>(state & 0xff);
    e->code = static_cast<ErrorCode>(state >> 8);
    // An unchanged, even version means no write overlapped the copy (see kFieldStore).
    if (s.version.load(std::memory_order_relaxed) == before) return true;
  }
  return false;
}

std::vector<FlightRecorder::Entry> FlightRecorder::snapshot() const {
  std::vector<Entry> out;
  const std::uint64_t end = recorded();
  if (capacity_ == 0 || end == 0) return out;
  const std::uint64_t first = end > capacity_ ? end - capacity_ : 0;
  out.reserve(static_cast<std::size_t>(end - first));
  for (std::uint64_t op = first; op < end; ++op) {
    Entry e;
    // Slots are filled in order, so operation `op` went to slot op % capacity. One that was
    // overwritten since `end` was read holds a newer operation: left out, it is in a later dump.
    if (read(static_cast<std::size_t>(op % capacity_), &e) && e.op == op) out.push_back(e);
  }
  return out;
}

std::string FlightRecorder::formatEntry(const Entry& e, Clock::time_point now) {
  auto seconds = [](Clock::duration d) {
    return std::max(0.0, std::chrono::duration<double>(d).count());
  };
  std::string text = strFormat("op %llu: %s issued %.3f s ago, ",
                               static_cast<unsigned long long>(e.op), describeCall(e.call).c_str(),
                               seconds(now - e.issued));
  switch (e.outcome) {
    case Outcome::kRunning:
      return text + "running";
    case Outcome::kOk:
      return text + "ok";
    case Outcome::kFailed:
      break;
  }
  return text + strFormat("failed (%s) after %.3f s", errorCodeName(e.code),
                          seconds(e.ended - e.issued));
}

void FlightRecorder::dump(const char* reason, std::size_t limit) const {
  const std::vector<Entry> entries = snapshot();
  const Clock::time_point now = Clock::now();
  const std::size_t shown = std::min(limit, entries.size());
  TUTTI_WARN(kColl, "flight recorder of communicator '%s' rank %d (%s): %llu operations so far%s",
             commName_.c_str(), rank_, reason, static_cast<unsigned long long>(recorded()),
             shown > 0 ? strFormat(", the last %zu follow", shown).c_str() : "");
  for (std::size_t i = entries.size() - shown; i < entries.size(); ++i)
    TUTTI_WARN(kColl, "flight recorder '%s' rank %d: %s", commName_.c_str(), rank_,
               formatEntry(entries[i], now).c_str());
}

// --- live recorders and SIGUSR1 ---------------------------------------------------------

namespace {

// The eventfd the handler writes to: created once, never closed (see the header).
std::atomic<int> gSignalFd{-1};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads gSignalFd");

void onSigusr1(int) {
  const int savedErrno = errno;
  const int fd = gSignalFd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const std::uint64_t one = 1;
    // Only fails when the counter is about to overflow: the dump is pending already.
    [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof(one));
  }
  errno = savedErrno;
}

struct Registry {
  std::mutex lifecycle;  // serialises starting and stopping the thread (held across join)
  std::mutex mutex;      // guards everything below; held while dumping
  std::condition_variable dumped;
  std::vector<FlightRecorder*> recorders;
  std::thread thread;
  bool stopping = false;
  std::uint64_t signalDumps = 0;
};

// Never destroyed: see the header.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

void dumpAllLocked(Registry& r, const char* reason) {
  for (const FlightRecorder* recorder : r.recorders) recorder->dump(reason, recorder->capacity());
}

// The dump thread: waits for the handler's (or stop's) write to the eventfd.
void dumpLoop(Registry& r, int fd) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    threadSettled();
    // An idle wait with no deadline, like a worker waiting for work: it ends when a signal
    // arrives or when the last communicator goes (removeLiveRecorder writes to the fd).
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) {
      TUTTI_WARN(kColl, "flight recorder: poll failed (%s); SIGUSR1 will no longer dump",
                 std::strerror(errno));
      return;
    }
    std::uint64_t value = 0;
    const bool signalled = ::read(fd, &value, sizeof(value)) == sizeof(value);
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.stopping) return;
    if (!signalled) continue;  // woken with nothing to read (another reader drained it)
    dumpAllLocked(r, "SIGUSR1");
    ++r.signalDumps;
    r.dumped.notify_all();
  }
}

// Creates the eventfd once; -1 when it cannot be (SIGUSR1 then does not dump).
int signalFd() {
  int fd = gSignalFd.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    TUTTI_WARN(kInit, "flight recorder: eventfd failed (%s); SIGUSR1 will not dump",
               std::strerror(errno));
    return -1;
  }
  gSignalFd.store(fd, std::memory_order_release);
  return fd;
}

// Installs the handler if SIGUSR1 still has its default action.
void installHandlerIfDefault() {
  struct sigaction current {};
  if (::sigaction(SIGUSR1, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) {
    if (current.sa_handler != &onSigusr1)
      TUTTI_INFO(kInit, "SIGUSR1 has a handler already; the flight recorder leaves it alone");
    return;
  }
  struct sigaction mine {};
  mine.sa_handler = &onSigusr1;
  sigemptyset(&mine.sa_mask);
  mine.sa_flags = SA_RESTART;  // interrupted system calls resume, as if nothing happened
  if (::sigaction(SIGUSR1, &mine, nullptr) == 0)
    TUTTI_INFO(kInit, "SIGUSR1 dumps the flight recorders of this process's communicators");
}

// Starts the dump thread with every signal blocked, so that signals meant for the
// application's threads (and SIGUSR1's handler) never run on it.
std::thread startDumpThread(Registry& r, int fd) {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::thread thread = startPrefaultedThread([&r, fd] { dumpLoop(r, fd); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

}  // namespace

void addLiveRecorder(FlightRecorder* recorder, bool installSignalHandler) {
  TUTTI_ASSERT(recorder != nullptr);
  Registry& r = registry();
  std::lock_guard<std::mutex> lifecycle(r.lifecycle);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    first = r.recorders.empty();
    r.recorders.push_back(recorder);
  }
  if (!first) return;
  const int fd = signalFd();
  if (fd < 0) return;
  std::uint64_t stale = 0;
  // A SIGUSR1 that came while no communicator lived has nothing to dump now.
  [[maybe_unused]] ssize_t n = ::read(fd, &stale, sizeof(stale));
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.stopping = false;
  }
  TUTTI_ASSERT(!r.thread.joinable());
  r.thread = startDumpThread(r, fd);
  if (installSignalHandler) installHandlerIfDefault();
}

void removeLiveRecorder(FlightRecorder* recorder) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lifecycle(r.lifecycle);
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = std::find(r.recorders.begin(), r.recorders.end(), recorder);
    TUTTI_ASSERT(it != r.recorders.end());
    r.recorders.erase(it);
    if (!r.recorders.empty() || !r.thread.joinable()) return;
    r.stopping = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(gSignalFd.load(std::memory_order_acquire), &one, sizeof(one));
  r.thread.join();
}

void dumpLiveRecorders(const char* reason) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  dumpAllLocked(r, reason);
}

bool waitForSignalDumps(std::uint64_t count, Deadline deadline) {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  TUTTI_ASSERT(!deadline.isNever());  // time_point::max would overflow the wait's clock
  return r.dumped.wait_until(lock, deadline.at(), [&] { return r.signalDumps >= count; });
}

bool flightRecorderSignalHandlerInstalled() {
  struct sigaction current {};
  if (::sigaction(SIGUSR1, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == &onSigusr1;
}

}  // namespace tutti::detail
