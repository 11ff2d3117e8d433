#include "core/comm_impl.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "base/log.h"
#include "base/macros.h"
#include "base/pool_growth.h"
#include "base/stack.h"
#include "base/strings.h"
#include "base/wait.h"
#include "bootstrap/bounded_store.h"
#include "bootstrap/tcp_store.h"
#include "core/call_describer.h"
#include "core/call_stamp.h"
#include "core/model_setup.h"
#include "core/tuner_setup.h"
#include "reduce/reduce.h"
#include "topology/host_identity.h"

namespace tutti::detail {

// What create() decides for the parts besides the transport.
struct CommImpl::Parts {
  CallPlanner::Setup planner;
  TunerInputs tuner;
  FailureReporter::Setup failures;
  CallRunner::Setup runner;
  CallQueue::Setup queue;
};

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
    TUTTI_RETURN_IF_ERROR(setBefore(store, key, bytes, deadline));
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

// Polling while waiting pays off only when every rank of this host has a core: when ranks
// outnumber cores, a spinning rank steals the core the rank it waits for needs. With a core
// each, the budget is twice this host's measured wake-up latency (calibratedSpinNs).
std::int64_t spinBudgetNs(std::int64_t configuredUs, bool coreEach) {
  if (configuredUs >= 0) return configuredUs * 1000;
  return coreEach ? calibratedSpinNs() : 0;
}

// What the configuration and the options choose for calls, checked before connecting.
struct Choices {
  std::string progress;  // TUTTI_ASYNC_PROGRESS or CommOptions::asyncProgress
  MessagePath path = MessagePath::kLearn;
  std::array<std::string, kNumCollectives> forced;  // TUTTI_ALGO
  std::string transport;  // TUTTI_TRANSPORT or CommOptions::transport (the tuner's model)
};

Result<Choices> choicesFor(const Config& config, const CommOptions& options) {
  Choices c;
  TUTTI_RETURN_IF_ERROR(validateConfigValue("TUTTI_ASYNC_PROGRESS", options.asyncProgress,
                                            "CommOptions::asyncProgress"));
  c.progress = options.asyncProgress.empty() ? config.asyncProgress : options.asyncProgress;
  c.transport = options.transport.empty() ? config.transport : options.transport;
  // The registry allows only the values parseMessagePath() knows.
  c.path = parseMessagePath(config.messagePath).value_or(MessagePath::kLearn);
  auto overrides = parseAlgorithmOverrides(config.algorithms);
  if (!overrides.ok()) return overrides.status().withContext("TUTTI_ALGO");
  for (const auto& [kind, algorithm] : *overrides)
    c.forced[static_cast<std::size_t>(kind)] = algorithm;
  return c;
}

// The parts' settings, from the choices and what the transport found about the host's
// cores. A thread waiting on a Work waits for the worker thread, which needs a core of its
// own to make progress: polling for it, and handing it the calls, pay only where every
// rank's two threads have one.
CommImpl::Parts partsFor(const Config& config, const Choices& choices,
                         const TransportSetup& transport) {
  CommImpl::Parts parts;
  parts.planner.forced = choices.forced;
  parts.planner.sharedMemory = transport.sharedMemory;
  parts.planner.hosts = transport.hosts;
  parts.planner.segmentBytes = config.segmentBytes;
  if (transport.sharedMemory && !config.isSet("TUTTI_SEGMENT_BYTES"))
    parts.planner.segmentBytes = std::min(config.segmentBytes, transport.ringSegmentBytes);
  parts.planner.maxInflight = static_cast<std::size_t>(config.maxInflight);  // 1 or more
  parts.planner.learnsContenders = config.tunerLearn;
  parts.tuner.mode = config.tuner;
  parts.tuner.pluginPath = config.tunerPlugin;
  parts.tuner.hosts = transport.hosts;
  // Shared memory on every path; TCP on every path; or each host's ranks through shared
  // memory and TCP between hosts (auto across hosts).
  parts.tuner.transport = transport.sharedMemory ? tuning::TransportKind::kShm
                          : transport.hosts != nullptr && transport.hosts->hostCount() > 1 &&
                                  choices.transport == "auto"
                              ? tuning::TransportKind::kHybrid
                              : tuning::TransportKind::kTcp;
  parts.tuner.segmentBytes = parts.planner.segmentBytes;
  parts.tuner.fixedSegment = config.isSet("TUTTI_SEGMENT_BYTES");
  parts.tuner.maxInflight = parts.planner.maxInflight;
  parts.runner.spinNs = spinBudgetNs(config.spinUs, transport.coreEach);
  parts.runner.maxInflight = parts.planner.maxInflight;
  parts.runner.messagePath = choices.path;
  parts.queue.workSpinNs = spinBudgetNs(config.spinUs, transport.twoCoresEach);
  parts.queue.deferToWaits = choices.progress == "wait" ||
                             (choices.progress == "auto" && !transport.twoCoresEach);
  parts.failures.hangReportSec = config.hangReportSec;
  parts.failures.recorderSize = static_cast<std::size_t>(config.flightRecorderSize);
  parts.failures.recorderSignal = config.flightRecorderSignal;
  return parts;
}

}  // namespace

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
  // The API's values are checked as the registry checks the environment's.
  TUTTI_RETURN_IF_ERROR(validateConfigValue("TUTTI_TRANSPORT", params.options.transport,
                                            "CommOptions::transport"));
  log::setRank(params.rank);
  Identity id;
  id.name = params.options.name;
  id.rank = params.rank;
  id.size = params.size;
  id.store = params.store;
  id.ownedServer = std::move(params.ownedServer);
  id.timeout = params.options.timeout.value_or(
      std::chrono::milliseconds(static_cast<std::int64_t>(config->timeoutSec * 1000.0)));
  id.transportChoice = params.options.transport.empty() ? config->transport
                                                        : params.options.transport;
  TUTTI_ASSIGN_OR_RETURN(const Choices choices, choicesFor(*config, params.options));
  id.asyncProgress = choices.progress;
  id.localSize = params.localSize;
  if (params.key) {
    id.key = *params.key;
  } else if (params.size > 1) {
    TUTTI_ASSIGN_OR_RETURN(id.key, auth::jobKey(*config));
  }
  // Every store call of the creation ends by this deadline, a store gone included.
  const Deadline deadline = Deadline::afterSeconds(config->connectRetrySec);
  // The k-th communicator this rank creates under a name uses generation k, so re-creating a
  // communicator on the same store never reads the previous one's keys.
  const std::string base = "tutti/" + id.name + "/";
  TUTTI_ASSIGN_OR_RETURN(std::int64_t generation,
                         addBefore(*id.store, base + "gen/" + std::to_string(id.rank), 1, deadline));
  id.prefix = base + std::to_string(generation) + "/";
  TUTTI_ASSIGN_OR_RETURN(std::uint64_t uid, agreeOnUid(*id.store, id.prefix, id.rank, deadline));
  // Each rank's description goes to the store before the transport connects, which waits
  // for every rank anyway: rank 0 then finds them all there.
  TopologySetup topology({id.store.get(), id.prefix, id.name, id.rank, id.size,
                          config->shmHost.empty() ? topo::hostIdentity() : config->shmHost,
                          !config->bindAddr.empty()     ? config->bindAddr
                          : !params.bindHost.empty()    ? params.bindHost
                                                        : std::string("127.0.0.1"),
                          deadline},
                         *config, std::move(params.view));
  TUTTI_RETURN_IF_ERROR(topology.publish());
  // A split child keeps its parent's model, which its ranks agreed on already.
  const bool splitChild = params.model != nullptr;
  id.model = std::move(params.model);
  if (!id.model) {
    // Rank 0's cache is keyed by the machine it really runs on, whatever TUTTI_SHM_HOST says.
    TUTTI_ASSIGN_OR_RETURN(id.model, agreeOnModel({id.store.get(), id.prefix, id.rank, id.size,
                                                   id.rank == 0 ? topo::hostIdentity() : "",
                                                   deadline}, *config));
  }
  // The model's threshold for non-temporal stores holds for the whole process (reduce.h).
  reduce::setStreamingFrom(static_cast<std::size_t>(id.model->streamingStoresFrom));
  TransportFactory::Request request{id.store.get(), id.prefix, id.name, id.rank, id.size, uid,
                                    id.transportChoice, params.bindHost, id.key,
                                    choices.path == MessagePath::kLearn, id.localSize,
                                    &reduce::copy, &reduce::copyTwo, deadline};
  TUTTI_ASSIGN_OR_RETURN(TransportSetup transport, TransportFactory::build(request, *config));
  id.bindHost = transport.bindHost;
  TUTTI_ASSIGN_OR_RETURN(id.view, topology.finish());
  // Across hosts the network's figures are measured on the links just made (not by a split
  // child, whose model is its parent's).
  if (!splitChild) {
    TUTTI_ASSIGN_OR_RETURN(id.model, agreeOnNetwork({id.store.get(), id.prefix, id.rank, id.size,
                                                     id.view.get(), transport.transport.get(),
                                                     deadline},
                                                    std::move(id.model), *config));
  }
  transport.hosts = hostMapOf(*id.view);
  const Parts parts = partsFor(*config, choices, transport);
  return std::unique_ptr<CommImpl>(new CommImpl(std::move(id), std::move(transport), parts));
}

namespace {

std::unique_ptr<FlatExchangeRunner> flatRunnerFor(Transport& transport, CallChecker& checker,
                                                  std::int64_t spinNs) {
  FlatExchange* flat = transport.find<FlatExchange>();
  if (flat == nullptr) return nullptr;
  return std::make_unique<FlatExchangeRunner>(*flat, transport, checker, spinNs);
}

template <typename Setup>
Setup withRank(Setup setup, int rank, int size) {
  setup.rank = rank;
  setup.size = size;
  return setup;
}

}  // namespace

CommImpl::CommImpl(Identity identity, TransportSetup transport, const Parts& parts)
    : id_(std::move(identity)),
      checker_(id_.rank, &describeStamp),
      transport_(std::move(transport.transport)),
      flat_(flatRunnerFor(*transport_, checker_, parts.runner.spinNs)),
      planner_([&] {
        CallPlanner::Setup setup = withRank(parts.planner, id_.rank, id_.size);
        setup.flatRoom = flat_ ? flat_->room() : 0;
        if (id_.model) setup.buffersAgreedFrom = id_.model->buffersAgreedFrom;
        TunerInputs tuner = parts.tuner;
        tuner.size = id_.size;
        tuner.model = id_.model;
        tuner.view = id_.view;
        setup.tuner = makeTuner(tuner, setup.flatRoom);
        // What a call's choice starts from, for `tutti-info explain --segment --flat-room`
        // to price the calls as this communicator runs them (bench/regret.sh reads it).
        if (id_.rank == 0)
          TUTTI_INFO(kTune,
                     "communicator '%s': segment %llu bytes (%s), flat exchange room %zu "
                     "bytes, %s over %s",
                     id_.name.c_str(), static_cast<unsigned long long>(setup.segmentBytes),
                     tuner.fixedSegment ? "TUTTI_SEGMENT_BYTES" : "default", setup.flatRoom,
                     setup.tuner != nullptr ? "the model chooses" : "the table chooses",
                     tuning::transportKindName(tuner.transport));
        return setup;
      }()),
      failures_(
          [&] {
            FailureReporter::Setup setup = withRank(parts.failures, id_.rank, id_.size);
            setup.name = id_.name;
            setup.store = id_.store;
            setup.prefix = id_.prefix;
            setup.view = id_.view;
            return setup;
          }(),
          *transport_),
      runner_(
          [&] {
            CallRunner::Setup setup = parts.runner;
            if (id_.model)
              setup.messageRules = {id_.model->ringBlocksFrom, id_.model->pairAllReduceRingsUpTo};
            return setup;
          }(),
          *transport_, checker_, flat_.get()),
      p2p_(*transport_, planner_, runner_, failures_),
      queue_(*this, [&] {
        CallQueue::Setup setup = parts.queue;
        setup.timeout = id_.timeout;
        return setup;
      }()) {
  checker_.setConcurrentArrivals(!transport_->arrivalsOnCallingThreads());
  transport_->setCallChecker(&checker_);
}

CommImpl::~CommImpl() { (void)leave(); }

Status CommImpl::runNow(OpRequest& r, const CallOptions& options) {
  if (!planner_.recall(r)) TUTTI_RETURN_IF_ERROR(checkAnew(r));
  queue_.issue(r, options);
  return run(r, options.algorithm);
}

Status CommImpl::checkAnew(OpRequest& r) {
  CallCheck check = planner_.check(r);
  if (check.status.ok()) {
    planner_.remember(r);
    return Status::Ok();
  }
  // The peers taking part passed good arguments and would wait for this rank: failing the
  // communicator tells them now (the abort protocol), naming this rank and the reason.
  if (check.onlyHere) failures_.invalidArgument(r, check.status);
  return std::move(check.status);
}

Status CommImpl::agreeOnBuffers(OpRequest& r) {
  // A failed communicator refuses the call further on, without agreeing.
  if (!transport_->health().ok()) return Status::Ok();
  const CallDescriber what(r, "algorithm not chosen yet");
  ExecReport report;
  const Status status =
      flat_->agreeOnBuffers(r, *transport_->find<MappedBuffers>(), what, &report);
  if (status.ok()) return status;
  return failures_.failed(r, what, status, report, false);
}

Status CommImpl::learnContender(OpRequest& r, AlgorithmLearner::Shape& shape,
                                std::size_t* contender, bool* timed) {
  const AlgorithmLearner::Pick pick = AlgorithmLearner::choose(shape);
  *contender = pick.contender;
  *timed = pick.timed;
  if (!pick.decides) return Status::Ok();
  // A failed communicator refuses the call further on, without agreeing.
  if (!transport_->health().ok()) return Status::Ok();
  const AlgorithmLearner::Times mine = AlgorithmLearner::estimates(shape);
  const CallDescriber what(r, "algorithm not chosen yet");
  ExecReport report;
  AlgorithmLearner::Times sums{};
  auto add = [&sums](const std::int64_t* theirs) {
    for (std::size_t c = 0; c < sums.size(); ++c)
      sums[c] = sums[c] < 0 || theirs[c] < 0 ? -1 : sums[c] + theirs[c];
  };
  if (flat_ != nullptr && flat_->room() >= sizeof(mine)) {
    FlatStop stop;
    // Stamped as the buffers' agreement is: a message from a rank already past it is not
    // taken for a mismatch, whichever contender it runs.
    Status status =
        flat_->exchange(r, stampBeforeChoice(r.spec), mine.data(), sizeof(mine), &stop);
    if (!status.ok())
      return failures_.failed(r, what, flat_->failure(what, status, stop, &report), report, false);
    for (const char* view : flat_->views()) {
      AlgorithmLearner::Times theirs;
      std::memcpy(theirs.data(), view, sizeof(theirs));
      add(theirs.data());
    }
  } else {
    // Through the transport's messages: an all-gather of every rank's estimates, into a
    // buffer kept for the next decisions (its growth is a one-time cost: pool_growth.h).
    const std::size_t need = mine.size() * static_cast<std::size_t>(id_.size);
    if (learnTimes_.size() < need) {
      learnTimes_.resize(need);
      markOneTimeCost();
    }
    Status status = runner_.agree(r, mine.data(), mine.size(), learnTimes_.data(), what, &report);
    if (!status.ok()) return failures_.failed(r, what, status, report, false);
    for (int q = 0; q < id_.size; ++q)
      add(learnTimes_.data() + static_cast<std::size_t>(q) * mine.size());
  }
  bool changed = false;
  *contender = AlgorithmLearner::decide(shape, sums, &changed);
  if (changed && id_.rank == 0 && log::enabled(log::Level::kInfo, log::kTune)) {
    std::string times;
    for (std::size_t c = 0; c < shape.names().size(); ++c)
      times += strFormat("%s%s %.1f us", c == 0 ? "" : ", ", shape.names()[c].c_str(),
                         sums[c] < 0 ? -1.0 : static_cast<double>(sums[c]) / 1e3 / id_.size);
    TUTTI_INFO(kTune, "%s %llu x %s on %d ranks: measured %s (mean over the ranks); keeps %s",
               collectiveName(r.spec.kind), static_cast<unsigned long long>(r.spec.count),
               dataTypeName(r.spec.dtype), id_.size, times.c_str(),
               shape.names()[*contender].c_str());
  }
  return Status::Ok();
}

Status CommImpl::run(OpRequest& r, std::string_view requested) {
  // The same decision on every rank: the call's shape, then what the ranks agreed on.
  r.spec.sharedBuffers = false;
  if (flat_ != nullptr && planner_.needsBuffers(r.spec)) TUTTI_RETURN_IF_ERROR(agreeOnBuffers(r));
  // Where the shape learns which of the model's contenders runs fastest, the contender this
  // call runs, as if forced.
  AlgorithmLearner::Shape* learning = requested.empty() ? planner_.learning(r) : nullptr;
  bool timed = false;
  if (learning != nullptr) {
    std::size_t contender = 0;
    TUTTI_RETURN_IF_ERROR(learnContender(r, *learning, &contender, &timed));
    requested = learning->names()[contender];
  }
  const CallPlan* plan = planner_.planned(r, requested);
  if (plan == nullptr) {
    Status error;
    plan = planner_.plan(r, requested, &error);
    if (plan == nullptr) return error;
  }
  const char* name = plan->algorithm->name;
  const CallDescriber what(r, name);
  const FlightRecorder::Handle op = failures_.recorder().begin(summarize(r, name), r.issued);
  ExecReport report;
  const Status health = transport_->health();
  const bool refused = !health.ok();
  const auto start = timed ? std::chrono::steady_clock::now()
                           : std::chrono::steady_clock::time_point{};
  Status status = refused ? failures_.refusal(what, health) : runner_.run(r, *plan, what, &report);
  // A call whose messages tried a way their learner does not keep is not the contender's
  // time: such calls come in a shape's first calls of each algorithm, and can take several
  // times as long (a 64 MiB Rabenseifner on 4 ranks, 146 ms after 2 calls, 44 ms after 16).
  if (timed && status.ok() && !runner_.triedAnotherWay())
    AlgorithmLearner::record(*learning, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - start).count());
  failures_.recorder().end(op, status.code());
  if (status.ok()) return status;
  return failures_.failed(r, what, status, report, refused);
}

Result<std::unique_ptr<CommImpl>> CommImpl::split(int color, int key, const CommOptions& options) {
  // Everyone learns everyone's (color, key) through this communicator's own allgather.
  const auto n = static_cast<std::size_t>(id_.size);
  std::vector<std::int64_t> mine = {color, key};
  std::vector<std::int64_t> all(2 * n);
  OpRequest gather;
  gather.spec.kind = Collective::kAllGather;
  gather.spec.count = 2;
  gather.spec.dtype = DataType::kInt64;
  gather.input = mine.data();
  gather.output = all.data();
  TUTTI_RETURN_IF_ERROR(runBlocking(std::move(gather), CallOptions{}));
  const std::uint64_t seq = id_.splits++;
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
    if (members[i].second == id_.rank) newRank = static_cast<int>(i);
  }
  InitParams params;
  params.store = id_.store;
  params.rank = newRank;
  params.size = static_cast<int>(members.size());
  params.options = options;
  // Unique per (parent, split, color), so the groups' store keys never meet.
  const std::string base = options.name == CommOptions{}.name ? id_.name : options.name;
  params.options.name = strFormat("%s.%llu.%d", base.c_str(), static_cast<unsigned long long>(seq), color);
  if (!options.timeout) params.options.timeout = id_.timeout;
  if (options.transport.empty()) params.options.transport = id_.transportChoice;
  if (options.asyncProgress.empty()) params.options.asyncProgress = id_.asyncProgress;
  params.bindHost = id_.bindHost;
  params.key = id_.key;
  params.localSize = std::min(id_.localSize, params.size);
  std::vector<int> parentRanks;  // the child's ranks in this communicator, in the child's order
  for (const auto& member : members) parentRanks.push_back(member.second);
  params.view = std::make_shared<const topo::View>(topo::subView(*id_.view, parentRanks));
  params.model = id_.model;
  return create(std::move(params));
}

}  // namespace tutti::detail
