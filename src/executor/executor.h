#pragma once
// The executor (DESIGN.md 3): the only code that runs a Schedule for real. It issues steps
// in schedule order as their dependencies complete, keeps at most `maxInflight` steps in
// flight (this is what pipelines segments), receives reductions into pooled staging
// buffers, and bounds everything by the call's deadline.
//
// Failure: any failed transfer, a transport failure (a peer died elsewhere in the mesh), or
// the deadline marks the transport failed, cancels every request still pending, and returns
// the error; the user's buffers are never touched after execute() returns.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "transport/link.h"
#include "tutti/deadline.h"
#include "tutti/types.h"

namespace tutti {

/// Memory reused across calls so that no call allocates on its path once warm: staging
/// buffers for received operands and the executor's per-step bookkeeping.
class ExecutorPool {
 public:
  ExecutorPool();
  ~ExecutorPool();
  ExecutorPool(const ExecutorPool&) = delete;
  ExecutorPool& operator=(const ExecutorPool&) = delete;

  struct Slot;  // one in-flight step (defined in executor.cc)

  /// Ensures `slots` slots with staging buffers of at least `stagingBytes` each.
  void reserve(std::size_t slots, std::size_t stagingBytes);
  Slot& slot(std::size_t i);
  std::vector<std::uint8_t>& stepState() { return stepState_; }
  /// One request per rank of a world of `ranks` for a run's probes (ExecParams::probeAt),
  /// made on first use. A probe may still be pending when its run ends (the link sends it
  /// once it has room): the pool must outlive the transport's use of it (until the
  /// transport's shutdown or failure, which complete every request).
  TransferRequest* probes(std::size_t ranks);

 private:
  std::vector<std::unique_ptr<Slot>> slots_;
  std::size_t stagingBytes_ = 0;
  std::vector<std::uint8_t> stepState_;
  std::unique_ptr<TransferRequest[]> probes_;
  std::size_t probeCount_ = 0;
};

/// How long a collective call waits before it probes the peers it still waits for
/// (ExecParams::probeAt): far beyond a call's usual time, so that only a call stuck in a
/// mismatch or waiting for a late rank sends the few empty messages.
inline constexpr std::chrono::milliseconds kProbeAfter{100};

struct ExecBuffers {
  const void* input = nullptr;
  void* output = nullptr;
  void* scratch = nullptr;
};

/// Names the operation in errors ("allreduce #12 (count 1000 float32 sum, ring)"). Asked
/// only when something is reported, so that a call that succeeds formats no text.
class OpDescriber {
 public:
  virtual ~OpDescriber() = default;
  virtual std::string describe() const = 0;
  /// The call a peer's message was stamped with, described as describe() would on that
  /// peer ("allreduce #12 (count 1000 float32 sum, ring)"); the sequence number is this
  /// call's, since the message carried the same tag.
  virtual std::string describeStamp(const CallStamp& stamp) const = 0;
};

struct ExecParams {
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int worldSize = 1;       // for the operator's finalization (kAvg)
  Tag tagBase = 0;         // message tag = tagBase + message index
  Deadline deadline = Deadline::never();
  std::int64_t spinNs = 20000;
  std::size_t maxInflight = 16;
  /// Names the operation in errors; null: "the operation".
  const OpDescriber* what = nullptr;
  /// Carried by every message of the call and checked against the peers' (mismatch
  /// detection); empty for point to point.
  CallStamp stamp;
  /// A run of a collective (a stamp) that still waits for peers at this time sends each of
  /// them a probe (tag.h): an empty message with the call's stamp, which the peer checks
  /// against its own call of that number. Where ranks wait on each other in calls that
  /// differ only in a root, no message of either call would cross: the probe shows the
  /// mismatch. Never: no probes.
  Deadline probeAt = Deadline::never();
  /// When set (and the stamp is not empty), the run registers call `seq` with it
  /// (CallChecker::begin) once its first steps are issued: off the critical path, since the
  /// first messages are then already on their way to the peers. A conflict fails the run.
  CallChecker* checker = nullptr;
  std::uint64_t seq = 0;
  /// Sends ask links to copy rather than let the peer read in place
  /// (TransferRequest::preferCopy): for calls whose messages are mostly reduced on arrival.
  bool preferCopy = false;
  /// Sends ask links to write their copies past the caches (TransferRequest::streamPieces).
  bool streamPieces = false;
};

/// Where a run stood when it failed, for the hang report (core/hang_report.h). Filled only
/// on failure, so that a call that succeeds formats nothing.
struct ExecReport {
  std::size_t completedSteps = 0;
  std::size_t totalSteps = 0;
  /// What the run was still waiting for when it stopped: "data from rank 3 (step 2), rank 1
  /// to accept data (step 5)"; empty when nothing was in flight.
  std::string waitingOn;
};

/// Runs `schedule` over `transport`. Blocks until it completes, fails or the deadline passes.
/// On failure, fills `*report` when it is not null.
Status execute(Transport& transport, const Schedule& schedule, const ExecBuffers& buffers,
               const ExecParams& params, ExecutorPool& pool, ExecReport* report = nullptr);

/// Several runs driven together by one thread, each ending as execute() would end it alone.
/// For point-to-point calls issued back to back, which may wait on one another across ranks:
/// an irecv from the left and then an isend to the right on every rank of a ring completes
/// only if both are in flight at once. Runs post their first steps in the order they are
/// added. Only one thread drives a transport at a time (as with execute()).
class RunGroup {
 public:
  explicit RunGroup(Transport& transport);
  ~RunGroup();
  RunGroup(const RunGroup&) = delete;
  RunGroup& operator=(const RunGroup&) = delete;

  /// Around each use: this thread drives the transport from begin() to end(), by which
  /// time every run must have ended. A group is reused: a warm one allocates nothing.
  void begin();
  void end();

  /// Starts a run (its own pool: runs in flight together share none); *result is set and
  /// *ended becomes true when it ends. Every argument must stay valid until then.
  void add(const Schedule& schedule, const ExecBuffers& buffers, const ExecParams& params,
           ExecutorPool& pool, ExecReport* report, Status* result, bool* ended);
  /// True while a run has not ended.
  bool active() const { return !active_.empty(); }
  /// Moves every run on; when none moved, waits for progress (bounded by the earliest
  /// deadline, after which the runs past theirs end with a timeout) unless the transport's
  /// progressSignal() differs from `seen`, read by the caller before it last looked for
  /// work to add (so that work added after that look cuts the wait short). May return early.
  void turn(std::uint32_t seen);

 private:
  struct Entry;
  void finish(Entry& e, Status status);

  Transport& transport_;
  std::vector<std::unique_ptr<Entry>> active_;  // in the order they were added
  std::vector<std::unique_ptr<Entry>> spare_;
};

}  // namespace tutti
