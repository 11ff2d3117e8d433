#include "tutti/communicator.h"

#include "base/log.h"
#include "base/macros.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/tcp_store.h"
#include "core/comm_impl.h"
#include "core/work_state.h"

namespace tutti {

using detail::CommImpl;
using detail::OpRequest;

Communicator::Communicator(std::unique_ptr<CommImpl> impl) : impl_(std::move(impl)) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

Result<Communicator> Communicator::create(std::shared_ptr<Store> store, int rank, int size,
                                          const CommOptions& options) {
  CommImpl::InitParams params;
  params.store = std::move(store);
  params.rank = rank;
  params.size = size;
  params.options = options;
  TUTTI_ASSIGN_OR_RETURN(auto impl, CommImpl::create(std::move(params)));
  return Communicator(std::move(impl));
}

namespace {

// The key this job's connections prove. A one-rank job serving its own store needs nobody
// to agree with it, so without a configured secret it makes one up: its listeners are then
// closed to everyone, with no warning needed.
Result<auth::Key> keyForJob(const Config& config, int size, bool serve) {
  if (size == 1 && serve && config.secret.empty() && config.secretFile.empty())
    return auth::Key::random();
  return auth::jobKey(config);
}

// Serves the store at `address` when `serve` (rank 0), connects to it, and creates the
// communicator, accepting peers on the interface that reaches the store. The store and
// every peer link authenticate with the job key. The client's set() and add() are bounded
// by TUTTI_TIMEOUT, as every blocking call; `servedBy` names the store's server in the
// error of a store gone (its process exited).
Result<std::unique_ptr<CommImpl>> joinThroughTcpStore(CommImpl::InitParams params,
                                                      HostPort address, bool serve,
                                                      const std::string& servedBy,
                                                      const Config& config, Deadline deadline) {
  TUTTI_ASSIGN_OR_RETURN(auth::Key key, keyForJob(config, params.size, serve));
  TUTTI_ASSIGN_OR_RETURN(std::chrono::milliseconds authTimeout, auth::authTimeout(config));
  if (serve) {
    TcpStoreServer::Options options;
    options.key = key;
    options.authTimeout = authTimeout;
    auth::warnIfUnauthenticated(key, "the store on " + address.toString());
    auto server = TcpStoreServer::start(address.host, address.port, options);
    if (!server.ok())
      return server.status().withContext("rank 0 could not serve the store at " +
                                         address.toString());
    address = (*server)->address();
    params.ownedServer = std::move(server).value();
  }
  const auto operationTimeout = std::max(
      std::chrono::milliseconds(1),
      std::chrono::milliseconds(static_cast<std::int64_t>(config.timeoutSec * 1000.0)));
  auto client = TcpStoreClient::connect(address, key, deadline, operationTimeout, servedBy);
  if (!client.ok()) return client.status();  // it names the store already
  params.bindHost = (*client)->localAddress().host;
  params.store = std::move(client).value();
  params.key = std::move(key);
  return CommImpl::create(std::move(params));
}

}  // namespace

Result<Communicator> Communicator::fromEnv(const CommOptions& options) {
  const Result<Config>& config = Config::fromProcessEnvironment();
  if (!config.ok()) return config.status();
  TUTTI_ASSIGN_OR_RETURN(LaunchEnv env, LaunchEnv::detect(*config));
  log::setRank(env.rank);
  TUTTI_INFO(kInit, "launched by %s: rank %d of %d (local %d of %d), store %s%s",
             launcherName(env.launcher), env.rank, env.size, env.localRank, env.localSize,
             env.storeAddress.toString().c_str(), env.serveStore ? " (served here)" : "");
  CommImpl::InitParams params;
  params.rank = env.rank;
  params.size = env.size;
  params.localSize = env.localSize;
  params.options = options;
  TUTTI_ASSIGN_OR_RETURN(auto impl,
                         joinThroughTcpStore(std::move(params), env.storeAddress, env.serveStore,
                                             env.launcher == Launcher::kTuttiRun ? "tutti-run"
                                                                                 : "rank 0",
                                             *config,
                                             Deadline::afterSeconds(config->connectRetrySec)));
  return Communicator(std::move(impl));
}

Result<Communicator> Communicator::connect(const std::string& storeAddress, int rank, int size,
                                           const CommOptions& options) {
  const Result<Config>& config = Config::fromProcessEnvironment();
  if (!config.ok()) return config.status();
  TUTTI_CHECK_ARG(size >= 1, "world size must be at least 1, got %d", size);
  TUTTI_CHECK_ARG(rank >= 0 && rank < size, "rank %d is outside a world of %d ranks", rank,
                  size);
  Result<HostPort> address = parseHostPort(storeAddress);
  if (!address.ok()) return address.status().withContext("store address");
  log::setRank(rank);
  CommImpl::InitParams params;
  params.rank = rank;
  params.size = size;
  params.options = options;
  TUTTI_ASSIGN_OR_RETURN(auto impl,
                         joinThroughTcpStore(std::move(params), *address, rank == 0, "rank 0",
                                             *config,
                                             Deadline::afterSeconds(config->connectRetrySec)));
  return Communicator(std::move(impl));
}

Status Communicator::destroy() {
  if (!impl_)
    return Status(ErrorCode::kInvalidUsage,
                  "destroy on a moved-from Communicator (it no longer belongs to a group)");
  Status found = impl_->leave();
  impl_.reset();
  return found;
}

int Communicator::rank() const { return impl_ ? impl_->rank() : -1; }
int Communicator::size() const { return impl_ ? impl_->size() : 0; }

const std::string& Communicator::name() const {
  static const std::string kNone;  // immutable: a moved-from communicator has no name
  return impl_ ? impl_->name() : kNone;
}

Status Communicator::lastError() const {
  if (!impl_)
    return Status(ErrorCode::kInvalidUsage, "lastError() on a moved-from Communicator");
  return impl_->health();
}

void Communicator::abort() {
  if (impl_) impl_->abort();  // nothing left to abort once moved from
}

namespace {

// `values` in a vector of the communicator's spare ones (CallQueue::arrayOf), so that a
// repeated v-collective allocates nothing; a moved-from communicator's call fails anyway.
std::vector<std::uint64_t> toVector(CommImpl* impl, std::span<const std::size_t> values) {
  if (impl != nullptr) return impl->queue().arrayOf(values);
  return std::vector<std::uint64_t>(values.begin(), values.end());
}

// One request: the call's collective, buffers, and shape.
OpRequest request(Collective kind, const void* in, void* out, std::size_t count, DataType dtype,
                  ReduceOp op = ReduceOp::kSum, int root = 0) {
  OpRequest r;
  r.spec.kind = kind;
  r.spec.count = count;
  r.spec.dtype = dtype;
  r.spec.op = op;
  r.spec.root = root;
  r.input = in;
  r.output = out;
  return r;
}

OpRequest p2p(Collective kind, const void* in, void* out, std::size_t count, DataType dtype,
              int peer, int tag) {
  OpRequest r = request(kind, in, out, count, dtype);
  r.spec.peer = peer;
  r.tag = tag;
  return r;
}

OpRequest withArrays(CommImpl* impl, OpRequest r, std::span<const std::size_t> counts,
                     std::span<const std::size_t> displs) {
  r.spec.counts = toVector(impl, counts);
  r.spec.displs = toVector(impl, displs);
  return r;
}

// The count a rank states for its own block (checked against its entry in the arrays).
OpRequest withOwnCount(OpRequest r, std::size_t count) {
  r.ownCount = count;
  return r;
}

Work failedWork(Status status) {
  auto state = std::make_shared<detail::WorkState>(0);
  state->complete(std::move(status));
  return Work(state);
}

// A moved-from Communicator has no implementation; every operation on it says so.
Status movedFrom(const char* what) {
  return Status(ErrorCode::kInvalidUsage,
                strFormat("%s on a moved-from Communicator (it no longer belongs to a group)",
                          what));
}

// Runs the request on `impl` (blocking), or refuses it when the communicator was moved from.
Status run(CommImpl* impl, OpRequest&& r, const CallOptions& options) {
  if (impl == nullptr) return movedFrom(collectiveName(r.spec.kind));
  Status status = impl->runBlocking(std::move(r), options);
  impl->queue().recycleArrays(r);  // what runBlocking left there (it keeps a request it queues)
  return status;
}

// Issues the request on `impl` (async), or hands back a Work that failed the same way.
Work start(CommImpl* impl, OpRequest r, const CallOptions& options) {
  if (impl == nullptr) return failedWork(movedFrom(collectiveName(r.spec.kind)));
  return impl->submit(std::move(r), options);
}

}  // namespace

Status Communicator::send(const void* buf, std::size_t count, DataType dtype, int peer, int tag,
                          const CallOptions& options) {
  return run(impl_.get(), p2p(Collective::kSend, buf, nullptr, count, dtype, peer, tag), options);
}
Status Communicator::recv(void* buf, std::size_t count, DataType dtype, int peer, int tag,
                          const CallOptions& options) {
  return run(impl_.get(), p2p(Collective::kRecv, nullptr, buf, count, dtype, peer, tag), options);
}
Work Communicator::sendAsync(const void* buf, std::size_t count, DataType dtype, int peer, int tag,
                             const CallOptions& options) {
  return start(impl_.get(), p2p(Collective::kSend, buf, nullptr, count, dtype, peer, tag), options);
}
Work Communicator::recvAsync(void* buf, std::size_t count, DataType dtype, int peer, int tag,
                             const CallOptions& options) {
  return start(impl_.get(), p2p(Collective::kRecv, nullptr, buf, count, dtype, peer, tag), options);
}

Status Communicator::barrier(const CallOptions& options) {
  return run(impl_.get(), request(Collective::kBarrier, nullptr, nullptr, 0, DataType::kUint8), options);
}
Work Communicator::barrierAsync(const CallOptions& options) {
  return start(impl_.get(), request(Collective::kBarrier, nullptr, nullptr, 0, DataType::kUint8), options);
}

Status Communicator::allreduce(const void* sendbuf, void* recvbuf, std::size_t count,
                               DataType dtype, ReduceOp op, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kAllReduce, sendbuf, recvbuf, count, dtype, op), options);
}
Work Communicator::allreduceAsync(const void* sendbuf, void* recvbuf, std::size_t count,
                                  DataType dtype, ReduceOp op, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kAllReduce, sendbuf, recvbuf, count, dtype, op), options);
}

Status Communicator::broadcast(const void* sendbuf, void* recvbuf, std::size_t count,
                               DataType dtype, int root, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kBroadcast, sendbuf, recvbuf, count, dtype, ReduceOp::kSum, root), options);
}
Work Communicator::broadcastAsync(const void* sendbuf, void* recvbuf, std::size_t count,
                                  DataType dtype, int root, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kBroadcast, sendbuf, recvbuf, count, dtype, ReduceOp::kSum, root), options);
}

Status Communicator::reduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                            ReduceOp op, int root, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kReduce, sendbuf, recvbuf, count, dtype, op, root), options);
}
Work Communicator::reduceAsync(const void* sendbuf, void* recvbuf, std::size_t count,
                               DataType dtype, ReduceOp op, int root, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kReduce, sendbuf, recvbuf, count, dtype, op, root), options);
}

Status Communicator::allgather(const void* sendbuf, void* recvbuf, std::size_t sendcount,
                               DataType dtype, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kAllGather, sendbuf, recvbuf, sendcount, dtype), options);
}
Work Communicator::allgatherAsync(const void* sendbuf, void* recvbuf, std::size_t sendcount,
                                  DataType dtype, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kAllGather, sendbuf, recvbuf, sendcount, dtype), options);
}

Status Communicator::allgatherv(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                                std::span<const std::size_t> recvcounts,
                                std::span<const std::size_t> displs, DataType dtype,
                                const CallOptions& options) {
  return run(impl_.get(),
             withOwnCount(withArrays(impl_.get(), request(Collective::kAllGatherV, sendbuf, recvbuf, 0, dtype),
                                     recvcounts, displs),
                          sendcount),
             options);
}
Work Communicator::allgathervAsync(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                                   std::span<const std::size_t> recvcounts,
                                   std::span<const std::size_t> displs, DataType dtype,
                                   const CallOptions& options) {
  return start(impl_.get(),
               withOwnCount(withArrays(impl_.get(), request(Collective::kAllGatherV, sendbuf, recvbuf, 0,
                                               dtype),
                                       recvcounts, displs),
                            sendcount),
               options);
}

Status Communicator::reduceScatter(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                                   DataType dtype, ReduceOp op, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kReduceScatter, sendbuf, recvbuf, recvcount, dtype, op), options);
}
Work Communicator::reduceScatterAsync(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                                      DataType dtype, ReduceOp op, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kReduceScatter, sendbuf, recvbuf, recvcount, dtype, op), options);
}

Status Communicator::reduceScatterv(const void* sendbuf, void* recvbuf,
                                    std::span<const std::size_t> recvcounts, DataType dtype,
                                    ReduceOp op, const CallOptions& options) {
  return run(impl_.get(), withArrays(impl_.get(), request(Collective::kReduceScatterV, sendbuf, recvbuf, 0, dtype, op), recvcounts, {}), options);
}
Work Communicator::reduceScattervAsync(const void* sendbuf, void* recvbuf,
                                       std::span<const std::size_t> recvcounts, DataType dtype,
                                       ReduceOp op, const CallOptions& options) {
  return start(impl_.get(), withArrays(impl_.get(), request(Collective::kReduceScatterV, sendbuf, recvbuf, 0, dtype, op), recvcounts, {}), options);
}

Status Communicator::gather(const void* sendbuf, void* recvbuf, std::size_t sendcount,
                            DataType dtype, int root, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kGather, sendbuf, recvbuf, sendcount, dtype, ReduceOp::kSum, root), options);
}
Work Communicator::gatherAsync(const void* sendbuf, void* recvbuf, std::size_t sendcount,
                               DataType dtype, int root, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kGather, sendbuf, recvbuf, sendcount, dtype, ReduceOp::kSum, root), options);
}

Status Communicator::gatherv(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                             std::span<const std::size_t> recvcounts,
                             std::span<const std::size_t> displs, DataType dtype, int root,
                             const CallOptions& options) {
  return run(impl_.get(),
             withOwnCount(withArrays(impl_.get(), request(Collective::kGatherV, sendbuf, recvbuf, 0, dtype,
                                             ReduceOp::kSum, root),
                                     recvcounts, displs),
                          sendcount),
             options);
}
Work Communicator::gathervAsync(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                                std::span<const std::size_t> recvcounts,
                                std::span<const std::size_t> displs, DataType dtype, int root,
                                const CallOptions& options) {
  return start(impl_.get(),
               withOwnCount(withArrays(impl_.get(), request(Collective::kGatherV, sendbuf, recvbuf, 0, dtype,
                                               ReduceOp::kSum, root),
                                       recvcounts, displs),
                            sendcount),
               options);
}

Status Communicator::scatter(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                             DataType dtype, int root, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kScatter, sendbuf, recvbuf, recvcount, dtype, ReduceOp::kSum, root), options);
}
Work Communicator::scatterAsync(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                                DataType dtype, int root, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kScatter, sendbuf, recvbuf, recvcount, dtype, ReduceOp::kSum, root), options);
}

Status Communicator::scatterv(const void* sendbuf, std::span<const std::size_t> sendcounts,
                              std::span<const std::size_t> displs, void* recvbuf,
                              std::size_t recvcount, DataType dtype, int root,
                              const CallOptions& options) {
  return run(impl_.get(),
             withOwnCount(withArrays(impl_.get(), request(Collective::kScatterV, sendbuf, recvbuf, 0, dtype,
                                             ReduceOp::kSum, root),
                                     sendcounts, displs),
                          recvcount),
             options);
}
Work Communicator::scattervAsync(const void* sendbuf, std::span<const std::size_t> sendcounts,
                                 std::span<const std::size_t> displs, void* recvbuf,
                                 std::size_t recvcount, DataType dtype, int root,
                                 const CallOptions& options) {
  return start(impl_.get(),
               withOwnCount(withArrays(impl_.get(), request(Collective::kScatterV, sendbuf, recvbuf, 0, dtype,
                                               ReduceOp::kSum, root),
                                       sendcounts, displs),
                            recvcount),
               options);
}

Status Communicator::alltoall(const void* sendbuf, void* recvbuf, std::size_t count,
                              DataType dtype, const CallOptions& options) {
  return run(impl_.get(), request(Collective::kAllToAll, sendbuf, recvbuf, count, dtype), options);
}
Work Communicator::alltoallAsync(const void* sendbuf, void* recvbuf, std::size_t count,
                                 DataType dtype, const CallOptions& options) {
  return start(impl_.get(), request(Collective::kAllToAll, sendbuf, recvbuf, count, dtype), options);
}

namespace {
OpRequest alltoallvRequest(CommImpl* impl, const void* sendbuf, std::span<const std::size_t> sendcounts,
                           std::span<const std::size_t> sdispls, void* recvbuf,
                           std::span<const std::size_t> recvcounts,
                           std::span<const std::size_t> rdispls, DataType dtype) {
  OpRequest r = withArrays(impl, request(Collective::kAllToAllV, sendbuf, recvbuf, 0, dtype), sendcounts, sdispls);
  r.spec.recvCounts = toVector(impl, recvcounts);
  r.spec.recvDispls = toVector(impl, rdispls);
  return r;
}
}  // namespace

Status Communicator::alltoallv(const void* sendbuf, std::span<const std::size_t> sendcounts,
                               std::span<const std::size_t> sdispls, void* recvbuf,
                               std::span<const std::size_t> recvcounts,
                               std::span<const std::size_t> rdispls, DataType dtype,
                               const CallOptions& options) {
  return run(impl_.get(), alltoallvRequest(impl_.get(), sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype), options);
}
Work Communicator::alltoallvAsync(const void* sendbuf, std::span<const std::size_t> sendcounts,
                                  std::span<const std::size_t> sdispls, void* recvbuf,
                                  std::span<const std::size_t> recvcounts,
                                  std::span<const std::size_t> rdispls, DataType dtype,
                                  const CallOptions& options) {
  return start(impl_.get(), alltoallvRequest(impl_.get(), sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype), options);
}

Result<std::optional<Communicator>> Communicator::split(int color, int key,
                                                        const CommOptions& options) {
  if (!impl_) return movedFrom("split");
  TUTTI_ASSIGN_OR_RETURN(auto child, impl_->split(color, key, options));
  if (!child) return std::optional<Communicator>();
  return std::optional<Communicator>(Communicator(std::move(child)));
}

Result<std::string> Communicator::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                               const std::string& forced,
                                               bool sharedBuffers) const {
  if (!impl_) return movedFrom("algorithmFor");
  return impl_->algorithmFor(kind, count, dtype, forced, sharedBuffers);
}

Status Communicator::verifyCall(const CallShape& call, const std::string& forced) const {
  if (!impl_) return movedFrom("verifyCall");
  return impl_->verifyCall(call, forced);
}

}  // namespace tutti
