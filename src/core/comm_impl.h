#pragma once
// CommImpl: one communicator, the thin owner that wires its parts together (docs/design.md
// draws them and one call's path through them):
//   CallQueue          when and on which thread each call runs, in issue order; Work
//   CallPlanner        the arguments' check, the algorithm, the plan (cached per shape)
//   CallRunner         one planned call on the transport: flat exchange or executor
//   P2pGroupRunner     point-to-point calls issued back to back, run together
//   FlatExchangeRunner rounds on the transport's flat exchange (shared memory)
//   FailureReporter    the flight recorder, hang report and wording of failures
//   TransportFactory   which transport, configured how (at creation)
// It creates them, runs the top of a call's path (CallQueue::Runner) and splits.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/config.h"
#include "bootstrap/auth.h"
#include "core/call_planner.h"
#include "core/call_queue.h"
#include "core/call_runner.h"
#include "core/failure_reporter.h"
#include "core/flat_runner.h"
#include "core/op_request.h"
#include "core/p2p_group.h"
#include "core/topology_setup.h"
#include "core/transport_factory.h"
#include "transport/call_checker.h"
#include "tuning/model.h"
#include "tutti/communicator.h"

namespace tutti {
class TcpStoreServer;
}

namespace tutti::detail {

class CommImpl final : private CallQueue::Runner {
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
    // A split child's topology view (its ranks' part of the parent's); null: gathered or
    // loaded (topology_setup.h).
    std::shared_ptr<const topo::View> view;
    // A split child's machine model (its parent's); null: agreed at creation (model_setup.h).
    std::shared_ptr<const tuning::MachineModel> model;
  };

  static Result<std::unique_ptr<CommImpl>> create(InitParams params);
  ~CommImpl();

  int rank() const { return id_.rank; }
  int size() const { return id_.size; }
  const std::string& name() const { return id_.name; }
  Status health() const { return transport_->health(); }
  /// Communicator::abort().
  void abort() { failures_.abort(); }
  /// Communicator::destroy(): lets issued operations finish, says farewell to the peers
  /// (executor/farewell.h) on a healthy communicator, and leaves. kMismatch when a mismatch
  /// came to light that no call on this rank returned, else OK. Once; the destructor calls
  /// it when nobody did (leave.cc).
  Status leave();

  /// Checks arguments, then runs the operation (blocking) or queues it (async).
  Status runBlocking(OpRequest&& request, const CallOptions& options) {
    return queue_.runBlocking(std::move(request), options);
  }
  Work submit(OpRequest request, const CallOptions& options) {
    return queue_.submit(std::move(request), options);
  }
  /// The queue's pool of the v-collectives' arrays (CallQueue::arrayOf).
  CallQueue& queue() { return queue_; }

  Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                   const std::string& forced, bool sharedBuffers) const {
    return planner_.algorithmFor(kind, count, dtype, forced, sharedBuffers);
  }
  Status verifyCall(const CallShape& call, const std::string& forced) const {
    return planner_.verifyCall(call, forced);
  }

  /// The machine model's parameters, identical on every rank of the communicator (agreed
  /// at creation: model_setup.h; a split child's are its parent's). Never null.
  const std::shared_ptr<const tuning::MachineModel>& model() const { return id_.model; }
  /// The communicator's topology view (hosts, places). Never null.
  const std::shared_ptr<const topo::View>& view() const { return id_.view; }

  /// The collective part of Communicator::split: nullptr for kNoColor.
  Result<std::unique_ptr<CommImpl>> split(int color, int key, const CommOptions& options);

 private:
  // Who this communicator is, and what create() decided that split() passes on.
  struct Identity {
    std::string name;
    int rank = 0;
    int size = 1;
    std::string prefix;  // this communicator's store keys: tutti/<name>/<generation>/
    std::shared_ptr<Store> store;
    std::unique_ptr<TcpStoreServer> ownedServer;  // stopped last
    std::chrono::milliseconds timeout{0};
    std::string transportChoice;  // "auto", "shm" or "tcp", as asked (children inherit it)
    std::string asyncProgress;    // "auto", "thread" or "wait", as asked (children too)
    std::string bindHost;         // where this rank accepts peers (children reuse it)
    auth::Key key;                // the job key its links prove (children reuse it)
    int localSize = 1;
    std::uint64_t splits = 0;     // splits so far: names each child uniquely
    std::shared_ptr<const topo::View> view;  // hosts and places (split() passes its part on)
    std::shared_ptr<const tuning::MachineModel> model;  // rank 0's, the same on every rank
  };

 public:
  // The parts' settings, decided by create() from the configuration and the transport.
  struct Parts;

 private:
  CommImpl(Identity identity, TransportSetup transport, const Parts& parts);

  // CallQueue::Runner: the top of every call's path.
  Status runNow(OpRequest& request, const CallOptions& options) override;
  Status check(OpRequest& request) override {
    return planner_.recall(request) ? Status::Ok() : checkAnew(request);
  }
  Status run(OpRequest& request, std::string_view requested) override;
  Status runPointToPoint(std::vector<OpRequest>& batch, OpRequest* blocking,
                         CallQueue* absorb) override {
    return p2p_.run(batch, blocking, absorb);
  }
  void interruptWait() override { transport_->interruptWait(); }

  /// Checks `request` (recall() did not know it) and remembers it when it passes; an error
  /// only this rank can see also fails the communicator.
  Status checkAnew(OpRequest& request);
  /// Sets request.spec.sharedBuffers, agreed with every rank (FlatExchangeRunner).
  /// The contender of `shape` that call `r` runs (algorithm_learner.h), and whether its time
  /// is kept: at a decision, from the ranks' times (the flat exchange, else
  /// CallRunner::agree).
  Status learnContender(OpRequest& r, AlgorithmLearner::Shape& shape, std::size_t* contender,
                        bool* timed);
  Status agreeOnBuffers(OpRequest& request);

  Identity id_;
  CallChecker checker_;  // declared before transport_, whose threads use it: outlives it
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<FlatExchangeRunner> flat_;  // null where the transport has none
  CallPlanner planner_;
  FailureReporter failures_;
  CallRunner runner_;
  // Every rank's estimates at a decision of the contenders where there is no flat exchange
  // (learnContender), kept between decisions.
  std::vector<std::int64_t> learnTimes_;
  P2pGroupRunner p2p_;
  CallQueue queue_;  // the destructor stops it first
  bool left_ = false;  // leave() ran
};

}  // namespace tutti::detail
