#include "transport/tcp/establish.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "base/log.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"
#include "transport/tcp/wire.h"

namespace tutti::tcp {
namespace {

// A connecting stranger gets this long to present its HELLO before it is dropped, so a
// silent connection cannot stall establishment for long.
constexpr double kHelloTimeoutSec = 5.0;

Status sendHello(int fd, std::uint64_t uid, int rank, int size, Deadline deadline) {
  auto header = encodeHeader(FrameHeader{FrameType::kHello, 0, kHelloBytes, 0, {}});
  auto hello = encodeHello(Hello{uid, static_cast<std::uint32_t>(rank),
                                 static_cast<std::uint32_t>(size)});
  TUTTI_RETURN_IF_ERROR(writeFull(fd, header.data(), header.size(), deadline));
  return writeFull(fd, hello.data(), hello.size(), deadline);
}

Result<Hello> readHello(int fd, const std::string& who, Deadline deadline) {
  HeaderBytes header{};
  TUTTI_RETURN_IF_ERROR(readFull(fd, header.data(), header.size(), deadline));
  TUTTI_ASSIGN_OR_RETURN(FrameHeader h, decodeHeader(header.data(), who));
  if (h.type != FrameType::kHello)
    return Status(ErrorCode::kProtocolError, who + " did not start with a hello frame");
  std::array<std::uint8_t, kHelloBytes> payload{};
  TUTTI_RETURN_IF_ERROR(readFull(fd, payload.data(), payload.size(), deadline));
  return decodeHello(payload.data(), payload.size(), who);
}

Result<std::vector<HostPort>> exchangeAddresses(Store& store, const std::string& prefix, int rank,
                                                int size, const std::string& myAddress,
                                                Deadline deadline) {
  TUTTI_RETURN_IF_ERROR(store.set(prefix + "addr/" + std::to_string(rank),
                                  std::vector<std::uint8_t>(myAddress.begin(), myAddress.end())));
  std::vector<HostPort> addresses(static_cast<std::size_t>(size));
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    auto value = store.get(prefix + "addr/" + std::to_string(peer), deadline);
    if (!value.ok())
      return value.status().withContext(
          strFormat("rank %d never published its address (did it start?)", peer));
    std::string text(value->begin(), value->end());
    TUTTI_ASSIGN_OR_RETURN(addresses[static_cast<std::size_t>(peer)], parseHostPort(text));
  }
  return addresses;
}

// Phase 2: accept one connection per higher rank, validating each HELLO.
Status acceptHigherRanks(int listenFd, int rank, int size, std::uint64_t uid, MeshSockets& mesh,
                         Deadline deadline) {
  int missing = size - 1 - rank;
  while (missing > 0) {
    pollfd pfd{listenFd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, deadline.pollTimeoutMs());
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return systemError("poll", errno, "listener");
    if (rc == 0) {
      std::string ranks;
      for (int p = rank + 1; p < size; ++p) {
        if (!mesh.sockets[static_cast<std::size_t>(p)].valid()) ranks += " " + std::to_string(p);
      }
      return Status(ErrorCode::kTimeout,
                    "timed out waiting for connections from ranks" + ranks);
    }
    TUTTI_ASSIGN_OR_RETURN(UniqueFd fd, acceptTcp(listenFd));
    if (!fd.valid()) continue;
    auto from = peerAddress(fd.get());
    std::string who = from.ok() ? from->toString() : std::string("unknown address");
    Deadline helloDeadline =
        Deadline::earliest(deadline, Deadline::afterSeconds(kHelloTimeoutSec));
    Result<Hello> hello = readHello(fd.get(), "connection from " + who, helloDeadline);
    std::string problem;
    if (!hello.ok()) problem = hello.status().toString();
    else if (hello->commUid != uid) problem = "it belongs to another communicator or job";
    else if (hello->size != static_cast<std::uint32_t>(size))
      problem = strFormat("it claims a world of %u ranks, this one has %d", hello->size, size);
    else if (hello->rank <= static_cast<std::uint32_t>(rank) ||
             hello->rank >= static_cast<std::uint32_t>(size))
      problem = strFormat("it claims rank %u, which should not connect to rank %d", hello->rank,
                          rank);
    else if (mesh.sockets[hello->rank].valid())
      problem = strFormat("rank %u is already connected", hello->rank);
    if (!problem.empty()) {
      TUTTI_WARN(kTcp, "refused connection from %s: %s", who.c_str(), problem.c_str());
      continue;
    }
    TUTTI_RETURN_IF_ERROR(sendHello(fd.get(), uid, rank, size, deadline));
    mesh.names[hello->rank] = strFormat("rank %u (%s)", hello->rank, who.c_str());
    mesh.sockets[hello->rank] = std::move(fd);
    --missing;
  }
  return Status::Ok();
}

}  // namespace

Result<MeshSockets> establishMesh(Store& store, const std::string& keyPrefix, int rank, int size,
                                  std::uint64_t commUid, const std::string& bindHost,
                                  Deadline deadline) {
  MeshSockets mesh;
  mesh.sockets.resize(static_cast<std::size_t>(size));
  mesh.names.resize(static_cast<std::size_t>(size));
  if (size == 1) return mesh;
  TUTTI_ASSIGN_OR_RETURN(UniqueFd listener, listenTcp(bindHost, 0, std::max(size, 128)));
  TUTTI_ASSIGN_OR_RETURN(HostPort bound, localAddress(listener.get()));
  bound.host = bindHost;
  TUTTI_ASSIGN_OR_RETURN(
      std::vector<HostPort> addresses,
      exchangeAddresses(store, keyPrefix, rank, size, bound.toString(), deadline));
  TUTTI_DEBUG(kTcp, "rank %d listening on %s", rank, bound.toString().c_str());

  // Phase 1: connect to lower ranks and send our HELLO (their answer is read in phase 3).
  for (int peer = 0; peer < rank; ++peer) {
    const HostPort& target = addresses[static_cast<std::size_t>(peer)];
    auto fd = connectTcp(target, deadline);
    if (!fd.ok())
      return fd.status().withContext(strFormat("connecting to rank %d at %s", peer,
                                               target.toString().c_str()));
    TUTTI_RETURN_IF_ERROR(sendHello(fd->get(), commUid, rank, size, deadline));
    mesh.names[static_cast<std::size_t>(peer)] =
        strFormat("rank %d (%s)", peer, target.toString().c_str());
    mesh.sockets[static_cast<std::size_t>(peer)] = std::move(fd).value();
  }
  // Phase 2: accept the higher ranks.
  TUTTI_RETURN_IF_ERROR(acceptHigherRanks(listener.get(), rank, size, commUid, mesh, deadline));
  // Phase 3: the lower ranks' answers prove we reached the right processes.
  for (int peer = 0; peer < rank; ++peer) {
    const std::string& who = mesh.names[static_cast<std::size_t>(peer)];
    auto hello = readHello(mesh.sockets[static_cast<std::size_t>(peer)].get(), who, deadline);
    if (!hello.ok()) return hello.status().withContext("waiting for the answer of " + who);
    if (hello->commUid != commUid || hello->rank != static_cast<std::uint32_t>(peer) ||
        hello->size != static_cast<std::uint32_t>(size))
      return Status(ErrorCode::kProtocolError,
                    strFormat("%s answered as rank %u of %u with another communicator id: a "
                              "stale address in the store?",
                              who.c_str(), hello->rank, hello->size),
                    peer);
  }
  return mesh;
}

}  // namespace tutti::tcp
