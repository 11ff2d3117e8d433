#include "core/comm_impl.h"

#include <sched.h>

#include <random>

#include "base/assert.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/tcp_store.h"
#include "core/work_state.h"
#include "transport/tag.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::detail {
namespace {

// Bound on cached schedules per communicator; a workload with more distinct shapes simply
// rebuilds (building is cheap next to running).
constexpr std::size_t kMaxCachedSchedules = 64;

std::uint64_t randomUid() {
  std::random_device device;
  std::uint64_t uid = 0;
  while (uid == 0) uid = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  return uid;
}

Result<std::uint64_t> agreeOnUid(Store& store, const std::string& prefix, int rank,
                                 Deadline deadline) {
  const std::string key = prefix + "uid";
  if (rank == 0) {
    std::uint64_t uid = randomUid();
    std::vector<std::uint8_t> bytes(8);
    for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(uid >> (8 * i));
    TUTTI_RETURN_IF_ERROR(store.set(key, bytes));
    return uid;
  }
  auto value = store.get(key, deadline);
  if (!value.ok()) return value.status().withContext("waiting for rank 0 to join");
  if (value->size() != 8)
    return Status(ErrorCode::kProtocolError, "the store holds a malformed communicator id");
  std::uint64_t uid = 0;
  for (int i = 7; i >= 0; --i) uid = (uid << 8) | (*value)[static_cast<std::size_t>(i)];
  return uid;
}

// Polling while waiting pays off only when every rank of this host has a core; when ranks
// outnumber cores, a spinning rank steals the core the rank it waits for needs (measured:
// 4 ranks on 2 cores, 8-byte all-reduce over TCP is slower with a 20 us spin than with none).
std::int64_t spinBudgetNs(std::int64_t configuredUs, int localSize) {
  constexpr std::int64_t kDefaultSpinUs = 20;
  if (configuredUs >= 0) return configuredUs * 1000;
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return localSize > cores ? 0 : kDefaultSpinUs * 1000;
}

}  // namespace

CommImpl::CommImpl(const Config& config, int rank, int size, std::string name)
    : config_(config), rank_(rank), size_(size), name_(std::move(name)) {}

Result<std::unique_ptr<CommImpl>> CommImpl::create(InitParams params) {
  const Result<Config>& config = Config::fromProcessEnvironment();
  if (!config.ok()) return config.status();
  TUTTI_CHECK_ARG(params.store != nullptr, "the store is null");
  TUTTI_CHECK_ARG(params.size >= 1, "world size must be at least 1, got %d", params.size);
  TUTTI_CHECK_ARG(params.rank >= 0 && params.rank < params.size,
                  "rank %d is outside a world of %d ranks", params.rank, params.size);
  TUTTI_CHECK_ARG(!params.options.name.empty() && params.options.name.find('/') == std::string::npos,
                  "communicator name '%s' must be non-empty and contain no '/'",
                  params.options.name.c_str());
  log::setRank(params.rank);
  std::unique_ptr<CommImpl> impl(
      new CommImpl(*config, params.rank, params.size, params.options.name));
  impl->timeout_ = params.options.timeout.value_or(std::chrono::milliseconds(
      static_cast<std::int64_t>(config->timeoutSec * 1000.0)));
  impl->spinNs_ = spinBudgetNs(config->spinUs, params.localSize);
  impl->ownedServer_ = std::move(params.ownedServer);
  impl->store_ = params.store;
  Deadline deadline = Deadline::afterSeconds(config->connectRetrySec);

  // The k-th communicator this rank creates under a name uses generation k, so re-creating a
  // communicator on the same store never reads the previous one's keys.
  const std::string base = "tutti/" + impl->name_ + "/";
  TUTTI_ASSIGN_OR_RETURN(std::int64_t generation,
                         impl->store_->add(base + "gen/" + std::to_string(params.rank), 1));
  const std::string prefix = base + std::to_string(generation) + "/";
  TUTTI_ASSIGN_OR_RETURN(std::uint64_t uid,
                         agreeOnUid(*impl->store_, prefix, params.rank, deadline));

  tcp::TcpTransport::Options topts;
  topts.rank = params.rank;
  topts.size = params.size;
  topts.commUid = uid;
  topts.bindHost = !params.bindHost.empty()       ? params.bindHost
                   : !config->bindAddr.empty()    ? config->bindAddr
                                                  : std::string("127.0.0.1");
  topts.maxUnexpectedBytes = config->tcpMaxUnexpected;
  topts.deadline = deadline;
  auto transport = tcp::TcpTransport::create(*impl->store_, prefix, topts);
  if (!transport.ok())
    return transport.status().withContext(
        strFormat("creating communicator '%s' (rank %d of %d)", impl->name_.c_str(), params.rank,
                  params.size));
  impl->transport_ = std::move(transport).value();
  TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, peers reached over TCP from %s",
             impl->name_.c_str(), params.rank, params.size, topts.bindHost.c_str());
  return impl;
}

CommImpl::~CommImpl() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    stopping_ = true;
  }
  queueCv_.notify_all();
  if (worker_.joinable()) worker_.join();  // queued operations finish by their deadlines
  if (transport_) transport_->shutdown(Deadline::afterSeconds(5));
  if (ownedServer_) ownedServer_->stop();
}

Status CommImpl::health() const { return transport_ ? transport_->health() : Status(); }

Status CommImpl::validate(const OpRequest& r) const {
  TUTTI_CHECK_ARG(isValid(r.dtype), "unknown data type %d", static_cast<int>(r.dtype));
  TUTTI_CHECK_ARG(isValid(r.op), "unknown reduction operator %d", static_cast<int>(r.op));
  const std::size_t elem = dataTypeSize(r.dtype);
  TUTTI_CHECK_ARG(r.count <= (std::uint64_t{1} << 62) / elem,
                  "count %llu of %s overflows the byte size", static_cast<unsigned long long>(r.count),
                  dataTypeName(r.dtype));
  const bool reads = r.kind == Collective::kSend || r.kind == Collective::kAllReduce;
  const bool writes = r.kind == Collective::kRecv || r.kind == Collective::kAllReduce;
  TUTTI_CHECK_ARG(!(reads && r.count > 0 && r.input == nullptr), "%s: the send buffer is null",
                  collectiveName(r.kind));
  TUTTI_CHECK_ARG(!(writes && r.count > 0 && r.output == nullptr),
                  "%s: the receive buffer is null", collectiveName(r.kind));
  if (r.kind == Collective::kSend || r.kind == Collective::kRecv) {
    TUTTI_CHECK_ARG(r.peer >= 0 && r.peer < size_ && r.peer != rank_,
                    "%s: peer %d is not another rank of this %d-rank communicator",
                    collectiveName(r.kind), r.peer, size_);
    TUTTI_CHECK_ARG(r.tag >= 0, "%s: tag %d is negative", collectiveName(r.kind), r.tag);
  }
  if (r.kind == Collective::kAllReduce && r.input != r.output && r.count > 0) {
    auto in = reinterpret_cast<std::uintptr_t>(r.input);
    auto out = reinterpret_cast<std::uintptr_t>(r.output);
    std::uint64_t bytes = r.count * elem;
    TUTTI_CHECK_ARG(in + bytes <= out || out + bytes <= in,
                    "allreduce: the send and receive buffers overlap without being the same "
                    "(pass the same pointer for an in-place call)");
  }
  return Status::Ok();
}

void CommImpl::prepare(OpRequest& r, const CallOptions& options) {
  auto timeout = options.timeout.value_or(timeout_);
  r.deadline = Deadline::after(timeout);
  r.algorithm = options.algorithm;
  if (r.kind != Collective::kSend && r.kind != Collective::kRecv) r.seq = nextSeq_++;
}

CollectiveSpec CommImpl::specFor(const OpRequest& r) const {
  CollectiveSpec spec;
  spec.kind = r.kind;
  spec.rank = rank_;
  spec.size = size_;
  spec.count = r.count;
  spec.dtype = r.dtype;
  spec.op = r.op;
  spec.root = r.root;
  spec.peer = r.peer;
  spec.inPlace = r.input == r.output;
  spec.segmentCount = std::max<std::uint64_t>(1, config_.segmentBytes / dataTypeSize(r.dtype));
  return spec;
}

std::string CommImpl::describe(const OpRequest& r, const char* algorithm) const {
  switch (r.kind) {
    case Collective::kSend:
    case Collective::kRecv:
      return strFormat("%s %s rank %d (tag %d, count %llu %s)", collectiveName(r.kind),
                       r.kind == Collective::kSend ? "to" : "from", r.peer, r.tag,
                       static_cast<unsigned long long>(r.count), dataTypeName(r.dtype));
    case Collective::kBarrier:
      return strFormat("barrier #%llu", static_cast<unsigned long long>(r.seq));
    default:
      return strFormat("%s #%llu (count %llu %s %s, %s)", collectiveName(r.kind),
                       static_cast<unsigned long long>(r.seq),
                       static_cast<unsigned long long>(r.count), dataTypeName(r.dtype),
                       reduceOpName(r.op), algorithm);
  }
}

const Schedule& CommImpl::scheduleFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm) {
  CacheKey key{static_cast<int>(spec.kind), spec.count, static_cast<int>(spec.dtype),
               static_cast<int>(spec.op), spec.inPlace, spec.peer, spec.root, algorithm.name};
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCachedSchedules) cache_.clear();
  return cache_.emplace(key, algorithm.build(spec)).first->second;
}

Status CommImpl::execute(const OpRequest& r) {
  CollectiveSpec spec = specFor(r);
  auto algorithm = selectAlgorithm(spec, r.algorithm);
  if (!algorithm.ok()) return algorithm.status();
  const std::string what = describe(r, (*algorithm)->name);
  Status health = transport_->health();
  if (!health.ok())
    return Status(health.code(),
                  strFormat("%s refused: communicator '%s' failed earlier: %s", what.c_str(),
                            name_.c_str(), health.message().c_str()),
                  health.peerRank());
  const Schedule& schedule = scheduleFor(spec, **algorithm);
  ExecParams params;
  params.dtype = r.dtype;
  params.op = r.op;
  params.worldSize = size_;
  params.tagBase = (r.kind == Collective::kSend || r.kind == Collective::kRecv)
                       ? p2pTag(0, static_cast<std::uint32_t>(r.tag))
                       : collectiveTagBase(0, r.seq);
  params.deadline = r.deadline;
  params.spinNs = spinNs_;
  params.maxInflight = static_cast<std::size_t>(std::max<std::int64_t>(1, config_.maxInflight));
  params.what = what;
  ExecBuffers buffers{r.input, r.output, nullptr};
  TUTTI_TRACE(kColl, "%s starting: %zu steps", what.c_str(), schedule.steps.size());
  Status status = tutti::execute(*transport_, schedule, buffers, params, pool_);
  if (!status.ok()) {
    Status failed = status.withContext(strFormat("%s failed on rank %d", what.c_str(), rank_));
    TUTTI_WARN(kColl, "%s", failed.message().c_str());
    return failed;
  }
  return status;
}

Status CommImpl::runBlocking(OpRequest request, const CallOptions& options) {
  TUTTI_RETURN_IF_ERROR(validate(request));
  prepare(request, options);
  {
    std::unique_lock<std::mutex> lock(queueMutex_);
    if (!queue_.empty() || workerBusy_) {
      // Async operations are pending: run behind them to keep issue order.
      auto work = std::make_shared<WorkState>(spinNs_);
      request.work = work;
      queue_.push_back(std::move(request));
      lock.unlock();
      queueCv_.notify_all();
      return work->wait(Deadline::never());  // bounded: every queued op has a deadline
    }
    inlineBusy_ = true;
  }
  Status status = execute(request);
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    inlineBusy_ = false;
  }
  queueCv_.notify_all();
  return status;
}

Work CommImpl::submit(OpRequest request, const CallOptions& options) {
  auto work = std::make_shared<WorkState>(spinNs_);
  Status valid = validate(request);
  if (!valid.ok()) {
    work->complete(valid);
    return Work(work);
  }
  prepare(request, options);
  request.work = work;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    queue_.push_back(std::move(request));
    if (!worker_.joinable()) worker_ = std::thread([this] { workerLoop(); });
  }
  queueCv_.notify_all();
  return Work(work);
}

void CommImpl::workerLoop() {
  while (true) {
    std::unique_lock<std::mutex> lock(queueMutex_);
    // Idle wait for work: woken by submit() or by the destructor (stopping_).
    queueCv_.wait(lock, [&] { return (stopping_ && !inlineBusy_) || (!queue_.empty() && !inlineBusy_); });
    if (queue_.empty()) return;  // stopping, nothing left
    OpRequest request = std::move(queue_.front());
    queue_.pop_front();
    workerBusy_ = true;
    lock.unlock();
    Status status = execute(request);
    request.work->complete(std::move(status));
    lock.lock();
    workerBusy_ = false;
    lock.unlock();
    queueCv_.notify_all();
  }
}

Result<std::string> CommImpl::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                           const std::string& forced) const {
  OpRequest r;
  r.kind = kind;
  r.count = count;
  r.dtype = dtype;
  r.peer = (rank_ + 1) % size_;
  TUTTI_CHECK_ARG(isValid(dtype), "unknown data type %d", static_cast<int>(dtype));
  auto algorithm = selectAlgorithm(specFor(r), forced);
  if (!algorithm.ok()) return algorithm.status();
  return std::string((*algorithm)->name);
}

}  // namespace tutti::detail
