// Establishing the mesh: listen, publish, connect down, then one poll loop that runs every
// handshake at once, in both directions.
//
// Why one loop rather than a handshake per connection in turn: a rank answers challenges
// only once it is in its accepting phase, so handshaking with lower ranks one at a time
// would make each rank wait for every lower rank's own handshakes, a chain whose length
// grows with the square of the world size. In the loop, this rank answers the challenges
// of the lower ranks and challenges the higher ones as the bytes arrive, so no rank waits
// on another's progress beyond a round trip.

#include "transport/tcp/establish.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "base/assert.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/bounded_store.h"
#include "transport/tcp/wire.h"

namespace tutti::tcp {
namespace {

// An authenticated connection gets this long to present its HELLO, so that a peer holding
// the key but stuck cannot stall establishment for long.
constexpr double kHelloTimeoutSec = 5.0;
// How much of a hung-up peer's queued bytes are searched for its ABORT frame.
constexpr std::size_t kHangUpPeekBytes = 256 << 10;
// Connections accepted per wake-up of the listener, so that one burst cannot starve the
// handshakes already under way.
constexpr int kMaxAcceptsPerWake = 16;
// How long a timed-out establishment may spend asking the store which missing ranks
// published an address, for its message.
constexpr double kStoreLookupSec = 1.0;

Status sendHello(int fd, std::uint64_t uid, int rank, int size, int stream, int streams,
                 Deadline deadline) {
  auto header = encodeHeader(FrameHeader{FrameType::kHello, 0, kHelloBytes, 0, {}});
  auto hello = encodeHello(Hello{uid, static_cast<std::uint32_t>(rank),
                                 static_cast<std::uint32_t>(size),
                                 static_cast<std::uint32_t>(stream),
                                 static_cast<std::uint32_t>(streams)});
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

// Publishes this rank's address and reads those of the lower ranks, the only ones it
// connects to. It does not wait for the higher ranks: they come to its listener, which
// starts accepting (and challenging) as soon as this returns.
Result<std::vector<PublishedAddress>> exchangeAddresses(Store& store, const std::string& prefix,
                                                        int rank, int size, const HostPort& mine,
                                                        int streams, Deadline deadline) {
  const std::string published = formatPublishedAddress(PublishedAddress{mine, streams});
  TUTTI_RETURN_IF_ERROR(detail::setBefore(
      store, prefix + "addr/" + std::to_string(rank),
      std::vector<std::uint8_t>(published.begin(), published.end()), deadline));
  std::vector<PublishedAddress> addresses(static_cast<std::size_t>(size));
  for (int peer = 0; peer < rank; ++peer) {
    auto value = store.get(prefix + "addr/" + std::to_string(peer), deadline);
    if (!value.ok())
      return value.status().withContext(
          strFormat("rank %d never published its address (did it start?)", peer));
    auto parsed = parsePublishedAddress(std::string(value->begin(), value->end()));
    if (!parsed.ok()) return parsed.status().withContext(strFormat("rank %d's address", peer));
    addresses[static_cast<std::size_t>(peer)] = std::move(parsed).value();
  }
  return addresses;
}

bool isLoopbackHost(const std::string& host) {
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "localhost";
}

// Our connection to one lower rank (one of the pair's streams), from connect to the HELLO
// we send on it.
struct Outgoing {
  int peer = 0;
  int stream = 0;
  int streams = 1;
  HostPort target;
  UniqueFd fd;
  std::optional<auth::HandshakeClient> handshake;
  // The peer's TUTTI_TCP_STREAMS differs from ours: only stream 0 is dialled, so that the
  // peer learns it from our HELLO, and this fails once that is sent.
  Status mismatch;
  bool done = false;  // authenticated and our HELLO sent
};

// Phases 1 to 3 of one rank's establishment (tcp_transport.h).
class MeshBuilder {
 public:
  MeshBuilder(const MeshParams& params, Store& store, const std::string& prefix, int listenFd,
              const std::string& listenerName, std::vector<PublishedAddress> addresses,
              Deadline deadline)
      : p_(params),
        store_(store),
        prefix_(prefix),
        listenFd_(listenFd),
        addresses_(std::move(addresses)),
        deadline_(deadline),
        gate_(*params.key, auth::Context::peerLink(params.commUid, params.rank, params.size),
              params.authTimeout, listenerName, log::kTcp) {
    mesh_.sockets.resize(static_cast<std::size_t>(p_.size));
    mesh_.extra.resize(static_cast<std::size_t>(p_.size));
    mesh_.names.resize(static_cast<std::size_t>(p_.size));
    peerStreams_.resize(static_cast<std::size_t>(p_.size), 0);
    quiet_.resize(static_cast<std::size_t>(p_.size), false);
    missing_ = p_.size - 1 - p_.rank;
  }

  Result<MeshSockets> run();

 private:
  // Phase 1: connects to every lower rank (the kernel completes it from the backlog).
  Status connectDown();
  // (Re)connects to one lower rank and starts a handshake with a fresh nonce.
  Status dial(Outgoing& out);
  // Phase 2: every handshake, both directions, until all are done.
  Status handshakeAll();
  void acceptNew();
  // A connection to our listener authenticated: check its HELLO and answer it.
  Status onAuthenticated(int slot);
  Status onOutgoing(Outgoing& out);
  // A connected peer hung up while others are still missing: the failure its ABORT frame
  // reports when that blames a rank still missing (which will never come); nothing when it
  // said goodbye (CLOSE), blamed a connected rank or died without a word.
  Status onHangUp(int peer);
  // Whether `rank` is one this rank still waits to connect with (or is unknown, < 0).
  bool waitsFor(int rank) const;
  // Whether every stream of `peer` is connected.
  bool connected(int peer) const;
  // Stores the socket of one of a peer's streams.
  void place(int peer, int stream, UniqueFd fd);
  Status timeoutError() const;
  // Phase 3: the lower ranks' answers prove we reached the right processes.
  Status readAnswers();

  const MeshParams& p_;
  Store& store_;
  const std::string& prefix_;
  const int listenFd_;
  const std::vector<PublishedAddress> addresses_;
  const Deadline deadline_;
  auth::HandshakeGate gate_;
  MeshSockets mesh_;
  std::vector<Outgoing> outgoing_;
  // Per peer: its CLOSE, or an ABORT blaming a connected rank, was seen; not watched any more.
  std::vector<bool> quiet_;
  // Per peer: how many streams the pair has (0: not known yet, a higher rank's first HELLO
  // tells).
  std::vector<int> peerStreams_;
  int missing_ = 0;         // higher ranks not yet connected
  int outgoingLeft_ = 0;    // lower ranks not yet authenticated
};

Result<MeshSockets> MeshBuilder::run() {
  TUTTI_RETURN_IF_ERROR(connectDown());
  TUTTI_RETURN_IF_ERROR(handshakeAll());
  TUTTI_RETURN_IF_ERROR(readAnswers());
  return std::move(mesh_);
}

Status MeshBuilder::connectDown() {
  for (int peer = 0; peer < p_.rank; ++peer) {
    const PublishedAddress& address = addresses_[static_cast<std::size_t>(peer)];
    Status mismatch;
    int streams =
        pairStreams(p_.streams, address.streams, p_.bindHost, address.address.host, p_.size);
    if (p_.streams > 0 && address.streams > 0 && p_.streams != address.streams) {
      mismatch = Status(ErrorCode::kInvalidArgument,
                        strFormat("rank %d runs with TUTTI_TCP_STREAMS=%d and this rank with %d: "
                                  "every rank needs the same setting",
                                  peer, address.streams, p_.streams),
                        peer);
      streams = 1;
    }
    peerStreams_[static_cast<std::size_t>(peer)] = streams;
    for (int stream = 0; stream < streams; ++stream) {
      Outgoing out;
      out.peer = peer;
      out.stream = stream;
      out.streams = mismatch.ok() ? streams : p_.streams;
      out.target = address.address;
      out.mismatch = mismatch;
      outgoing_.push_back(std::move(out));
    }
  }
  for (Outgoing& out : outgoing_) TUTTI_RETURN_IF_ERROR(dial(out));
  outgoingLeft_ = static_cast<int>(outgoing_.size());
  return Status::Ok();
}

Status MeshBuilder::dial(Outgoing& out) {
  out.handshake.reset();
  auto fd = connectTcp(out.target, deadline_);
  if (!fd.ok())
    return fd.status().withContext(
        strFormat("connecting to rank %d at %s", out.peer, out.target.toString().c_str()));
  out.fd = std::move(fd).value();
  const auth::Context context = auth::Context::peerLink(p_.commUid, out.peer, p_.size);
  TUTTI_ASSIGN_OR_RETURN(auth::HandshakeClient hs,
                         auth::HandshakeClient::create(out.fd.get(), *p_.key, context));
  out.handshake.emplace(hs);
  return Status::Ok();
}

Status MeshBuilder::handshakeAll() {
  std::vector<pollfd> fds;
  std::vector<int> owners;  // per pollfd: -1 listener, slot index, or -2 - lower rank
  while (missing_ > 0 || outgoingLeft_ > 0) {
    gate_.expire();
    fds.clear();
    owners.clear();
    // The listener is watched only while the gate has room: when every slot holds a young
    // stranger, newcomers wait in the backlog and the poll wakes at gate_.nextDue() instead
    // of spinning on a listener that stays readable.
    if (missing_ > 0 && gate_.makeRoom()) {
      fds.push_back(pollfd{listenFd_, POLLIN, 0});
      owners.push_back(-1);
    }
    for (int slot = 0; slot < auth::HandshakeGate::slots(); ++slot) {
      if (gate_.fd(slot) < 0) continue;
      fds.push_back(pollfd{gate_.fd(slot), POLLIN, 0});
      owners.push_back(slot);
    }
    const int outgoingCount = static_cast<int>(outgoing_.size());
    for (int i = 0; i < outgoingCount; ++i) {
      if (outgoing_[static_cast<std::size_t>(i)].done) continue;
      fds.push_back(pollfd{outgoing_[static_cast<std::size_t>(i)].fd.get(), POLLIN, 0});
      owners.push_back(-2 - i);
    }
    // Connections already made: a peer whose communicator failed blaming a rank this one
    // still waits for (that rank died) ends the wait with that reason rather than at the
    // deadline. Only hang-ups wake the poll (POLLRDHUP): frames a peer whose mesh is
    // complete sends early stay for the transport.
    for (int peer = 0; peer < p_.size; ++peer) {
      const UniqueFd& fd = mesh_.sockets[static_cast<std::size_t>(peer)];
      if (!fd.valid() || quiet_[static_cast<std::size_t>(peer)]) continue;
      fds.push_back(pollfd{fd.get(), POLLRDHUP, 0});
      owners.push_back(-2 - outgoingCount - peer);
    }
    // Woken by bytes, or in time to expire or evict a pending connection.
    const Deadline wake = Deadline::earliest(deadline_, gate_.nextDue());
    int rc = ::poll(fds.data(), fds.size(), wake.pollTimeoutMs());
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return systemError("poll", errno, "establishing connections");
    if (rc == 0 && deadline_.expired()) return timeoutError();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int owner = owners[i];
      if (owner == -1) {
        acceptNew();
      } else if (owner >= 0) {
        if (gate_.onReadable(owner) == auth::HandshakeGate::Progress::kAccepted)
          TUTTI_RETURN_IF_ERROR(onAuthenticated(owner));
      } else if (owner >= -1 - outgoingCount) {
        TUTTI_RETURN_IF_ERROR(onOutgoing(outgoing_[static_cast<std::size_t>(-2 - owner)]));
      } else {
        TUTTI_RETURN_IF_ERROR(onHangUp(-2 - outgoingCount - owner));
      }
    }
  }
  return Status::Ok();
}

void MeshBuilder::acceptNew() {
  for (int i = 0; i < kMaxAcceptsPerWake && gate_.makeRoom(); ++i) {
    Result<UniqueFd> fd = acceptTcp(listenFd_);
    if (!fd.ok()) {
      // Out of descriptors, say: the connection stays in the backlog for the next round.
      TUTTI_WARN(kTcp, "rank %d: %s", p_.rank, fd.status().toString().c_str());
      return;
    }
    if (!fd->valid()) return;  // nothing more pending
    gate_.admit(std::move(fd).value());
  }
}

Status MeshBuilder::onAuthenticated(int slot) {
  std::string who;
  UniqueFd fd = gate_.release(slot, &who);
  // The peer holds the job key, so it is one of ours: its HELLO follows the verdict at
  // once, and reading it here (bounded) keeps the loop simple. A stranger never gets here.
  Deadline helloDeadline = Deadline::earliest(deadline_, Deadline::afterSeconds(kHelloTimeoutSec));
  Result<Hello> hello = readHello(fd.get(), "connection from " + who, helloDeadline);
  const auto rank = static_cast<std::uint32_t>(p_.rank);
  const auto size = static_cast<std::uint32_t>(p_.size);
  std::string problem;
  if (!hello.ok()) problem = hello.status().toString();
  else if (hello->commUid != p_.commUid) problem = "it belongs to another communicator or job";
  else if (hello->size != size)
    problem = strFormat("it claims a world of %u ranks, this one has %u", hello->size, size);
  else if (hello->rank <= rank || hello->rank >= size)
    problem = strFormat("it claims rank %u, which should not connect to rank %u", hello->rank, rank);
  else if (connected(static_cast<int>(hello->rank)))
    problem = strFormat("rank %u is already connected", hello->rank);
  else if (peerStreams_[hello->rank] != 0 &&
           peerStreams_[hello->rank] != static_cast<int>(hello->streams))
    problem = strFormat("it claims %u streams, rank %u's earlier connections %d", hello->streams,
                        hello->rank, peerStreams_[hello->rank]);
  else if ((hello->stream == 0 ? mesh_.sockets[hello->rank].valid()
                               : mesh_.extra[hello->rank].size() >= hello->stream &&
                                     mesh_.extra[hello->rank][hello->stream - 1].valid()))
    problem = strFormat("stream %u of rank %u is already connected", hello->stream, hello->rank);
  if (!problem.empty()) {
    TUTTI_WARN(kTcp, "rank %d refused connection from %s: %s", p_.rank, who.c_str(),
               problem.c_str());
    return Status::Ok();  // `fd` closes it
  }
  // A rank of this job set up otherwise: both ends fail, each saying why.
  if (p_.streams > 0 && static_cast<int>(hello->streams) != p_.streams)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("rank %u runs with TUTTI_TCP_STREAMS=%u and this rank with %d: every "
                            "rank needs the same setting",
                            hello->rank, hello->streams, p_.streams),
                  static_cast<int>(hello->rank));
  if (Status answered = sendHello(fd.get(), p_.commUid, p_.rank, p_.size,
                                  static_cast<int>(hello->stream),
                                  static_cast<int>(hello->streams), deadline_);
      !answered.ok())
    return Status(answered.code(),
                  strFormat("answering the HELLO of rank %u (%s): %s", hello->rank, who.c_str(),
                            answered.message().c_str()),
                  static_cast<int>(hello->rank));
  const int peer = static_cast<int>(hello->rank);
  peerStreams_[hello->rank] = static_cast<int>(hello->streams);
  if (hello->stream == 0) mesh_.names[hello->rank] = strFormat("rank %u (%s)", hello->rank, who.c_str());
  place(peer, static_cast<int>(hello->stream), std::move(fd));
  if (connected(peer)) --missing_;
  return Status::Ok();
}

void MeshBuilder::place(int peer, int stream, UniqueFd fd) {
  const auto at = static_cast<std::size_t>(peer);
  if (stream == 0) {
    mesh_.sockets[at] = std::move(fd);
    return;
  }
  auto& extra = mesh_.extra[at];
  extra.resize(static_cast<std::size_t>(peerStreams_[at] - 1));
  extra[static_cast<std::size_t>(stream - 1)] = std::move(fd);
}

bool MeshBuilder::connected(int peer) const {
  const auto at = static_cast<std::size_t>(peer);
  if (!mesh_.sockets[at].valid() || peerStreams_[at] == 0) return false;
  const auto& extra = mesh_.extra[at];
  if (extra.size() + 1 != static_cast<std::size_t>(peerStreams_[at])) return false;
  return std::all_of(extra.begin(), extra.end(), [](const UniqueFd& fd) { return fd.valid(); });
}

// Advances our handshake with one lower rank; once it has accepted us and proved itself,
// sends our HELLO, whose answer readAnswers() checks.
Status MeshBuilder::onOutgoing(Outgoing& out) {
  const std::string who =
      out.stream == 0 ? strFormat("rank %d at %s", out.peer, out.target.toString().c_str())
                      : strFormat("rank %d at %s (stream %d)", out.peer,
                                  out.target.toString().c_str(), out.stream);
  Result<bool> done = out.handshake->onReadable();
  if (!done.ok() && done.status().code() == ErrorCode::kPeerFailure) {
    // Its handshake slots were all taken (a flood, or a burst of ranks): try again.
    TUTTI_DEBUG(kTcp, "rank %d: %s %s; connecting again", p_.rank, who.c_str(),
                done.status().message().c_str());
    return dial(out);
  }
  // A refusal, an impostor or garbage: final, and blamed on that rank.
  if (!done.ok())
    return Status(done.status().code(),
                  strFormat("authenticating with %s: %s", who.c_str(),
                            done.status().message().c_str()),
                  out.peer);
  if (!*done) return Status::Ok();
  TUTTI_RETURN_IF_ERROR(sendHello(out.fd.get(), p_.commUid, p_.rank, p_.size, out.stream,
                                  out.streams, deadline_));
  if (!out.mismatch.ok()) return out.mismatch;  // the peer has its reason: our HELLO
  mesh_.names[static_cast<std::size_t>(out.peer)] = strFormat("rank %d (%s)", out.peer,
                                                               out.target.toString().c_str());
  place(out.peer, out.stream, std::move(out.fd));
  out.done = true;
  --outgoingLeft_;
  return Status::Ok();
}

Status MeshBuilder::onHangUp(int peer) {
  const auto at = static_cast<std::size_t>(peer);
  const std::string& who = mesh_.names[at];
  // Everything the peer sent is still queued (an answer HELLO, frames of a mesh complete on
  // its side, last an ABORT or a CLOSE): read without consuming, it stays for the transport.
  std::vector<std::uint8_t> bytes(kHangUpPeekBytes);
  const ssize_t got = ::recv(mesh_.sockets[at].get(), bytes.data(), bytes.size(),
                             MSG_PEEK | MSG_DONTWAIT);
  const std::size_t have = got > 0 ? static_cast<std::size_t>(got) : 0;
  for (std::size_t pos = 0; pos + kHeaderBytes <= have;) {
    Result<FrameHeader> header = decodeHeader(bytes.data() + pos, who);
    if (!header.ok()) break;  // garbage: the transport words it if the mesh completes
    const std::size_t end = pos + kHeaderBytes + header->length;
    if (header->type == FrameType::kClose) {
      quiet_[at] = true;  // left in order: the transport sees the CLOSE too
      return Status::Ok();
    }
    if (header->type == FrameType::kAbort && end <= have) {
      Status reason = abortStatus(
          *header, std::string(bytes.begin() + static_cast<std::ptrdiff_t>(pos + kHeaderBytes),
                               bytes.begin() + static_cast<std::ptrdiff_t>(end)),
          peer, p_.size, who);
      TUTTI_INFO(kTcp, "rank %d: %s aborted while connections were being made: %s", p_.rank,
                 who.c_str(), reason.message().c_str());
      // Blaming a rank this one still waits for (it died, say): that rank will never come,
      // so the wait ends here. Blaming a rank already connected: the mesh can still
      // complete, and the communicator's first call fails with the ABORT, still queued.
      if (waitsFor(reason.peerRank())) return reason;
      quiet_[at] = true;
      return Status::Ok();
    }
    pos = end;
  }
  // Gone without a word (killed): the ranks still missing may yet come, so the mesh goes
  // on and the communicator's first call names the dead peer. Failing the creation here
  // would also fail, less clearly, the ranks still connecting to this one.
  TUTTI_INFO(kTcp, "rank %d: %s hung up while connections were being made", p_.rank, who.c_str());
  quiet_[at] = true;
  return Status::Ok();
}

bool MeshBuilder::waitsFor(int rank) const {
  return rank < 0 || rank >= p_.size || (rank != p_.rank && !connected(rank));
}

// Names every rank still missing, and why the latest stranger was refused: when a rank was
// given the wrong secret, that is the reason its peers never heard from it. A higher rank
// connects only once it has read the addresses of every rank below it, so one rank that
// never came keeps those above it away too: when some missing ranks never published an
// address, the message names them, the others apart as waiting.
Status MeshBuilder::timeoutError() const {
  std::string all;      // every rank still missing
  std::string absent;   // those of them that never published an address
  std::string waiting;  // the others
  // Set or not, the store answers at once (the deadline has passed); a store that fails,
  // or is slow to answer, leaves every missing rank named alike.
  bool known = true;
  const Deadline lookups = Deadline::afterSeconds(kStoreLookupSec);
  auto sort = [&](int p) {
    if (connected(p)) return;
    const std::string name = " " + std::to_string(p);
    all += name;
    if (p < p_.rank || !known) {  // a lower rank's address was read before connecting
      waiting += name;
      return;
    }
    auto address = store_.get(prefix_ + "addr/" + std::to_string(p), deadline_);
    known = (address.ok() || address.status().code() == ErrorCode::kTimeout) &&
            !lookups.expired();
    (address.ok() ? waiting : absent) += name;
  };
  for (int p = p_.rank + 1; p < p_.size; ++p) sort(p);
  for (int p = 0; p < p_.rank; ++p) sort(p);
  std::string ranks = all;
  if (known && !absent.empty() && !waiting.empty())
    ranks = absent + strFormat(", which never published an address (did they start?); ranks%s "
                               "joined but wait for them",
                               waiting.c_str());
  std::string refused;
  if (gate_.refusals() > 0)
    refused = strFormat("; refused %llu connection%s that did not authenticate, the latest from %s",
                        static_cast<unsigned long long>(gate_.refusals()),
                        gate_.refusals() == 1 ? "" : "s", gate_.lastRefusal().c_str());
  return Status(ErrorCode::kTimeout,
                "timed out waiting for authenticated connections with ranks" + ranks + refused);
}

Status MeshBuilder::readAnswers() {
  for (int peer = 0; peer < p_.rank; ++peer) {
    const auto at = static_cast<std::size_t>(peer);
    const std::string& who = mesh_.names[at];
    for (int stream = 0; stream < peerStreams_[at]; ++stream) {
      const int fd = stream == 0 ? mesh_.sockets[at].get()
                                 : mesh_.extra[at][static_cast<std::size_t>(stream - 1)].get();
      auto hello = readHello(fd, who, deadline_);
      if (!hello.ok()) return hello.status().withContext("waiting for the answer of " + who);
      if (hello->commUid != p_.commUid || hello->rank != static_cast<std::uint32_t>(peer) ||
          hello->size != static_cast<std::uint32_t>(p_.size) ||
          hello->stream != static_cast<std::uint32_t>(stream) ||
          hello->streams != static_cast<std::uint32_t>(peerStreams_[at]))
        return Status(ErrorCode::kProtocolError,
                      strFormat("%s answered as rank %u of %u (stream %u of %u) with another "
                                "communicator id: a stale address in the store?",
                                who.c_str(), hello->rank, hello->size, hello->stream,
                                hello->streams),
                      peer);
    }
  }
  return Status::Ok();
}

}  // namespace

std::string formatPublishedAddress(const PublishedAddress& published) {
  return published.address.toString() + "/" + std::to_string(published.streams);
}

Result<PublishedAddress> parsePublishedAddress(const std::string& text) {
  const std::size_t slash = text.rfind('/');
  std::optional<std::int64_t> streams;
  if (slash != std::string::npos) streams = parseInt(text.substr(slash + 1));
  if (!streams || *streams < 0 || *streams > kMaxStreams)
    return Status(ErrorCode::kProtocolError,
                  strFormat("malformed published address '%s' (expected host:port/streams)",
                            text.c_str()));
  PublishedAddress out;
  TUTTI_ASSIGN_OR_RETURN(out.address, parseHostPort(text.substr(0, slash)));
  out.streams = static_cast<int>(*streams);
  return out;
}

int pairStreams(int mine, int theirs, const std::string& myHost, const std::string& theirHost,
                int size) {
  if (mine > 0) return mine;
  if (theirs > 0) return theirs;
  if (myHost == theirHost || isLoopbackHost(myHost) || isLoopbackHost(theirHost)) return 1;
  return std::clamp(kAutoConnectionBudget / std::max(size - 1, 1), 1, kRemoteStreams);
}

Result<MeshSockets> establishMesh(Store& store, const std::string& keyPrefix,
                                  const MeshParams& params, Deadline deadline) {
  TUTTI_ASSERT(params.key != nullptr);
  if (params.size == 1) {
    MeshSockets mesh;
    mesh.sockets.resize(1);
    mesh.extra.resize(1);
    mesh.names.resize(1);
    return mesh;
  }
  TUTTI_ASSIGN_OR_RETURN(UniqueFd listener,
                         listenTcp(params.bindHost, 0, std::max(params.size, 128)));
  TUTTI_ASSIGN_OR_RETURN(HostPort bound, localAddress(listener.get()));
  bound.host = params.bindHost;
  if (params.socketBufferBytes > 0)  // accepted sockets inherit it
    TUTTI_RETURN_IF_ERROR(setSocketBuffers(listener.get(), params.socketBufferBytes));
  TUTTI_ASSIGN_OR_RETURN(std::vector<PublishedAddress> addresses,
                         exchangeAddresses(store, keyPrefix, params.rank, params.size, bound,
                                           params.streams, deadline));
  TUTTI_DEBUG(kTcp, "rank %d listening on %s", params.rank, bound.toString().c_str());
  MeshBuilder builder(params, store, keyPrefix, listener.get(),
                      strFormat("rank %d listening on %s", params.rank, bound.toString().c_str()),
                      std::move(addresses), deadline);
  TUTTI_ASSIGN_OR_RETURN(MeshSockets mesh, builder.run());
  if (params.socketBufferBytes > 0) {
    // Our own connections get it only now, after their handshake: the window scale they
    // agreed on follows the system's maximum buffer, so a larger size still takes effect.
    for (std::size_t peer = 0; peer < static_cast<std::size_t>(params.rank); ++peer) {
      TUTTI_RETURN_IF_ERROR(setSocketBuffers(mesh.sockets[peer].get(), params.socketBufferBytes));
      for (const UniqueFd& fd : mesh.extra[peer])
        TUTTI_RETURN_IF_ERROR(setSocketBuffers(fd.get(), params.socketBufferBytes));
    }
  }
  return mesh;
}

}  // namespace tutti::tcp
