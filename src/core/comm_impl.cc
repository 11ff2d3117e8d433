#include "core/comm_impl.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include "base/assert.h"
#include "base/cpus.h"
#include "base/host_props.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/stack.h"
#include "base/strings.h"
#include "base/wait.h"
#include "bootstrap/tcp_store.h"
#include "core/call_checks.h"
#include "core/call_describer.h"
#include "core/p2p_run.h"
#include "core/call_stamp.h"
#include "core/hang_report.h"
#include "core/work_state.h"
#include "reduce/reduce.h"
#include "transport/tag.h"
#include "transport/hybrid/hybrid_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::detail {
namespace {

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

// Whether this host's ranks have a core each, and two each, where no shared-memory transport
// joined them (TUTTI_TRANSPORT=tcp): every rank publishes its host and affinity mask, reads
// every rank's, and matches this host's ranks to CPUs as ShmTransport does. Without this, a
// rank bound to one core (mpirun --bind-to core, srun --cpu-bind=cores) compared the
// launcher's ranks per host with the one CPU of its own mask and read as oversubscribed:
// no spin, 4.5x the time of an 8-byte all-reduce over TCP (2 ranks, bound against unbound).
Result<std::pair<bool, bool>> hostCoresOverStore(Store& store, const std::string& prefix,
                                                 int rank, int size, const std::string& host,
                                                 Deadline deadline) {
  const std::vector<int> cpus = allowedCpuList();
  const std::string mine = host + " " + formatMaskField(cpus);
  TUTTI_RETURN_IF_ERROR(store.set(prefix + "host/" + std::to_string(rank),
                                  std::vector<std::uint8_t>(mine.begin(), mine.end())));
  std::vector<std::vector<int>> hostMasks;  // this host's ranks', this one's included
  for (int r = 0; r < size; ++r) {
    auto raw = store.get(prefix + "host/" + std::to_string(r), deadline);
    if (!raw.ok())
      return raw.status().withContext(strFormat("waiting for rank %d's host and CPUs", r));
    const std::string text(raw->begin(), raw->end());
    // The mask is the last field: a host named by TUTTI_SHM_HOST may hold spaces.
    const std::size_t space = text.rfind(' ');
    const std::optional<std::vector<int>> mask =
        space == std::string::npos ? std::nullopt
                                   : parseMaskField(std::string_view(text).substr(space + 1));
    if (!mask)
      return Status(ErrorCode::kProtocolError,
                    strFormat("rank %d published a malformed host and CPU list '%s'", r,
                              text.c_str()));
    if (std::string_view(text).substr(0, space) == host) hostMasks.push_back(*mask);
  }
  return std::make_pair(eachRankHasCores(hostMasks, 1, quotaCores()),
                        eachRankHasCores(hostMasks, 2, quotaCores()));
}

// Polling while waiting pays off only when every rank of this host has a core; when ranks
// outnumber cores, a spinning rank steals the core the rank it waits for needs (measured:
// 4 ranks on 2 cores, 8-byte all-reduce over TCP is slower with a 20 us spin than with none).
// With a core each, the budget is twice this host's measured wake-up latency (calibratedSpinNs).
std::int64_t spinBudgetNs(std::int64_t configuredUs, bool coreEach) {
  if (configuredUs >= 0) return configuredUs * 1000;
  return coreEach ? calibratedSpinNs() : 0;
}

// A call reads the clock once, for its issue time and deadline; steady_clock's read costs
// 40 ns on this kind of virtual machine, the coarse monotonic clock's (the same time base,
// updated once per tick) 13. CoarseNow::at is at most one tick (1-4 ms) before the real now,
// so a deadline that adds `tick` is never early, and at most a tick late: no timeout a
// caller can set notices. Without a coarse clock (or with one coarser than 10 ms), the
// precise one, and no tick.
struct CoarseNow {
  Deadline::Clock::time_point at;
  Deadline::Clock::duration tick{0};
};

CoarseNow coarseNow() {
  static const Deadline::Clock::duration tick = [] {
    timespec res{};
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return Deadline::Clock::duration(-1);
    return std::chrono::duration_cast<Deadline::Clock::duration>(
        std::chrono::seconds(res.tv_sec) + std::chrono::nanoseconds(res.tv_nsec));
  }();
  timespec now{};
  if (tick.count() < 0 || tick > std::chrono::milliseconds(10) ||
      clock_gettime(CLOCK_MONOTONIC_COARSE, &now) != 0)
    return CoarseNow{Deadline::Clock::now()};
  const auto sinceBoot = std::chrono::duration_cast<Deadline::Clock::duration>(
      std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec));
  return CoarseNow{Deadline::Clock::time_point(sinceBoot), tick};
}

}  // namespace

CommImpl::CommImpl(const Config& config, int rank, int size, std::string name)
    : config_(config),
      rank_(rank),
      size_(size),
      name_(std::move(name)),
      checker_(rank, &describeStamp),
      recorder_(name_, rank, static_cast<std::size_t>(config.flightRecorderSize)) {
  setSegmentBytes(config_.segmentBytes);
}

void CommImpl::setSegmentBytes(std::uint64_t bytes) {
  segmentBytes_ = bytes;
  for (int t = 0; t < kNumDataTypes; ++t)
    segmentCounts_[static_cast<std::size_t>(t)] =
        std::max<std::uint64_t>(1, bytes / dataTypeSize(static_cast<DataType>(t)));
}

Result<std::unique_ptr<CommImpl>> CommImpl::create(InitParams params) {
  prefaultStack();  // the creating thread, which usually makes the calls
  const Result<Config>& config = Config::fromProcessEnvironment();
  if (!config.ok()) return config.status();
  TUTTI_CHECK_ARG(params.store != nullptr, "the store is null");
  TUTTI_CHECK_ARG(params.size >= 1, "world size must be at least 1, got %d", params.size);
  TUTTI_CHECK_ARG(params.rank >= 0 && params.rank < params.size,
                  "rank %d is outside a world of %d ranks", params.rank, params.size);
  TUTTI_CHECK_ARG(!params.options.name.empty() && params.options.name.find('/') == std::string::npos,
                  "communicator name '%s' must be non-empty and contain no '/'",
                  params.options.name.c_str());
  TUTTI_CHECK_ARG(config->flightRecorderSize >= 0 && config->flightRecorderSize <= (1 << 20),
                  "TUTTI_FLIGHT_RECORDER_SIZE must be between 0 and 1048576, got %lld",
                  static_cast<long long>(config->flightRecorderSize));
  // Bounded, so that the report's wait is too (a huge value would make it wait forever).
  TUTTI_CHECK_ARG(config->hangReportSec >= 0 && config->hangReportSec <= 3600,
                  "TUTTI_HANG_REPORT_SEC must be between 0 and 3600 seconds, got %g",
                  config->hangReportSec);
  log::setRank(params.rank);
  std::unique_ptr<CommImpl> impl(
      new CommImpl(*config, params.rank, params.size, params.options.name));
  impl->timeout_ = params.options.timeout.value_or(std::chrono::milliseconds(
      static_cast<std::int64_t>(config->timeoutSec * 1000.0)));
  const std::string& progress = params.options.asyncProgress.empty()
                                    ? config->asyncProgress
                                    : params.options.asyncProgress;
  TUTTI_CHECK_ARG(progress == "auto" || progress == "thread" || progress == "wait",
                  "async progress (TUTTI_ASYNC_PROGRESS or CommOptions::asyncProgress) must be "
                  "auto, thread or wait, got '%s'", progress.c_str());
  impl->asyncProgress_ = progress;
  const std::optional<MessagePath> path = parseMessagePath(config->messagePath);
  TUTTI_CHECK_ARG(path.has_value(),
                  "TUTTI_MESSAGE_PATH must be learn, rule, buffered, direct or streamed, got '%s'",
                  config->messagePath.c_str());
  impl->messagePath_ = *path;
  impl->localSize_ = params.localSize;
  auto overrides = parseAlgorithmOverrides(config->algorithms);
  if (!overrides.ok()) return overrides.status().withContext("TUTTI_ALGO");
  for (const auto& [kind, algorithm] : *overrides)
    impl->algorithmOverrides_[static_cast<std::size_t>(kind)] = algorithm;
  if (params.key) {
    impl->key_ = *params.key;
  } else if (params.size > 1) {
    TUTTI_ASSIGN_OR_RETURN(impl->key_, auth::jobKey(*config));
  }
  impl->ownedServer_ = std::move(params.ownedServer);
  impl->store_ = params.store;
  Deadline deadline = Deadline::afterSeconds(config->connectRetrySec);

  // The k-th communicator this rank creates under a name uses generation k, so re-creating a
  // communicator on the same store never reads the previous one's keys.
  const std::string base = "tutti/" + impl->name_ + "/";
  TUTTI_ASSIGN_OR_RETURN(std::int64_t generation,
                         impl->store_->add(base + "gen/" + std::to_string(params.rank), 1));
  const std::string prefix = base + std::to_string(generation) + "/";
  impl->prefix_ = prefix;
  TUTTI_ASSIGN_OR_RETURN(std::uint64_t uid,
                         agreeOnUid(*impl->store_, prefix, params.rank, deadline));

  TUTTI_RETURN_IF_ERROR(impl->connect(params, *config, prefix, uid, deadline));
  // Whether this host's ranks have a core each, and two (one for the worker thread): where
  // shared memory joined them, from every local rank's affinity mask (ShmTransport::
  // coreEach); else from the launcher's ranks per host against this process's cores.
  const bool coreEach = impl->hostCores_ ? impl->hostCores_->first
                                         : params.localSize <= usableCores();
  const bool twoCoresEach = impl->hostCores_ ? impl->hostCores_->second
                                             : 2 * params.localSize <= usableCores();
  impl->spinNs_ = spinBudgetNs(config->spinUs, coreEach);
  // A thread waiting on a Work waits for this process's worker thread, which needs a core
  // of its own to make progress: polling pays only where every rank's two threads have
  // one. Two ranks on 2 cores, an 8-byte all-reduce issued async and waited for at once
  // (tutti-bench -z 1): 35.8 us per call polling 20 us, 6.2 with no polling.
  impl->workSpinNs_ = spinBudgetNs(config->spinUs, twoCoresEach);
  // Where the worker has no core of its own, handing it a call and taking the result back
  // costs two wake-ups: 2 ranks on 2 cores, an 8-byte all-reduce issued async and waited
  // for at once took 2.05 us handed over, 0.45 run by the waiting thread (blocking: 0.19).
  impl->deferToWaits_ = progress == "wait" || (progress == "auto" && !twoCoresEach);
  impl->checker_.setConcurrentArrivals(!impl->transport_->arrivalsOnCallingThreads());
  impl->transport_->setCallChecker(&impl->checker_);
  addLiveRecorder(&impl->recorder_, config->flightRecorderSignal);
  impl->recorderLive_ = true;
  return impl;
}

Status CommImpl::connect(const InitParams& params, const Config& config, const std::string& prefix,
                         std::uint64_t uid, Deadline deadline) {
  const std::string where = strFormat("creating communicator '%s' (rank %d of %d)", name_.c_str(),
                                      params.rank, params.size);
  const std::string choice =
      params.options.transport.empty() ? config.transport : params.options.transport;
  transportChoice_ = choice;
  TUTTI_CHECK_ARG(choice == "auto" || choice == "shm" || choice == "tcp",
                  "the transport (TUTTI_TRANSPORT or CommOptions::transport) must be auto, shm "
                  "or tcp, got '%s'", choice.c_str());
  std::unique_ptr<shm::ShmTransport> local;
  if (choice == "tcp" && params.size > 1) {
    auto cores = hostCoresOverStore(*store_, prefix, params.rank, params.size,
                                    config.shmHost.empty() ? shm::hostKey() : config.shmHost,
                                    deadline);
    if (!cores.ok()) return cores.status().withContext(where);
    hostCores_ = *cores;
    TUTTI_INFO(kInit, "rank %d: TCP only, %s", params.rank,
               cores->second ? "two cores for each rank"
               : cores->first ? "a core for each rank"
                              : "more ranks than cores");
  }
  if (choice != "tcp") {
    shm::ShmTransport::Options sopts;
    sopts.rank = params.rank;
    sopts.size = params.size;
    sopts.commUid = uid;
    if (config.shmCmaBytes != "auto") {
      const std::optional<std::uint64_t> cma = parseBytes(config.shmCmaBytes);
      TUTTI_CHECK_ARG(cma.has_value(),
                      "TUTTI_SHM_CMA_BYTES must be auto or a byte count such as 4096, 64K or "
                      "16M, got '%s'", config.shmCmaBytes.c_str());
      sopts.cmaBytes = *cma;
      sopts.cmaBytesWithCores = *cma;
    } else {
      sopts.cmaAuto = true;
    }
    if (config.shmExchangeBytes != "auto") {
      const std::optional<std::uint64_t> most = parseBytes(config.shmExchangeBytes);
      TUTTI_CHECK_ARG(most.has_value(),
                      "TUTTI_SHM_EXCHANGE_BYTES must be auto or a byte count such as 0, 512K "
                      "or 16M, got '%s'", config.shmExchangeBytes.c_str());
      sopts.exchangeMaxBytes = *most;
    }
    sopts.mappedBytes = config.shmMappedBytes;
    sopts.streamedBytes = config.shmStreamedBytes;
    sopts.cmaShare = config.shmCmaShare;
    sopts.learnsPath = messagePath_ == MessagePath::kLearn;
    TUTTI_CHECK_ARG(config.shmSlotBytes == 0 ||
                        (config.shmSlotBytes >= 64 && config.shmSlotBytes <= (64u << 20)),
                    "TUTTI_SHM_SLOT_BYTES must be 0 (automatic) or between 64 and 64M, got %llu",
                    static_cast<unsigned long long>(config.shmSlotBytes));
    sopts.slotBytes = static_cast<std::uint32_t>(config.shmSlotBytes);
    TUTTI_CHECK_ARG(config.shmPollUs >= 0 && config.shmPollUs <= 10'000'000,
                    "TUTTI_SHM_POLL_US must be between 0 and 10000000 microseconds, got %lld",
                    static_cast<long long>(config.shmPollUs));
    sopts.pollNs = config.shmPollUs * 1000;
    sopts.copy = &reduce::copy;
    sopts.copyTwo = &reduce::copyTwo;
    sopts.maxUnexpectedBytes = config.tcpMaxUnexpected;
    sopts.runAheadBytes = config.shmRunAheadBytes;
    TUTTI_CHECK_ARG(config.shmRunAheadMessages >= 0,
                    "TUTTI_SHM_RUN_AHEAD_MESSAGES must be 0 or more, got %lld",
                    static_cast<long long>(config.shmRunAheadMessages));
    sopts.runAheadMessages = static_cast<std::uint64_t>(config.shmRunAheadMessages);
    sopts.deadline = deadline;
    sopts.host = config.shmHost;
    sopts.requireAll = choice == "shm";
    auto shm = shm::ShmTransport::create(*store_, prefix, sopts);
    if (shm.ok()) hostCores_ = std::make_pair((*shm)->coreEach(), (*shm)->twoCoresEach());
    if (shm.ok() && (*shm)->localPeers() + 1 == static_cast<std::size_t>(params.size)) {
      // A ring's segment is its message: where the rings hold less than two of them (more
      // than 2 ranks: 16 slots of 32 KiB), the next one waits for the first to drain.
      // Half the ring, alternating runs against 512 KiB (scripts/ab_latency.sh -r 7..9,
      // time against the default's): all-reduce 16 MiB 3 ranks 0.94, 4 ranks 0.87 and 0.95,
      // 8 ranks 0.93; 64 MiB 4 and 8 ranks 0.92, 0.94; 4 MiB 1.02, 1.05; all-gather 16 MiB
      // 1.00, 0.95, 64 MiB 4 ranks 0.99; reduce-scatter 16 MiB 1.01, 0.98 (AMD EPYC). On an
      // Intel Xeon (2 MiB L2 per core, 105 MiB L3) an eighth of the ring, 64 KiB, measured
      // faster again against half (ab_latency.sh -s, 7-11 rounds): all-reduce 4 ranks 4 / 16
      // / 64 MiB 0.84 / 0.90 / 0.94, 8 ranks 16 MiB 0.95; all-gather 4 ranks 16 MiB 0.98.
      // Between 2 ranks (4 MiB rings) the segment stays as it is.
      if (!config.isSet("TUTTI_SEGMENT_BYTES"))
        setSegmentBytes(std::min<std::uint64_t>(
            config_.segmentBytes,
            std::max<std::uint64_t>(
                (*shm)->ringBytes() / oneHostRingShare((*shm)->hostKernelCopyRatio()), 4096)));
      if (params.size > 1) {
        const Status agreed =
            agreeOnMessagePath(*store_, prefix, params.rank, params.size,
                               messagePath_ == MessagePath::kLearn, (*shm)->directFrom(),
                               (*shm)->streamedFrom(), deadline);
        if (!agreed.ok()) return agreed.withContext(where);
      }
      transport_ = std::move(shm).value();
      sharedMemory_ = true;
      TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, peers reached over shared memory",
                 name_.c_str(), params.rank, params.size);
      return Status::Ok();
    }
    // Each pair of ranks reaches the same verdict (shm_transport.h): a rank without shared
    // memory is reached over TCP by all.
    if (shm.ok()) local = std::move(shm).value();
    else if (choice == "shm") return shm.status().withContext(where + " with TUTTI_TRANSPORT=shm");
    else TUTTI_INFO(kInit, "shared memory not used: %s", shm.status().message().c_str());
  }
  tcp::TcpTransport::Options topts;
  topts.rank = params.rank;
  topts.size = params.size;
  topts.commUid = uid;
  // TUTTI_BIND_ADDR is the user's explicit choice and wins over the interface that happens
  // to reach the store; the listener binds that one address only.
  topts.bindHost = !config.bindAddr.empty()  ? config.bindAddr
                   : !params.bindHost.empty() ? params.bindHost
                                              : std::string("127.0.0.1");
  topts.key = key_;
  TUTTI_ASSIGN_OR_RETURN(topts.authTimeout, auth::authTimeout(config));
  if (params.size > 1)
    auth::warnIfUnauthenticated(key_, "this rank's TCP listener on " + topts.bindHost);
  topts.maxUnexpectedBytes = config.tcpMaxUnexpected;
  topts.deadline = deadline;
  auto transport = tcp::TcpTransport::create(*store_, prefix, topts);
  if (!transport.ok()) return transport.status().withContext(where);
  bindHost_ = topts.bindHost;
  if (local) {
    const std::size_t peers = local->localPeers();
    transport_ = std::make_unique<HybridTransport>(std::move(local), std::move(transport).value());
    TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, %zu peers over shared memory, "
               "the others over TCP from %s", name_.c_str(), params.rank, params.size, peers,
               topts.bindHost.c_str());
    return Status::Ok();
  }
  transport_ = std::move(transport).value();
  TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, peers reached over TCP from %s",
             name_.c_str(), params.rank, params.size, topts.bindHost.c_str());
  return Status::Ok();
}

CommImpl::~CommImpl() {
  if (recorderLive_) removeLiveRecorder(&recorder_);
  workQueue_->close();  // waits running queued operations finish them first
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

void CommImpl::abort() {
  if (!transport_) return;
  TUTTI_WARN(kColl, "communicator '%s' aborted by rank %d", name_.c_str(), rank_);
  transport_->fail(Status(ErrorCode::kAborted,
                          strFormat("communicator '%s' was aborted by rank %d (abort())",
                                    name_.c_str(), rank_),
                          rank_));
  // After failing the transport: abort() returns promptly whatever the dump costs peers.
  dumpOnFailure("abort()");
}

void CommImpl::dumpOnFailure(const char* reason) {
  if (!failureDumped_.exchange(true, std::memory_order_acq_rel))
    recorder_.dump(reason, FlightRecorder::kFailureDumpRecords);
}

Status CommImpl::validate(OpRequest& r) {
  if (checkCache_.reuse(r, rank_, size_)) return Status::Ok();
  const CallCheck check = checkCall(r, rank_, size_);
  if (check.status.ok()) checkCache_.remember(r);
  if (check.status.ok() || !check.onlyHere) return check.status;
  // The peers taking part passed good arguments and would wait for this rank; failing the
  // communicator tells them now (the abort protocol), naming this rank and the reason.
  const char* name = collectiveName(r.spec.kind);
  Status failure(ErrorCode::kAborted,
                 strFormat("rank %d passed an invalid argument to its %s, which fails "
                           "communicator '%s': %s",
                           rank_, name, name_.c_str(), check.status.message().c_str()),
                 rank_);
  TUTTI_WARN(kColl, "%s", failure.message().c_str());
  transport_->fail(failure);
  return check.status;
}

void CommImpl::prepare(OpRequest& r, const CallOptions& options) {
  auto timeout = options.timeout.value_or(timeout_);
  const CoarseNow now = coarseNow();
  r.issued = now.at;
  r.deadline = Deadline::at(now.at + now.tick +
                            std::chrono::duration_cast<Deadline::Clock::duration>(timeout));
  r.spec.segmentCount = segmentCounts_[static_cast<std::size_t>(r.spec.dtype)];  // validated
  r.spec.sharedMemory = sharedMemory_;
  // Point to point takes no sequence number; it keeps the next one, so that the hang report
  // can say which collectives it came between.
  const bool p2p = r.spec.kind == Collective::kSend || r.spec.kind == Collective::kRecv;
  r.seq = p2p ? nextSeq_ : nextSeq_++;
}

std::string_view CommImpl::forcedAlgorithm(std::string_view requested, Collective kind) const {
  if (!requested.empty()) return requested;
  return algorithmOverrides_[static_cast<std::size_t>(kind)];
}

CallSummary CommImpl::summarize(const OpRequest& r, const char* algorithm) {
  const CollectiveSpec& s = r.spec;
  CallSummary call;
  call.kind = s.kind;
  call.dtype = s.dtype;
  call.op = s.op;
  call.perRankCounts = !s.counts.empty();
  call.root = s.root;
  call.peer = s.peer;
  call.tag = r.tag;
  call.seq = r.seq;
  call.count = s.count;
  call.algorithm = algorithm;
  return call;
}

std::string CommImpl::describe(const OpRequest& r, const char* algorithm) const {
  return describeCall(summarize(r, algorithm), countArraysHash(r.spec));
}

Status CommImpl::execute(OpRequest& r, std::string_view requested) {
  // The same decision on every rank: the call's shape, then what the ranks agreed on.
  r.spec.sharedBuffers = false;
  if (choiceNeedsBuffers(r.spec) && transport_->flatBytes() > 0)
    TUTTI_RETURN_IF_ERROR(agreeOnBuffers(r));
  auto algorithm = chooseAlgorithm(r.spec, forcedAlgorithm(requested, r.spec.kind));
  if (!algorithm.ok()) return algorithm.status();
  const CallDescriber what(*this, r, (*algorithm)->name);
  const FlightRecorder::Handle op = recorder_.begin(summarize(r, (*algorithm)->name), r.issued);
  ExecReport report;
  bool refused = false;
  Status status = runSchedule(r, **algorithm, what, &report, &refused);
  recorder_.end(op, status.code());
  if (status.ok()) return status;
  return failed(r, what, status, report, refused);
}

Status CommImpl::refusal(const OpDescriber& what, const Status& health) const {
  return Status(health.code(),
                strFormat("%s refused: communicator '%s' failed earlier: %s",
                          what.describe().c_str(), name_.c_str(), health.message().c_str()),
                health.peerRank());
}

ExecParams CommImpl::execParams(const OpRequest& r, const Plan& plan, const OpDescriber& what) {
  const CollectiveSpec& spec = r.spec;
  ExecParams params;
  params.dtype = spec.dtype;
  params.op = spec.op;
  params.worldSize = size_;
  params.tagBase = (spec.kind == Collective::kSend || spec.kind == Collective::kRecv)
                       ? p2pTag(0, static_cast<std::uint32_t>(r.tag))
                       : collectiveTagBase(0, r.seq);
  params.deadline = r.deadline;
  params.spinNs = spinNs_;
  params.maxInflight = static_cast<std::size_t>(std::max<std::int64_t>(1, config_.maxInflight));
  params.what = &what;
  params.stamp = plan.stamp;
  // The run registers the call for mismatch detection once its first messages are out.
  params.checker = &checker_;
  params.seq = r.seq;
  return params;
}

Status CommImpl::runSchedule(const OpRequest& r, const AlgorithmInfo& algorithm,
                             const OpDescriber& what, ExecReport* report, bool* refused) {
  const CollectiveSpec& spec = r.spec;
  Status health = transport_->health();
  if (!health.ok()) {
    *refused = true;
    return refusal(what, health);
  }
  const Plan& plan = planFor(spec, algorithm);
  return runPlan(r, algorithm, plan, flatBytesFor(spec, algorithm), what, report);
}

Status CommImpl::runPlan(const OpRequest& r, const AlgorithmInfo& algorithm, const Plan& plan,
                         std::size_t flatBytes, const OpDescriber& what, ExecReport* report) {
  if (flatBytes != kNotFlat) return runFlat(r, algorithm, plan.stamp, flatBytes, what, report);
  const CollectiveSpec& spec = r.spec;
  const Schedule& schedule = plan.schedule;
  ExecParams params = execParams(r, plan, what);
  std::optional<std::uint32_t> shape;
  TUTTI_RETURN_IF_ERROR(choosePath(r, plan.stamp, what, &params, &shape, report));
  if (schedule.scratchCount > 0) {
    // Pooled: grows to the largest need once, then every call reuses it.
    std::size_t bytes = schedule.scratchCount * dataTypeSize(spec.dtype);
    if (scratch_.size() < bytes) scratch_.resize(bytes);
  }
  ExecBuffers buffers{r.input, r.output, scratch_.data()};
  TUTTI_TRACE(kColl, "%s starting: %zu steps", what.describe().c_str(), schedule.steps.size());
  const auto start = shape ? std::chrono::steady_clock::now()
                           : std::chrono::steady_clock::time_point{};
  Status status = tutti::execute(*transport_, schedule, buffers, params, pool_, report);
  if (shape && status.ok())
    paths_.record(*shape, std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start).count());
  if (status.ok()) return status;
  return status.withContext(strFormat("%s failed on rank %d", what.describe().c_str(), rank_));
}

Status CommImpl::failed(const OpRequest& r, const OpDescriber& what, const Status& status,
                        const ExecReport& report, bool refused) {
  // The communicator's first failure decides, not this call's symptom of it.
  const Status root = transport_->health();
  Status result = status;
  bool reported = false;
  if (root.code() == ErrorCode::kTimeout && !hangReported_ && size_ > 1 &&
      config_.hangReportSec > 0) {
    // Once per communicator: later calls are refused with the same root cause, and the
    // others have stopped looking by then.
    hangReported_ = true;
    HangPosition mine;
    mine.collective = r.spec.kind != Collective::kSend && r.spec.kind != Collective::kRecv;
    mine.seq = r.seq;
    mine.late = refused;
    mine.call = what.describe();
    mine.waitingOn = report.waitingOn;
    mine.completedSteps = report.completedSteps;
    mine.totalSteps = report.totalSteps;
    const HangView view = exchangeHangPositions(*store_, prefix_, rank_, size_, mine,
                                                Deadline::afterSeconds(config_.hangReportSec));
    int blame = Status::kNoRank;
    const std::string summary = summarizeHang(view, &blame);
    result = Status(status.code(), status.message() + "; " + summary,
                    blame != Status::kNoRank ? blame : status.peerRank());
    reported = true;
  }
  // A refused call repeats a failure already reported; one line per failure is enough.
  if (!refused || reported) TUTTI_WARN(kColl, "%s", result.message().c_str());
  if (root.code() == ErrorCode::kTimeout) dumpOnFailure("timeout");
  if (root.code() == ErrorCode::kAborted) dumpOnFailure("aborted");
  return result;
}

Status CommImpl::runAlone(OpRequest& request, const CallOptions& options) {
  // checkCache_.reuse() fills in what validate() would (its verdict was OK).
  if (repeated_.valid && options.algorithm == repeated_.forced &&
      checkCache_.reuse(request, rank_, size_))
    return runRepeated(request, options);
  repeated_.valid = false;
  TUTTI_RETURN_IF_ERROR(validate(request));
  prepare(request, options);
  Status status = execute(request, options.algorithm);
  if (status.ok()) keepRepeated(request, options);
  return status;
}

Status CommImpl::runBlocking(OpRequest&& request, const CallOptions& options) {
  // Without a worker (no async call was issued yet) no other thread runs operations, and
  // the queue's lock only orders this thread with itself: skipped.
  if (!workerStarted_) return runAlone(request, options);
  {
    std::unique_lock<std::mutex> lock(queueMutex_);
    if (!workerBusy_ && !inlineBusy_ && queue_.empty()) {
      // The worker is idle with nothing queued: until finishInline() this thread alone
      // runs operations, as before any async call, repeats included. (Through the path
      // below, 2 ranks, 8 B all-reduce after one async call: 0.16 us against 0.12.)
      inlineBusy_ = true;
      lock.unlock();
      Status status = runAlone(request, options);
      finishInline();
      return status;
    }
    // Operations run below (queued ones, this one) are not kept for a repeat: what was
    // kept may name a plan their lookups evicted. Under the lock: the worker clears it too.
    repeated_.valid = false;
  }
  TUTTI_RETURN_IF_ERROR(validate(request));
  prepare(request, options);
  {
    std::unique_lock<std::mutex> lock(queueMutex_);
    if (workerBusy_ || inlineBusy_) {
      // The worker (or a thread waiting on a Work) is running an async operation: run
      // behind it and whatever is queued, to keep issue order.
      std::shared_ptr<WorkState> work = newWork();
      request.work = work;
      request.algorithm = options.algorithm;
      const bool p2p = isPointToPoint(request);
      queue_.push_back(std::move(request));
      queued_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      queueCv_.notify_all();
      if (p2p) transport_->interruptWait();  // a point-to-point group there takes it in
      return work->wait(Deadline::never());  // bounded: every queued op has a deadline
    }
    inlineBusy_ = true;
    // Async operations issued before this call and not started yet run here first, in
    // issue order (the worker starts nothing while inlineBusy_): handing them to the worker
    // would cost a wake-up of the worker and then one of this thread, each a scheduler round
    // trip, where an isend followed by a recv needs none. Point-to-point calls back to back
    // run together, this one too when it is one of them and the last.
    while (!queue_.empty()) {
      if (isPointToPoint(queue_.front())) {
        takeQueuedP2pLocked(p2pBatch_);
        const bool joins = queue_.empty() && isPointToPoint(request);
        lock.unlock();
        if (joins) {
          request.algorithm = options.algorithm;
          Status status = runP2pGroup(p2pBatch_, &request, false);
          finishInline();
          return status;
        }
        // Without a call of the caller's in the group, every status goes to a Work.
        (void)runP2pGroup(p2pBatch_, nullptr, false);
        lock.lock();
        continue;
      }
      runFrontLocked(lock);
    }
  }
  Status status = execute(request, options.algorithm);
  finishInline();
  return status;
}

Result<std::unique_ptr<CommImpl>> CommImpl::split(int color, int key, const CommOptions& options) {
  // Everyone learns everyone's (color, key) through this communicator's own allgather.
  const auto n = static_cast<std::size_t>(size_);
  std::vector<std::int64_t> mine = {color, key};
  std::vector<std::int64_t> all(2 * n);
  OpRequest gather;
  gather.spec.kind = Collective::kAllGather;
  gather.spec.count = 2;
  gather.spec.dtype = DataType::kInt64;
  gather.input = mine.data();
  gather.output = all.data();
  TUTTI_RETURN_IF_ERROR(runBlocking(std::move(gather), CallOptions{}));
  const std::uint64_t seq = splitCount_++;
  // Checked after the exchange, so that every rank refuses alike, whichever rank erred.
  for (std::size_t r = 0; r < n; ++r) {
    TUTTI_CHECK_ARG(all[2 * r] >= 0 || all[2 * r] == Communicator::kNoColor,
                    "split: rank %zu passed color %lld (a color is >= 0, or kNoColor = %d)", r,
                    static_cast<long long>(all[2 * r]), Communicator::kNoColor);
  }
  if (color < 0) return std::unique_ptr<CommImpl>();
  std::vector<std::pair<std::int64_t, int>> members;  // (key, rank here)
  for (std::size_t r = 0; r < n; ++r) {
    if (all[2 * r] == color) members.emplace_back(all[2 * r + 1], static_cast<int>(r));
  }
  std::sort(members.begin(), members.end());
  int newRank = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == rank_) newRank = static_cast<int>(i);
  }
  InitParams params;
  params.store = store_;
  params.rank = newRank;
  params.size = static_cast<int>(members.size());
  params.options = options;
  // Unique per (parent, split, color), so the groups' store keys never meet.
  const std::string base = options.name == CommOptions{}.name ? name_ : options.name;
  params.options.name = strFormat("%s.%llu.%d", base.c_str(), static_cast<unsigned long long>(seq), color);
  if (!options.timeout) params.options.timeout = timeout_;
  if (options.transport.empty()) params.options.transport = transportChoice_;
  if (options.asyncProgress.empty()) params.options.asyncProgress = asyncProgress_;
  params.bindHost = bindHost_;
  params.key = key_;
  params.localSize = std::min(localSize_, params.size);
  return create(std::move(params));
}

}  // namespace tutti::detail
