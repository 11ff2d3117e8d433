#include "core/transport_factory.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "base/cpus.h"
#include "base/host_props.h"
#include "base/log.h"
#include "base/net.h"
#include "base/macros.h"
#include "base/strings.h"
#include "base/wait.h"
#include "bootstrap/bounded_store.h"
#include "core/message_ways.h"
#include "topology/host_identity.h"
#include "transport/hybrid/hybrid_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::detail {
namespace {

using Request = TransportFactory::Request;

// Whether this machine's ranks have a core each, and two each, where no shared-memory
// transport joined them (TUTTI_TRANSPORT=tcp): every rank publishes its machine and affinity
// mask, reads every rank's, and matches this machine's ranks to CPUs as ShmTransport does.
// A rank bound to one core (mpirun --bind-to core) would otherwise compare the launcher's
// ranks per host with the one CPU of its own mask, read as oversubscribed and never spin.
// The machine (topo::machineIdentity()), not the host: ranks in other network namespaces
// on it run on the same CPUs.
Result<std::pair<bool, bool>> machineCoresOverStore(const Request& q) {
  const std::string machine = topo::machineIdentity();
  const std::vector<int> cpus = allowedCpuList();
  const std::string mine = machine + " " + formatMaskField(cpus);
  TUTTI_RETURN_IF_ERROR(setBefore(*q.store, q.prefix + "host/" + std::to_string(q.rank),
                                  std::vector<std::uint8_t>(mine.begin(), mine.end()),
                                  q.deadline));
  std::vector<std::vector<int>> machineMasks;  // this machine's ranks', this one's included
  for (int r = 0; r < q.size; ++r) {
    auto raw = q.store->get(q.prefix + "host/" + std::to_string(r), q.deadline);
    if (!raw.ok())
      return raw.status().withContext(strFormat("waiting for rank %d's host and CPUs", r));
    const std::string text(raw->begin(), raw->end());
    const std::size_t space = text.rfind(' ');
    const std::optional<std::vector<int>> mask =
        space == std::string::npos ? std::nullopt
                                   : parseMaskField(std::string_view(text).substr(space + 1));
    if (!mask)
      return Status(ErrorCode::kProtocolError,
                    strFormat("rank %d published a malformed host and CPU list '%s'", r,
                              text.c_str()));
    if (std::string_view(text).substr(0, space) == machine) machineMasks.push_back(*mask);
  }
  return std::make_pair(eachRankHasCores(machineMasks, 1, quotaCores()),
                        eachRankHasCores(machineMasks, 2, quotaCores()));
}

Result<std::unique_ptr<shm::ShmTransport>> createShm(const Request& q,
                                                     shm::ShmTransport::Options options) {
  options.rank = q.rank;
  options.size = q.size;
  options.commUid = q.uid;
  options.learnsPath = q.learnsPath;
  if (q.copy != nullptr) options.copy = q.copy;
  if (q.copyTwo != nullptr) options.copyTwo = q.copyTwo;
  options.deadline = q.deadline;
  options.requireAll = q.choice == "shm";
  return shm::ShmTransport::create(*q.store, q.prefix, options);
}

// The address this rank's TCP listener binds and publishes. TUTTI_BIND_ADDR is the user's
// explicit choice and wins, then TUTTI_SOCKET_IFNAME's interface, over the interface that
// happens to reach the store; the listener binds that one address only.
Result<std::string> tcpBindHost(const Request& q, const Config& config) {
  if (!config.bindAddr.empty()) return config.bindAddr;
  if (!config.socketIfname.empty()) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<NetInterface> interfaces, listInterfaces());
    return chooseInterfaceAddress(config.socketIfname, interfaces);
  }
  return !q.bindHost.empty() ? q.bindHost : std::string("127.0.0.1");
}

Result<std::unique_ptr<tcp::TcpTransport>> createTcp(const Request& q, const Config& config) {
  tcp::TcpTransport::Options options;
  options.rank = q.rank;
  options.size = q.size;
  options.commUid = q.uid;
  TUTTI_ASSIGN_OR_RETURN(options.bindHost, tcpBindHost(q, config));
  if (config.tcpStreams != "auto") {
    const std::optional<std::int64_t> streams = parseInt(config.tcpStreams);
    if (!streams || *streams < 1 || *streams > tcp::kMaxStreams)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("TUTTI_TCP_STREAMS='%s' is not auto or a count from 1 to %d",
                              config.tcpStreams.c_str(), tcp::kMaxStreams));
    options.streams = static_cast<int>(*streams);
  }
  if (config.socketBufferBytes != "auto")
    options.socketBufferBytes = parseBytes(config.socketBufferBytes).value_or(0);
  options.key = q.key;
  TUTTI_ASSIGN_OR_RETURN(options.authTimeout, auth::authTimeout(config));
  if (q.size > 1)
    auth::warnIfUnauthenticated(q.key, "this rank's TCP listener on " + options.bindHost);
  options.maxUnexpectedBytes = config.tcpMaxUnexpected;
  options.deadline = q.deadline;
  return tcp::TcpTransport::create(*q.store, q.prefix, options);
}

// Every peer over shared memory: the ranks agree on how large messages travel.
Result<TransportSetup> allShared(const Request& q, std::unique_ptr<shm::ShmTransport> shm) {
  if (q.size > 1)
    TUTTI_RETURN_IF_ERROR(agreeOnMessagePath(*q.store, q.prefix, q.rank, q.size, q.learnsPath,
                                             shm->directFrom(), shm->streamedFrom(),
                                             q.deadline));
  TransportSetup setup;
  setup.sharedMemory = true;
  setup.coreEach = shm->coreEach();
  setup.twoCoresEach = shm->twoCoresEach();
  setup.ringSegmentBytes = std::max<std::uint64_t>(
      shm->ringBytes() / oneHostRingShare(shm->hostKernelCopyRatio()), 4096);
  setup.transport = std::move(shm);
  TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, peers reached over shared memory",
             q.name.c_str(), q.rank, q.size);
  return setup;
}

// TCP to the ranks that `local` (the host's shared memory, or null) does not reach.
Result<TransportSetup> overTcp(const Request& q, const Config& config,
                               std::unique_ptr<shm::ShmTransport> local,
                               std::optional<std::pair<bool, bool>> cores) {
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<tcp::TcpTransport> tcp, createTcp(q, config));
  TransportSetup setup;
  TUTTI_ASSIGN_OR_RETURN(setup.bindHost, tcpBindHost(q, config));
  if (local) cores = std::make_pair(local->coreEach(), local->twoCoresEach());
  // Without a word from the host's ranks, the launcher's ranks per host against the cores.
  setup.coreEach = cores ? cores->first : q.localSize <= usableCores();
  setup.twoCoresEach = cores ? cores->second : 2 * q.localSize <= usableCores();
  if (local) {
    const std::size_t peers = local->localPeers();
    setup.transport = std::make_unique<HybridTransport>(std::move(local), std::move(tcp));
    TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, %zu peers over shared memory, "
               "the others over TCP from %s", q.name.c_str(), q.rank, q.size, peers,
               setup.bindHost.c_str());
    return setup;
  }
  setup.transport = std::move(tcp);
  TUTTI_INFO(kInit, "communicator '%s': rank %d of %d ready, peers reached over TCP from %s",
             q.name.c_str(), q.rank, q.size, setup.bindHost.c_str());
  return setup;
}

}  // namespace

Result<TransportSetup> TransportFactory::build(const Request& q, const Config& config) {
  const std::string where =
      strFormat("creating communicator '%s' (rank %d of %d)", q.name.c_str(), q.rank, q.size);
  std::optional<std::pair<bool, bool>> cores;
  std::unique_ptr<shm::ShmTransport> local;
  if (q.choice == "tcp" && q.size > 1) {
    auto found = machineCoresOverStore(q);
    if (!found.ok()) return found.status().withContext(where);
    cores = *found;
    TUTTI_INFO(kInit, "rank %d: TCP only, %s", q.rank,
               found->second ? "two cores for each rank"
               : found->first ? "a core for each rank"
                              : "more ranks than cores");
  }
  if (q.choice != "tcp") {
    auto shm = createShm(q, shm::ShmTransport::optionsFrom(config));
    if (shm.ok() && (*shm)->localPeers() + 1 == static_cast<std::size_t>(q.size)) {
      auto setup = allShared(q, std::move(shm).value());
      if (!setup.ok()) return setup.status().withContext(where);
      return setup;
    }
    // Each pair of ranks reaches the same verdict (shm_transport.h): a rank without shared
    // memory is reached over TCP by all. A rank that never came, or a store gone, fails
    // TCP's setup alike (it meets the same store, by the same deadline): that is the error.
    if (shm.ok()) local = std::move(shm).value();
    else if (q.choice == "shm") return shm.status().withContext(where + " with TUTTI_TRANSPORT=shm");
    else if (shm.status().code() == ErrorCode::kTimeout ||
             shm.status().code() == ErrorCode::kPeerFailure)
      return shm.status().withContext(where);
    else TUTTI_INFO(kInit, "shared memory not used: %s", shm.status().message().c_str());
  }
  auto setup = overTcp(q, config, std::move(local), cores);
  if (!setup.ok()) return setup.status().withContext(where);
  return setup;
}

}  // namespace tutti::detail
