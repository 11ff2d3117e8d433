#pragma once
// Building the full mesh of connections at communicator creation (see tcp_transport.h for
// the three phases and why they cannot deadlock). Every connection authenticates (auth.h)
// before its HELLO is read.

#include <chrono>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/net.h"
#include "bootstrap/auth.h"
#include "tutti/deadline.h"
#include "tutti/store.h"

namespace tutti::tcp {

struct MeshSockets {
  std::vector<UniqueFd> sockets;   // stream 0, indexed by peer rank; invalid for self
  std::vector<std::vector<UniqueFd>> extra;  // streams 1.. per peer rank (TUTTI_TCP_STREAMS)
  std::vector<std::string> names;  // "rank 3 (10.0.0.2:41234)", for messages
};

/// What each rank publishes under "<keyPrefix>addr/<rank>": where it listens and its
/// TUTTI_TCP_STREAMS, as "host:port/streams" (streams 0: auto).
struct PublishedAddress {
  HostPort address;
  int streams = 0;
};
std::string formatPublishedAddress(const PublishedAddress& published);
/// kProtocolError naming `text` when it is not one.
Result<PublishedAddress> parsePublishedAddress(const std::string& text);

/// Connections per pair where TUTTI_TCP_STREAMS is auto and the pair is on two hosts, at
/// most: a 256 MiB all-reduce between two network namespaces over a veth pair ran at 0.50,
/// 0.55 and 0.57 GB/s busbw with 1, 2 and 4 (medians of 3).
inline constexpr int kRemoteStreams = 4;
/// Connections a rank holds to all its peers under auto, at most: past it a pair gets fewer
/// streams (not under 1), so that a large world stays far from the usual limit of 1024 open
/// descriptors.
inline constexpr int kAutoConnectionBudget = 512;

/// How many connections a pair of a `size`-rank world has: an explicit setting (> 0) of
/// either end (both must agree: the caller checks), else (auto) 1 between two ranks of one
/// host (the same bind address, or loopback: a copy in memory gains nothing from more), else
/// kRemoteStreams, fewer where the world is large (kAutoConnectionBudget). Both ends compute
/// the same.
int pairStreams(int mine, int theirs, const std::string& myHost, const std::string& theirHost,
                int size);

/// How establishMesh() identifies this rank and proves it belongs.
struct MeshParams {
  int rank = 0;
  int size = 1;
  std::uint64_t commUid = 0;
  /// Address to listen on (that interface only) and to publish.
  std::string bindHost;
  /// Every connection proves this key in both directions; must outlive the call.
  const auth::Key* key = nullptr;
  /// How long a connection to our listener has to authenticate.
  std::chrono::milliseconds authTimeout{5000};
  /// Connections per peer (TUTTI_TCP_STREAMS; 0: auto, pairStreams). Every rank must have
  /// the same setting: a pair whose explicit settings differ fails on both ends.
  int streams = 0;
  /// SO_SNDBUF/SO_RCVBUF of every connection (0: the kernel's autotuning).
  std::uint64_t socketBufferBytes = 0;
};

/// Listens on `params.bindHost`, publishes the address under "<keyPrefix>addr/<rank>", and
/// connects to every peer, authenticating each connection both ways (each of a pair's
/// streams alike). Every returned socket is non-blocking with TCP_NODELAY. Blocks until done or `deadline`. Errors: kTimeout
/// naming the ranks that never connected (and why the latest refused connection was
/// refused); kProtocolError when a peer refuses this rank's key or cannot prove its own
/// ("authenticating with rank 0 at 10.0.0.1:4000: refused this process's authentication:
/// ..."); kInvalidArgument when a peer's TUTTI_TCP_STREAMS differs from this rank's; store
/// and socket errors.
Result<MeshSockets> establishMesh(Store& store, const std::string& keyPrefix,
                                  const MeshParams& params, Deadline deadline);

}  // namespace tutti::tcp
