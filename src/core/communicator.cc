#include "tutti/communicator.h"

#include "base/log.h"
#include "base/macros.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/tcp_store.h"
#include "core/comm_impl.h"

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
  Deadline deadline = Deadline::afterSeconds(config->connectRetrySec);
  HostPort storeAddress = env.storeAddress;
  if (env.serveStore) {
    auto server = TcpStoreServer::start(env.storeAddress.host, env.storeAddress.port);
    if (!server.ok())
      return server.status().withContext("rank 0 could not serve the store at " +
                                         env.storeAddress.toString());
    storeAddress = (*server)->address();
    params.ownedServer = std::move(server).value();
  }
  auto client = TcpStoreClient::connect(storeAddress, deadline);
  if (!client.ok())
    return client.status().withContext("connecting to the store at " + storeAddress.toString());
  params.bindHost = (*client)->localAddress().host;
  params.store = std::move(client).value();
  TUTTI_ASSIGN_OR_RETURN(auto impl, CommImpl::create(std::move(params)));
  return Communicator(std::move(impl));
}

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
const std::string& Communicator::name() const { return impl_->name(); }
Status Communicator::lastError() const { return impl_->health(); }

namespace {

OpRequest p2pRequest(Collective kind, const void* in, void* out, std::size_t count,
                     DataType dtype, int peer, int tag) {
  OpRequest r;
  r.kind = kind;
  r.input = in;
  r.output = out;
  r.count = count;
  r.dtype = dtype;
  r.peer = peer;
  r.tag = tag;
  return r;
}

OpRequest allreduceRequest(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                           ReduceOp op) {
  OpRequest r;
  r.kind = Collective::kAllReduce;
  r.input = sendbuf;
  r.output = recvbuf;
  r.count = count;
  r.dtype = dtype;
  r.op = op;
  return r;
}

OpRequest barrierRequest() {
  OpRequest r;
  r.kind = Collective::kBarrier;
  r.dtype = DataType::kUint8;
  return r;
}

}  // namespace

Status Communicator::send(const void* buf, std::size_t count, DataType dtype, int peer, int tag,
                          const CallOptions& options) {
  return impl_->runBlocking(p2pRequest(Collective::kSend, buf, nullptr, count, dtype, peer, tag),
                            options);
}

Status Communicator::recv(void* buf, std::size_t count, DataType dtype, int peer, int tag,
                          const CallOptions& options) {
  return impl_->runBlocking(p2pRequest(Collective::kRecv, nullptr, buf, count, dtype, peer, tag),
                            options);
}

Work Communicator::sendAsync(const void* buf, std::size_t count, DataType dtype, int peer, int tag,
                             const CallOptions& options) {
  return impl_->submit(p2pRequest(Collective::kSend, buf, nullptr, count, dtype, peer, tag),
                       options);
}

Work Communicator::recvAsync(void* buf, std::size_t count, DataType dtype, int peer, int tag,
                             const CallOptions& options) {
  return impl_->submit(p2pRequest(Collective::kRecv, nullptr, buf, count, dtype, peer, tag),
                       options);
}

Status Communicator::barrier(const CallOptions& options) {
  return impl_->runBlocking(barrierRequest(), options);
}

Work Communicator::barrierAsync(const CallOptions& options) {
  return impl_->submit(barrierRequest(), options);
}

Status Communicator::allreduce(const void* sendbuf, void* recvbuf, std::size_t count,
                               DataType dtype, ReduceOp op, const CallOptions& options) {
  return impl_->runBlocking(allreduceRequest(sendbuf, recvbuf, count, dtype, op), options);
}

Work Communicator::allreduceAsync(const void* sendbuf, void* recvbuf, std::size_t count,
                                  DataType dtype, ReduceOp op, const CallOptions& options) {
  return impl_->submit(allreduceRequest(sendbuf, recvbuf, count, dtype, op), options);
}

Result<std::string> Communicator::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                               const std::string& forced) const {
  return impl_->algorithmFor(kind, count, dtype, forced);
}

}  // namespace tutti
