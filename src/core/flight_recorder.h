#pragma once
// The flight recorder (DESIGN.md 7): each communicator keeps its last operations in a ring,
// and dumps them to the log when a call fails on a timeout, when it is aborted (locally or by
// a peer) and on SIGUSR1. A dump shows what every rank was doing, which call is still running
// and since when, even when the process is stuck inside tutti.
//
// Recording is on every call's path, so it takes no lock and allocates nothing: each slot of
// the ring is a seqlock (a version that is odd while the single writer rewrites the slot,
// every field an atomic), written by the thread that runs the communicator's operations (one
// at a time) and read by any thread, typically the dump thread while calls continue. A reader
// retries a slot that changes under it a bounded number of times, then leaves it out.
//
// Clocks cost more than the record (a clock read is 20-100 ns on this machine, even the coarse
// clock 6-15 ns, the record about 4 ns), so a call reads none: its issue time is its deadline
// minus its timeout (prepare() reads the clock once for the deadline), and only a call that
// fails records when it ended. A successful call shows "ok": how long it took would need a
// clock read on every call, and the coarse clock's few-ms resolution would show 0 for most.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedule/collective.h"
#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti::detail {

/// One operation as the flight recorder keeps it and as errors name it: its shape, and who
/// and which it was. Trivially copyable: `algorithm` points at a registry entry's name,
/// which lives as long as the process.
struct CallSummary : CallKey {
  bool perRankCounts = false;  // a v-collective: the counts come in arrays
  int tag = 0;                 // point to point
  std::uint64_t seq = 0;       // collectives: the sequence number
  const char* algorithm = "";
};

/// The call as errors and dumps name it: "allreduce #12 (count 1000 float32 sum, ring)",
/// "barrier #4", "send to rank 2 (tag 5, count 8 uint8)". `countsHash`, where given, is
/// shown for per-rank counts as a peer's stamp shows it (describeStamp).
std::string describeCall(const CallSummary& call,
                         std::optional<std::uint64_t> countsHash = std::nullopt);

class FlightRecorder {
 public:
  using Clock = Deadline::Clock;

  enum class Outcome : std::uint8_t { kRunning = 0, kOk = 1, kFailed = 2 };

  /// A record as read back.
  struct Entry {
    std::uint64_t op = 0;  // this communicator's n-th operation (collective or not), from 0
    CallSummary call;
    Clock::time_point issued;
    Clock::time_point ended;  // kFailed only: when it ended
    Outcome outcome = Outcome::kRunning;
    ErrorCode code = ErrorCode::kOk;  // why it failed
  };

  /// What begin() returns and end() takes.
  struct Handle {
    std::uint64_t op = 0;
    std::size_t slot = kNoSlot;
  };

  /// The newest records a dump on a failure shows (SIGUSR1 shows the whole ring): enough to
  /// see the calls that led to the hang without burying the error under the history.
  static constexpr std::size_t kFailureDumpRecords = 32;

  /// Keeps the last `capacity` operations of communicator `commName` on `rank`; capacity 0
  /// records nothing.
  FlightRecorder(std::string commName, int rank, std::size_t capacity);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  /// Records the start of an operation issued at `issued`. Called by the thread that runs the
  /// communicator's operations, one operation at a time (begin, then end, then the next
  /// begin). Never blocks or allocates.
  Handle begin(const CallSummary& call, Clock::time_point issued);
  /// Records how the operation of `handle` ended (kOk: it succeeded; only a failure reads the
  /// clock). Same thread as begin().
  void end(const Handle& handle, ErrorCode code);

  /// The records kept, oldest first. Any thread, concurrently with begin() and end(); a
  /// record rewritten while it is read is retried a few times, then left out.
  std::vector<Entry> snapshot() const;
  /// Operations recorded so far (also those no longer kept). Any thread.
  std::uint64_t recorded() const { return next_.load(std::memory_order_acquire); }

  /// Logs, at WARN, a header naming `reason` and one line per record, at most the newest
  /// `limit`. Any thread.
  void dump(const char* reason, std::size_t limit) const;
  /// The line of one record: "op 17: allreduce #15 (count 1024 float32 sum, ring) issued
  /// 12.345 s ago, running" (or "ok", or "failed (timeout) after 3.000 s").
  static std::string formatEntry(const Entry& entry, Clock::time_point now);

  const std::string& commName() const { return commName_; }
  int rank() const { return rank_; }
  std::size_t capacity() const { return capacity_; }

 private:
  static constexpr std::size_t kNoSlot = ~std::size_t{0};

  // Every field is an atomic so that a reader racing the writer reads stale or torn
  // *records* (caught by the version) but never makes a data race.
  struct Slot {
    std::atomic<std::uint64_t> version{0};  // odd while being written
    std::atomic<std::uint64_t> op{0};
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> shape{0};  // kind, dtype, op, per-rank counts flag
    std::atomic<std::uint64_t> where{0};  // root or peer (low 32 bits), tag (high 32 bits)
    std::atomic<const char*> algorithm{""};
    std::atomic<std::int64_t> issuedNs{0};
    std::atomic<std::int64_t> endedNs{0};
    std::atomic<std::uint32_t> state{0};  // Outcome, and the ErrorCode << 8
  };

  // Copies slot `slot` into *entry; false when the writer kept changing it.
  bool read(std::size_t slot, Entry* entry) const;

  const std::string commName_;
  const int rank_;
  const std::size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::size_t cursor_ = 0;               // the slot begin() writes next (writer only)
  std::atomic<std::uint64_t> next_{0};  // operations begun so far
};

// --- the live recorders of this process, dumped on SIGUSR1 ------------------------------
//
// A handler that only writes to an eventfd (async-signal-safe) and a thread that waits on it
// and dumps every live recorder. The thread runs while at least one communicator lives:
// the first addLiveRecorder() starts it, the last removeLiveRecorder() stops and joins it,
// so that a process without communicators has no tutti thread. The handler, once installed,
// stays (uninstalling it could let an in-flight SIGUSR1 kill the process), and so does the
// eventfd it writes to (closing it could let the handler write into a reused descriptor):
// one descriptor for the life of the process, not one per communicator. The registry itself
// is never destroyed, so a communicator still alive at exit() cannot make a joinable thread
// terminate the process.

/// Adds `recorder` to the live ones until removeLiveRecorder(). When it is the first, starts
/// the dump thread and, if `installSignalHandler` and SIGUSR1 has its default action,
/// installs tutti's handler (a user's handler is never replaced). Any thread.
void addLiveRecorder(FlightRecorder* recorder, bool installSignalHandler);

/// Removes `recorder`; when it was the last, stops and joins the dump thread. Blocks while a
/// dump is being written (bounded: a dump only formats and logs).
void removeLiveRecorder(FlightRecorder* recorder);

/// Dumps every live recorder in full, as SIGUSR1 does. Any thread.
void dumpLiveRecorders(const char* reason);

/// True once the dump thread has answered at least `count` SIGUSR1s in this process, waiting
/// for that until `deadline`, which must not be never (tests).
bool waitForSignalDumps(std::uint64_t count, Deadline deadline);

/// Whether SIGUSR1's current disposition is tutti's handler.
bool flightRecorderSignalHandlerInstalled();

}  // namespace tutti::detail
