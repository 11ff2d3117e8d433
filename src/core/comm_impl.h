#pragma once
// CommImpl: the state of one communicator and the path every operation takes:
//   validate -> assign a sequence number -> select algorithm -> build (or reuse) the
//   schedule -> run it with the executor over the transport.
// Operations run in issue order: on the calling thread when nothing is queued (blocking
// calls), or on the communicator's worker thread (async calls, and blocking calls issued
// while async ones are pending). Point-to-point calls issued back to back run together
// (runP2pGroup).

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <tuple>

#include "base/ring_queue.h"
#include "algorithms/algorithm.h"
#include "base/config.h"
#include "base/wait.h"
#include "bootstrap/auth.h"
#include "core/call_checks.h"
#include "core/flight_recorder.h"
#include "core/path_learner.h"
#include "core/work_state.h"
#include "executor/executor.h"
#include "transport/call_checker.h"
#include "transport/link.h"
#include "tutti/communicator.h"

namespace tutti {
class TcpStoreServer;
}

namespace tutti::detail {

class WorkState;

/// One operation as issued by the user: the collective's definition (rank, size and the
/// in-place flag are filled in by the communicator), the buffers, and how to run it.
struct OpRequest {
  CollectiveSpec spec;
  const void* input = nullptr;
  void* output = nullptr;
  int tag = 0;  // point to point only
  /// allgatherv and gatherv: the send count this rank states; scatterv: its receive count
  /// (each must equal this rank's entry in the shared counts array).
  std::optional<std::uint64_t> ownCount;
  /// The algorithm the call's options force, kept for a call that runs later (queued or
  /// async); a blocking call run at once reads it from its options instead.
  std::string algorithm;
  Deadline deadline = Deadline::never();
  Deadline::Clock::time_point issued;  // when the user issued it (the flight recorder)
  // Collectives: the sequence number on this communicator. Point to point: the next
  // collective's (how many were issued before it).
  std::uint64_t seq = 0;
  std::shared_ptr<WorkState> work;
};

/// Whether the algorithm `spec` gets depends on whether every rank's buffers come from
/// memAlloc (an all-reduce of 1 MiB or more among 3 to 8 ranks on one host): the ranks then
/// agree on it first (CommImpl::agreeOnBuffers). The same on every rank for one call.
bool choiceNeedsBuffers(const CollectiveSpec& spec);

/// Whether the call's sends ask links to copy rather than let the receiver read in place
/// (TransferRequest::preferCopy); data_path.cc.
bool prefersCopy(const CollectiveSpec& spec);

/// TUTTI_MESSAGE_PATH: how a collective's large messages travel where the transport can move
/// them directly (Transport::directFrom).
enum class MessagePath {
  kLearn,     // per shape, the faster way as timed (path_learner.h)
  kRule,      // prefersCopy
  kBuffered,  // through the transport's buffers
  kDirect,    // read or written in place
  kStreamed,  // through the transport's buffers, written past the caches
};
std::optional<MessagePath> parseMessagePath(const std::string& text);
/// Every rank publishes whether it learns the way of large messages and from which sizes
/// they may go directly or streamed, and checks every rank's against its own: creation fails on a
/// difference, naming both (data_path.cc).
Status agreeOnMessagePath(Store& store, const std::string& prefix, int rank, int size,
                          bool learns, std::uint64_t directFrom, std::uint64_t streamedFrom,
                          Deadline deadline);

class CommImpl final : public QueueRunner {
 public:
  struct InitParams {
    std::shared_ptr<Store> store;
    int rank = 0;
    int size = 1;
    CommOptions options;
    // Where to accept peers when TUTTI_BIND_ADDR is not set: the interface that reaches the
    // store; empty: 127.0.0.1.
    std::string bindHost;
    // The job key peer links prove (auth.h); empty: from TUTTI_SECRET / TUTTI_SECRET_FILE.
    std::optional<auth::Key> key;
    int localSize = 1;     // ranks on this host, when the launcher says
    std::unique_ptr<TcpStoreServer> ownedServer;  // a store this rank serves (rank 0)
  };

  static Result<std::unique_ptr<CommImpl>> create(InitParams params);
  ~CommImpl();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  Status health() const;
  /// Communicator::abort().
  void abort();

  /// Checks arguments, then runs the operation (blocking) or queues it (async).
  Status runBlocking(OpRequest&& request, const CallOptions& options);
  Work submit(OpRequest request, const CallOptions& options);

  Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                   const std::string& forced, bool sharedBuffers) const;
  Status verifyCall(const CallShape& call, const std::string& forced) const;
  /// "allreduce #12 (count 1000 float32 sum, ring)": the call as errors name it.
  std::string describe(const OpRequest& request, const char* algorithm) const;
  /// The call as the flight recorder keeps it.
  static CallSummary summarize(const OpRequest& request, const char* algorithm);

  /// The collective part of Communicator::split: nullptr for kNoColor.
  Result<std::unique_ptr<CommImpl>> split(int color, int key, const CommOptions& options);

 private:
  /// Builds the transport: shared memory when TUTTI_TRANSPORT allows and every rank is on
  /// this host, else TCP.
  Status connect(const InitParams& params, const Config& config, const std::string& prefix,
                 std::uint64_t uid, Deadline deadline);
  CommImpl(const Config& config, int rank, int size, std::string name);
  /// Fills in rank, size and the in-place flag and checks the arguments (call_checks.h).
  /// An error only this rank can see also fails the communicator, so that the peers stop
  /// waiting for this rank at once rather than at their deadline.
  Status validate(OpRequest& request);
  void prepare(OpRequest& request, const CallOptions& options);
  /// Runs one operation and records it in the flight recorder; on failure, adds the hang
  /// report and dumps the recorder when the failure calls for it. `requested`: the
  /// algorithm the call's options force (empty: none).
  Status execute(OpRequest& request, std::string_view requested);
  /// One flat exchange of a byte per rank: sets request.spec.sharedBuffers to whether every
  /// rank's input and output come from memAlloc, so that every rank chooses the same. Fails
  /// the communicator (as a call fails it) when the exchange fails.
  Status agreeOnBuffers(OpRequest& request);
  /// execute()'s run itself: the transport's health, the schedule, the executor. Sets
  /// *refused when the communicator had failed before the call began.
  Status runSchedule(const OpRequest& request, const AlgorithmInfo& algorithm,
                     const OpDescriber& what, ExecReport* report, bool* refused);
  /// The refusal of a call issued after the communicator failed (`health`).
  Status refusal(const OpDescriber& what, const Status& health) const;
  struct Plan;
  /// runSchedule() for an algorithm whose one round the transport's flat exchange carries
  /// (AlgorithmInfo::flatBytes): no executor, no messages, the same result and the same
  /// guarantees (stamps, deadline, abort, hang report).
  Status runFlat(const OpRequest& request, const AlgorithmInfo& algorithm, const CallStamp& stamp,
                 std::size_t bytes, const OpDescriber& what, ExecReport* report);
  /// A blocking call repeating the last one (repeated_): the transport's health, then
  /// runPlan() with what was decided for that call; none of validate(), chooseAlgorithm()
  /// and planFor(), whose answers would be the same. A failed transport refuses it as
  /// runSchedule() refuses any call.
  Status runRepeated(OpRequest& request, const CallOptions& options);
  /// After a blocking call that succeeded: keeps it in repeated_ when a repeat may skip
  /// the choices (what chooseAlgorithm() and planFor() kept for it), else clears repeated_.
  void keepRepeated(const OpRequest& request, const CallOptions& options);
  /// What runFlat() carries of a call of `spec` run with `algorithm`: its bytes, or
  /// kNotFlat when the executor runs it (no flat form, no flat exchange, or too large).
  static constexpr std::size_t kNotFlat = ~std::size_t{0};
  std::size_t flatBytesFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm) const;
  /// runSchedule() past the health check and the plan: the flat exchange when
  /// `flatBytes` says so, else the executor.
  Status runPlan(const OpRequest& request, const AlgorithmInfo& algorithm, const Plan& plan,
                 std::size_t flatBytes, const OpDescriber& what, ExecReport* report);
  /// One flat exchange of `bytes` at `data` for call `request`, stamped `stamp`: every
  /// rank's contribution in flatViews_ on success. `peerBytes`: FlatCall::peerBytes.
  Status exchangeFlat(const OpRequest& request, const CallStamp& stamp, const void* data,
                      std::size_t bytes, FlatStop* stop, const std::size_t* peerBytes = nullptr);
  /// A failed flat exchange worded as the executor words its failures (`stop`: where it
  /// stopped); fails the transport, as the executor does.
  Status flatFailure(const OpDescriber& what, Status status, const FlatStop& stop,
                     ExecReport* report);
  /// The executor's parameters for `request` run with `plan`.
  ExecParams execParams(const OpRequest& request, const Plan& plan, const OpDescriber& what);
  /// Sets how the call's messages travel (params->preferCopy, streamPieces), as
  /// TUTTI_MESSAGE_PATH says; data_path.cc. Sets *shape where paths_ chose, for its
  /// record() once the call ran. Fails where the ranks' agreement on a way failed (it then
  /// failed the communicator, worded for the call `what`).
  Status choosePath(const OpRequest& request, const CallStamp& stamp, const OpDescriber& what,
                    ExecParams* params, std::optional<std::uint32_t>* shape,
                    ExecReport* report);
  /// The way for choosePath.
  Status chooseWay(const OpRequest& request, const CallStamp& stamp, const OpDescriber& what,
                   PathLearner::Way* way, std::optional<std::uint32_t>* shape,
                   ExecReport* report);
  /// A decision of paths_ for `shape`: the ranks add up their estimates in a flat exchange.
  Status agreePath(const OpRequest& request, const CallStamp& stamp, const OpDescriber& what,
                   std::uint32_t shape, PathLearner::Way* way, ExecReport* report);

  // Point-to-point calls issued back to back run together (the executor's RunGroup), so
  // that an irecv followed by an isend completes on every rank of a ring; each ends as
  // execute() would end it. Collectives still run one at a time, in issue order.
  struct P2pRun;
  static bool isPointToPoint(const OpRequest& request) {
    return request.spec.kind == Collective::kSend || request.spec.kind == Collective::kRecv;
  }
  /// Moves the point-to-point calls at the front of the queue (up to the first collective)
  /// to the back of `out`. Holds queueMutex_.
  void takeQueuedP2pLocked(std::vector<OpRequest>& out);
  /// Runs `batch` (in issue order, emptied) and then `blocking` (the caller's own call,
  /// when not null) together; completes the batch's Work and returns the blocking call's
  /// status. `absorb` (the worker): point-to-point calls queued meanwhile join the group.
  /// Run by one thread at a time (the worker, or the caller running calls inline).
  Status runP2pGroup(std::vector<OpRequest>& batch, OpRequest* blocking, bool absorb);
  void startP2p(P2pRun& run);
  Status finishP2p(P2pRun& run);
  /// What execute() does with a failed call: when the communicator's first failure is a
  /// timeout, the hang report (once per communicator); the flight recorder's dump on a
  /// timeout or an abort; the WARN line.
  Status failed(const OpRequest& request, const OpDescriber& what, const Status& status,
                const ExecReport& report, bool refused);
  /// Dumps the flight recorder, the first time a failure asks for it.
  void dumpOnFailure(const char* reason);
  /// The algorithm a call of `kind` must run: `requested`, else TUTTI_ALGO's, else empty.
  std::string_view forcedAlgorithm(std::string_view requested, Collective kind) const;
  /// selectAlgorithm() for `spec` and `forced`, answered from the previous call when it had
  /// the same shape (lastChoice_). Same errors as selectAlgorithm().
  Result<const AlgorithmInfo*> chooseAlgorithm(const CollectiveSpec& spec, std::string_view forced);
  /// The schedule and stamp of a call of this shape with `algorithm`: the previous call's,
  /// a cached one, or built now (and cached).
  const Plan& planFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm);
  void workerLoop();
  /// The worker's wait for a call to run where calls wait for their waits (deferToWaits_):
  /// returns, holding `lock`, when the destructor stops it or the front call is due. A call
  /// is due once it has been queued for a whole nap of the worker (or at once when a wait
  /// asks, hurry_): a thread that waits for it meanwhile runs it itself (runQueuedUntil),
  /// saving the wake-up of the worker and then its own, two scheduler round trips of a few
  /// microseconds each for a call that may take less. submit() does not wake a napping
  /// worker. Naps lengthen from kNapMinNs to kNapMaxNs while every call is waited for;
  /// after kDeepSleepAfterNs without a call the worker sleeps until submit() wakes it.
  void waitForDueCall(std::unique_lock<std::mutex>& lock);
  /// Runs a blocking call while no other thread runs operations: the repeat of the call
  /// before without its checks and choices (runRepeated), else the full path.
  Status runAlone(OpRequest& request, const CallOptions& options);
  /// A fresh WorkState: one of workPool_ that only the pool holds (its Work handles are
  /// gone and its operation has finished), else a new one, pooled while the pool is
  /// small. Repeated async calls then allocate nothing.
  std::shared_ptr<WorkState> newWork();

 public:
  /// Runs queued operations on a thread waiting for `work` (QueueRunner).
  bool runQueuedUntil(const WorkState& work) override;
  /// Has the worker run the queued operations without their grace (QueueRunner).
  void runSoon() override;
  /// A vector holding `values` (empty for none), reusing a spare one's capacity: the
  /// v-collectives' arrays, kept with their request.
  std::vector<std::uint64_t> arrayOf(std::span<const std::size_t> values);
  /// Takes `request`'s arrays back as spares once it has run.
  void recycleArrays(OpRequest& request);

 private:
  /// Runs the queue's first operation, or its first point-to-point calls as a group that
  /// takes in those queued meanwhile, with `lock` (on queueMutex_) released meanwhile;
  /// statuses go to their Works. The caller runs operations (workerBusy_ or inlineBusy_).
  void runFrontLocked(std::unique_lock<std::mutex>& lock);
  /// The end of runBlocking()'s inline run: lets the worker start again.
  void finishInline();
  /// The same from a held `lock` on queueMutex_, which it releases.
  void finishInlineLocked(std::unique_lock<std::mutex>& lock);

  const Config config_;
  const int rank_;
  const int size_;
  const std::string name_;
  std::string prefix_;  // this communicator's store keys: tutti/<name>/<generation>/
  std::chrono::milliseconds timeout_{0};
  std::int64_t spinNs_ = 0;  // how long waits poll before blocking (TUTTI_SPIN_US)
  // Whether this host's ranks have a core each and two each, where shared memory joined
  // them (ShmTransport::coreEach, twoCoresEach); nullopt without it.
  std::optional<std::pair<bool, bool>> hostCores_;
  std::int64_t workSpinNs_ = 0;  // the same for waits on Work handles (create())
  std::string transportChoice_;  // "auto", "shm" or "tcp", as asked (children inherit it)
  std::string asyncProgress_;    // "auto", "thread" or "wait", as asked (children inherit it)
  MessagePath messagePath_ = MessagePath::kLearn;  // TUTTI_MESSAGE_PATH
  PathLearner paths_;  // for kLearn; used by the thread running operations
  // Async calls wait a grace period for a thread waiting on them to run them before the
  // worker takes them, and submit() does not wake a napping worker (waitForDueCall).
  bool deferToWaits_ = false;
  std::string bindHost_;     // where this rank accepts peers (children of split reuse it)
  auth::Key key_;            // the job key its links prove (children of split reuse it)
  int localSize_ = 1;
  std::uint64_t splitCount_ = 0;  // splits so far: names each child uniquely
  // TUTTI_ALGO: forced algorithm per collective (empty: choose).
  std::array<std::string, kNumCollectives> algorithmOverrides_;
  std::unique_ptr<TcpStoreServer> ownedServer_;
  std::shared_ptr<Store> store_;
  // Declared before transport_ so that it outlives it (the transport's threads use it).
  CallChecker checker_;
  std::unique_ptr<Transport> transport_;
  ExecutorPool pool_;
  // runP2pGroup's state, kept so that a warm group allocates nothing; used by the one
  // thread running operations (the worker, or the caller inline: never both at once).
  std::unique_ptr<RunGroup> p2pGroup_;
  bool p2pGroupActive_ = false;  // planFor() does not clear its cache meanwhile
  std::vector<OpRequest> p2pBatch_;
  std::vector<P2pRun*> p2pRuns_;                      // in flight, owned
  std::vector<std::unique_ptr<P2pRun>> spareRuns_;
  CallCheckCache checkCache_;  // the issuing thread's (validate)
  // The previous call's algorithm and what it was chosen for (the thread running
  // operations'); algorithm null: none kept.
  struct LastChoice {
    const AlgorithmInfo* algorithm = nullptr;
    Collective kind = Collective::kAllReduce;
    std::uint64_t count = 0;
    DataType dtype = DataType::kFloat32;
    ReduceOp op = ReduceOp::kSum;
    int root = 0;
    int peer = -1;
    bool inPlace = false;
    std::uint64_t segmentCount = 0;
    bool sharedMemory = false;
    bool sharedBuffers = false;
    std::string forced;
    /// True when `spec` (without per-rank arrays) and `asked` are what it was chosen for.
    bool matches(const CollectiveSpec& spec, std::string_view asked) const;
  };
  LastChoice lastChoice_;
  // The last blocking call (the one checkCache_ holds) when it succeeded, with what was
  // decided for it: a loop repeating it (same call in checkCache_'s terms, same forced
  // algorithm, no worker) skips the choices (runRepeated). Only the issuing thread touches
  // it, and only while no worker exists; every other call clears it. `plan` stays valid
  // until planFor() clears its cache, which only a call that cleared this does.
  struct Repeated {
    bool valid = false;
    const AlgorithmInfo* algorithm = nullptr;
    const Plan* plan = nullptr;
    std::size_t flatBytes = kNotFlat;
    std::string forced;  // the algorithm the call's options forced (empty: none)
  };
  Repeated repeated_;
  // Every peer is reached through shared memory (the transport is ShmTransport alone); the
  // same verdict on every rank (shm_transport.h), so calls pick the same algorithms.
  bool sharedMemory_ = false;
  std::vector<char> scratch_;  // schedules' scratch space, pooled across calls
  // TUTTI_SEGMENT_BYTES in elements of each dtype (CollectiveSpec::segmentCount), computed
  // once rather than divided out on every call.
  std::array<std::uint64_t, kNumDataTypes> segmentCounts_{};
  // The bytes behind segmentCounts_: TUTTI_SEGMENT_BYTES, or on one host with it unset at
  // most half of what a ring holds (setSegmentBytes).
  std::uint64_t segmentBytes_ = 0;
  void setSegmentBytes(std::uint64_t bytes);
  // Flat exchanges run so far (FlatCall::index: the same count on every rank) and the
  // contributions of the current one, by rank.
  std::uint64_t flatCalls_ = 0;
  std::vector<const char*> flatViews_;
  std::vector<char> flatOwn_;  // an in-place flat call's own contribution (runFlat)
  std::vector<std::size_t> flatPeerBytes_;  // per rank, where contributions differ (runFlat)
  std::uint64_t nextSeq_ = 0;  // touched only by the issuing thread

  // The last operations, for dumps; among the live recorders (SIGUSR1) once created.
  FlightRecorder recorder_;
  bool recorderLive_ = false;
  std::atomic<bool> failureDumped_{false};  // a failure's dump is made once
  bool hangReported_ = false;  // touched only by the thread running operations

  // Schedules by call shape and algorithm (registry entries live forever: their address
  // is their identity); bounded.
  using CacheKey = std::tuple<int, std::uint64_t, int, int, bool, int, int, const AlgorithmInfo*,
                              std::vector<std::uint64_t>, std::vector<std::uint64_t>,
                              std::vector<std::uint64_t>, std::vector<std::uint64_t>>;
  // A call shape's schedule and the stamp its messages carry (mismatch detection).
  struct Plan {
    Schedule schedule;
    CallStamp stamp;
  };
  // A call's shape, looked up without copying its arrays into a key.
  struct CacheProbe {
    const CollectiveSpec* spec;
    const AlgorithmInfo* algorithm;
  };
  // Orders keys and probes alike (call_plans.cc).
  struct CacheLess {
    using is_transparent = void;
    bool operator()(const CacheKey& a, const CacheKey& b) const;
    bool operator()(const CacheKey& a, const CacheProbe& b) const;
    bool operator()(const CacheProbe& a, const CacheKey& b) const;
  };
  std::map<CacheKey, Plan, CacheLess> cache_;
  // The previous call's entry, tried first: loops repeat one call, and a hit skips building
  // a key (four vector copies) and the map search. Null after the cache is cleared.
  const CacheKey* lastKey_ = nullptr;
  const Plan* lastPlan_ = nullptr;

  // Ordering of operations between the issuing thread and the worker.
  std::mutex queueMutex_;
  std::condition_variable queueCv_;
  RingQueue<OpRequest> queue_;
  bool workerBusy_ = false;
  bool inlineBusy_ = false;
  // Set once the worker thread exists; read and written only by the issuing thread.
  bool workerStarted_ = false;
  bool stopping_ = false;
  // Operations ever queued (read without the lock by the worker's poll, workerLoop()).
  std::atomic<std::uint64_t> queued_{0};
  // The worker's naps where calls wait for their waits (waitForDueCall), under queueMutex_.
  static constexpr std::int64_t kNapMinNs = 100'000;
  static constexpr std::int64_t kNapMaxNs = 2'000'000;
  static constexpr std::int64_t kDeepSleepAfterNs = 100'000'000;
  std::int64_t napNs_ = kNapMinNs;
  std::uint64_t napStartQueued_ = 0;  // queued_ when the last nap began: older calls are due
  bool hurry_ = false;                // a wait wants the front call run without its grace
  bool workerAsleep_ = false;         // asleep until submit() wakes it
  std::thread worker_;

  // What waits on this communicator's Work handles reach its queue through (WorkState::wait).
  const std::shared_ptr<WorkQueueLink> workQueue_ = std::make_shared<WorkQueueLink>(this);
  // States of Work handles, reused once nobody else holds them (newWork()).
  std::mutex workPoolMutex_;
  std::vector<std::shared_ptr<WorkState>> workPool_;
  // Spare vectors for arrayOf(), with their capacity (the issuing thread takes them, the
  // worker may give them back).
  std::mutex arraysMutex_;
  std::vector<std::vector<std::uint64_t>> spareArrays_;
};

}  // namespace tutti::detail
