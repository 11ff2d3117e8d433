// Fuzz target: the authentication handshake (src/bootstrap/auth.h, auth_gate.h).
//
// Every input first goes, whole, through the three decoders (a stranger's bytes as a
// challenge, response or verdict): whatever decodes must encode back to the same bytes.
// Its first byte then picks one of four runs, which read the rest of the input as choices
// (fuzz_input.h):
//  0. The server judges raw bytes: ServerHandshake::answer on the rest of the input, which
//     must accept exactly when the bytes are a response whose proof the key and context
//     give, and must send a refusal otherwise.
//  1. Both pure sides against each other with chosen keys, contexts and nonces, each of
//     the three messages XORed with a chosen mask: the client must answer exactly the
//     challenges that decode, the server must accept exactly an untouched response made
//     with its own key and context, and the client must trust exactly an untouched
//     accepting verdict.
//  2. HandshakeGate over a socketpair: an honest client's response, masked, followed by
//     chosen trailing bytes, written in chosen chunks, with an optional hang-up or drop.
//     The gate must stay pending until the 72nd byte, accept exactly an untouched response
//     with the right key and context, never read a byte past the response (the trailing
//     bytes must all still be in the socket of an accepted connection), and free its slot
//     on every other ending.
//  3. HandshakeClient over a socketpair, against a fuzzed server: masked challenge and
//     verdict written in chosen chunks, or a hang-up part way. The client must succeed
//     exactly with an untouched accepting verdict, and report a hang-up as kPeerFailure.
// Nothing here depends on time: the gate's timeout and eviction (expire(), makeRoom() on a
// full gate) are left to tests/unit/bootstrap/auth_gate_test.cc.

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/assert.h"
#include "base/fd.h"
#include "base/log.h"
#include "bootstrap/auth.h"
#include "bootstrap/auth_gate.h"
#include "fuzz_input.h"
#include "fuzz_keys.h"

namespace {

using namespace tutti::auth;
using tutti::ErrorCode;
using tutti::Status;
using tutti::UniqueFd;
using tutti::fuzz::FuzzInput;
using Bytes = std::vector<std::uint8_t>;

// The keys a run may pick. Static: handshakes keep pointers to their key.
const Key& pickKey(std::uint8_t choice) {
  static const Key kNoSecret;
  static const Key kFirst = *Key::fromSecret(tutti::fuzz::kFirstSecret);
  static const Key kSecond = *Key::fromSecret(tutti::fuzz::kSecondSecret);
  switch (choice % 3) {
    case 0:
      return kNoSecret;
    case 1:
      return kFirst;
    default:
      return kSecond;
  }
}

Context readContext(FuzzInput& in) {
  Context c;
  c.purpose = in.flag() ? Purpose::kPeerLink : Purpose::kStore;
  if (c.purpose == Purpose::kPeerLink) {
    c.commUid = in.u64();
    c.acceptorRank = in.u32();
    c.worldSize = in.u32();
  }
  return c;
}

bool sameContext(const Context& a, const Context& b) {
  return a.purpose == b.purpose && a.commUid == b.commUid && a.acceptorRank == b.acceptorRank &&
         a.worldSize == b.worldSize;
}

// Which side is which, and whether they should agree.
struct Sides {
  const Key* clientKey;
  const Key* serverKey;
  Context clientContext;
  Context serverContext;
  bool agree() const {
    return clientKey->bytes() == serverKey->bytes() && sameContext(clientContext, serverContext);
  }
};

Sides readSides(FuzzInput& in) {
  Sides s{&pickKey(in.u8()), &pickKey(in.u8()), readContext(in), Context{}};
  // Mostly the same context, so that the key decides; otherwise one of the input's own.
  s.serverContext = in.flag() ? readContext(in) : s.clientContext;
  return s;
}

template <std::size_t N>
bool isZero(const std::array<std::uint8_t, N>& mask) {
  return std::all_of(mask.begin(), mask.end(), [](std::uint8_t b) { return b == 0; });
}

template <std::size_t N>
std::array<std::uint8_t, N> masked(std::array<std::uint8_t, N> bytes,
                                   const std::array<std::uint8_t, N>& mask) {
  for (std::size_t i = 0; i < N; ++i) bytes[i] ^= mask[i];
  return bytes;
}

void checkRefusal(const Status& status) {
  TUTTI_ASSERT(!status.ok());
  TUTTI_ASSERT(status.code() == ErrorCode::kProtocolError);
  TUTTI_ASSERT(!status.message().empty());
}

// The stranger's bytes as each message; whatever decodes has one encoding.
void decodeWhole(std::span<const std::uint8_t> bytes) {
  tutti::Result<Challenge> challenge = decodeChallenge(bytes);
  if (challenge.ok()) {
    const ChallengeBytes again = encodeChallenge(*challenge);
    TUTTI_ASSERT(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
  } else {
    checkRefusal(challenge.status());
  }
  tutti::Result<Response> response = decodeResponse(bytes);
  if (response.ok()) {
    const ResponseBytes again = encodeResponse(*response);
    TUTTI_ASSERT(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
  } else {
    checkRefusal(response.status());
  }
  tutti::Result<Verdict> verdict = decodeVerdict(bytes);
  if (verdict.ok()) {
    const VerdictBytes again = encodeVerdict(*verdict);
    TUTTI_ASSERT(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
    if (!verdict->accepted) TUTTI_ASSERT(isZero(verdict->proof));
  } else {
    checkRefusal(verdict.status());
  }
}

// Run 0: a server judging whatever bytes arrive as the response.
void serverJudgesBytes(FuzzInput& in) {
  const Key& key = pickKey(in.u8());
  const Context context = readContext(in);
  const Nonce nonce = in.array<kNonceBytes>();
  const std::span<const std::uint8_t> response = in.rest();
  VerdictBytes verdict{};
  const Status judged = ServerHandshake(key, context, nonce).answer(response, &verdict);
  tutti::Result<Response> decoded = decodeResponse(response);
  const bool proves = decoded.ok() && macEqual(decoded->proof, clientProof(key, context, nonce,
                                                                           decoded->clientNonce));
  TUTTI_ASSERT(judged.ok() == proves);
  if (!judged.ok()) {
    checkRefusal(judged);
    TUTTI_ASSERT(verdict == encodeVerdict(Verdict{}));
    return;
  }
  tutti::Result<Verdict> sent = decodeVerdict(verdict);
  TUTTI_ASSERT(sent.ok() && sent->accepted);
  TUTTI_ASSERT(macEqual(sent->proof, serverProof(key, context, nonce, decoded->clientNonce)));
}

// Run 1: the two pure sides, every message possibly tampered with on the way.
void pureSides(FuzzInput& in) {
  const Sides sides = readSides(in);
  const Nonce serverNonce = in.array<kNonceBytes>();
  const Nonce clientNonce = in.array<kNonceBytes>();
  const auto challengeMask = in.array<kChallengeBytes>();
  const auto responseMask = in.array<kResponseBytes>();
  const auto verdictMask = in.array<kVerdictBytes>();
  const ServerHandshake server(*sides.serverKey, sides.serverContext, serverNonce);
  ClientHandshake client(*sides.clientKey, sides.clientContext, clientNonce);

  const ChallengeBytes challenge = masked(server.challenge(), challengeMask);
  tutti::Result<ResponseBytes> response = client.respond(challenge);
  // Only the nonce may change and still make a challenge: the preamble has one value.
  const bool preambleIntact =
      std::all_of(challengeMask.begin(), challengeMask.begin() + kPreambleBytes,
                  [](std::uint8_t b) { return b == 0; });
  TUTTI_ASSERT(response.ok() == preambleIntact);
  if (!response.ok()) return checkRefusal(response.status());

  VerdictBytes verdict{};
  const Status judged = server.answer(masked(*response, responseMask), &verdict);
  const bool accept = sides.agree() && isZero(challengeMask) && isZero(responseMask);
  TUTTI_ASSERT(judged.ok() == accept);
  if (!judged.ok()) checkRefusal(judged);

  const Status trusted = client.check(masked(verdict, verdictMask));
  TUTTI_ASSERT(trusted.ok() == (accept && isZero(verdictMask)));
  if (!trusted.ok()) checkRefusal(trusted);
}

// A connected pair of non-blocking AF_UNIX stream sockets.
struct SocketPair {
  UniqueFd tested;  // the end the code under test drives
  UniqueFd fuzzer;  // the end this target writes and reads
};

SocketPair socketPair() {
  int fds[2];
  TUTTI_ASSERT(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
  return SocketPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void writeAll(int fd, const std::uint8_t* data, std::size_t len) {
  // A few hundred bytes at most: they always fit in a fresh socket's buffer.
  TUTTI_ASSERT(::send(fd, data, len, MSG_NOSIGNAL) == static_cast<ssize_t>(len));
}

// What the socket holds now, up to `most` bytes, without blocking; *eof when it has ended.
Bytes readAvailable(int fd, std::size_t most, bool* eof = nullptr) {
  Bytes out(most);
  std::size_t got = 0;
  while (got < most) {
    ssize_t n = ::recv(fd, out.data() + got, most - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A peer that closed with our bytes unread resets the connection: also an end.
      if (eof != nullptr) *eof = n == 0 || errno == ECONNRESET;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

// Chunk sizes come from the input: 1..64 bytes, or all that is left when the input says 0.
std::size_t nextChunk(FuzzInput& in, std::size_t left) {
  const std::size_t want = in.u8() % 65;
  return want == 0 ? left : std::min(want, left);
}

// How run 2's client ends: it sends `limit` bytes of its stream, then, when `limit` is short
// of the stream, either hangs up (shuts its writing side) or the listener drops it.
struct GatePlan {
  Bytes stream;  // the masked response, then the trailing bytes
  std::size_t limit = 0;
  bool stops = false;
  bool dropped = false;
};

// What the client sees after the gate refused it, or it hung up, or it was dropped: the
// refusal verdict when the gate judged a whole response, and the end of the connection.
void checkClientSeesEnd(int client, bool judged, const ClientHandshake& honest) {
  bool eof = false;
  const Bytes verdict = readAvailable(client, kVerdictBytes + 1, &eof);
  TUTTI_ASSERT(eof);
  if (!judged) {
    TUTTI_ASSERT(verdict.empty());
    return;
  }
  TUTTI_ASSERT(verdict.size() == kVerdictBytes);
  checkRefusal(honest.check(verdict));
}

// An accepted connection: the client trusts the verdict, and the socket handed over holds
// every byte the client sent after its response, then the end if it hung up.
void checkAccepted(HandshakeGate& gate, int slot, const GatePlan& plan, std::size_t written,
                   int client, const ClientHandshake& honest) {
  TUTTI_ASSERT(gate.onReadable(slot) == HandshakeGate::Progress::kAccepted);
  const Bytes verdict = readAvailable(client, kVerdictBytes + 1);
  TUTTI_ASSERT(verdict.size() == kVerdictBytes);
  TUTTI_ASSERT(honest.check(verdict).ok());
  // The client goes on sending as it meant to; the gate is done with the socket.
  writeAll(client, plan.stream.data() + written, plan.limit - written);
  if (plan.stops) ::shutdown(client, SHUT_WR);
  std::string peer;
  const UniqueFd taken = gate.release(slot, &peer);
  TUTTI_ASSERT(taken.valid() && !peer.empty());
  TUTTI_ASSERT(gate.pending() == 0 && gate.refusals() == 0);
  bool eof = false;
  const Bytes after = readAvailable(taken.get(), plan.stream.size() + 1, &eof);
  TUTTI_ASSERT(std::equal(after.begin(), after.end(), plan.stream.begin() + kResponseBytes,
                          plan.stream.begin() + static_cast<std::ptrdiff_t>(plan.limit)));
  TUTTI_ASSERT(eof == plan.stops);
}

// Run 2: the listener's gate, fed by a client over a socket in chunks.
void gateOverSocket(FuzzInput& in) {
  const Sides sides = readSides(in);
  ClientHandshake honest(*sides.clientKey, sides.clientContext, in.array<kNonceBytes>());
  const auto responseMask = in.array<kResponseBytes>();
  const Bytes trailing = in.field();
  GatePlan plan;
  const std::size_t stopAfter = in.u8();
  plan.dropped = in.flag();

  HandshakeGate gate(*sides.serverKey, sides.serverContext, std::chrono::seconds(60),
                     "fuzzed listener", tutti::log::kBootstrap);
  SocketPair sockets = socketPair();
  const int client = sockets.fuzzer.get();
  TUTTI_ASSERT(gate.makeRoom());
  const int slot = gate.admit(std::move(sockets.tested));
  TUTTI_ASSERT(slot >= 0 && gate.pending() == 1);

  tutti::Result<ResponseBytes> response = honest.respond(readAvailable(client, 256));
  TUTTI_ASSERT(response.ok());
  const ResponseBytes sent = masked(*response, responseMask);
  plan.stream.assign(sent.begin(), sent.end());
  plan.stream.insert(plan.stream.end(), trailing.begin(), trailing.end());
  plan.limit = std::min(stopAfter, plan.stream.size());
  plan.stops = stopAfter < plan.stream.size();
  const bool accept = sides.agree() && isZero(responseMask);

  // Until the 72nd byte the gate must wait; with it, it must judge.
  std::size_t written = 0;
  HandshakeGate::Progress progress = HandshakeGate::Progress::kPending;
  while (written < plan.limit && progress == HandshakeGate::Progress::kPending) {
    const std::size_t chunk = nextChunk(in, plan.limit - written);
    writeAll(client, plan.stream.data() + written, chunk);
    written += chunk;
    progress = gate.onReadable(slot);
    if (written < kResponseBytes) TUTTI_ASSERT(progress == HandshakeGate::Progress::kPending);
  }
  if (written >= kResponseBytes) {
    if (accept) return checkAccepted(gate, slot, plan, written, client, honest);
    TUTTI_ASSERT(progress == HandshakeGate::Progress::kClosed);
  } else if (plan.dropped) {
    gate.drop(slot, "dropped by the fuzz target");
  } else {
    ::shutdown(client, SHUT_WR);
    TUTTI_ASSERT(gate.onReadable(slot) == HandshakeGate::Progress::kClosed);
  }
  TUTTI_ASSERT(gate.onReadable(slot) == HandshakeGate::Progress::kClosed);  // a free slot
  TUTTI_ASSERT(gate.pending() == 0 && gate.refusals() == 1 && !gate.lastRefusal().empty());
  checkClientSeesEnd(client, written >= kResponseBytes, honest);
}

// Run 3: the connecting side over a socket, against a fuzzed server.
void clientOverSocket(FuzzInput& in) {
  const Sides sides = readSides(in);
  const ServerHandshake server(*sides.serverKey, sides.serverContext, in.array<kNonceBytes>());
  const auto challengeMask = in.array<kChallengeBytes>();
  const auto verdictMask = in.array<kVerdictBytes>();
  // The server hangs up after this many of its 80 bytes (challenge and verdict); 80 or more
  // means it does not.
  const std::size_t hangUpAfter = in.u8();

  const SocketPair sockets = socketPair();
  const int serving = sockets.fuzzer.get();
  tutti::Result<HandshakeClient> client =
      HandshakeClient::create(sockets.tested.get(), *sides.clientKey, sides.clientContext);
  TUTTI_ASSERT(client.ok());
  // The challenge, then (once the client answered) the verdict, each in chunks.
  const ChallengeBytes challenge = masked(server.challenge(), challengeMask);
  const bool challengeOk =
      std::all_of(challengeMask.begin(), challengeMask.begin() + kPreambleBytes,
                  [](std::uint8_t b) { return b == 0; });
  const bool accept = sides.agree() && isZero(challengeMask) && isZero(verdictMask);
  std::size_t sentBytes = 0;
  bool hungUp = false;
  // Writes `len` bytes in chunks, letting the client read after each; returns what the
  // client's last read said (an error ends the exchange).
  auto feed = [&](const std::uint8_t* bytes, std::size_t len) -> tutti::Result<bool> {
    for (std::size_t done = 0; done < len;) {
      if (sentBytes == hangUpAfter) {
        ::shutdown(serving, SHUT_WR);
        hungUp = true;
        tutti::Result<bool> ended = client->onReadable();
        TUTTI_ASSERT(!ended.ok() && ended.status().code() == ErrorCode::kPeerFailure);
        return ended;
      }
      const std::size_t chunk = std::min(nextChunk(in, len - done), hangUpAfter - sentBytes);
      writeAll(serving, bytes + done, chunk);
      done += chunk;
      sentBytes += chunk;
      tutti::Result<bool> step = client->onReadable();
      if (done < len) TUTTI_ASSERT(step.ok() && !*step);  // more bytes are due
      if (done == len || !step.ok()) return step;
    }
    return false;
  };
  tutti::Result<bool> afterChallenge = feed(challenge.data(), challenge.size());
  if (hungUp) return;
  TUTTI_ASSERT(afterChallenge.ok() == challengeOk);
  if (!afterChallenge.ok()) return checkRefusal(afterChallenge.status());
  TUTTI_ASSERT(!*afterChallenge);  // it answered and now waits for the verdict
  const Bytes response = readAvailable(serving, kResponseBytes + 1);
  TUTTI_ASSERT(response.size() == kResponseBytes);
  VerdictBytes verdict{};
  (void)server.answer(response, &verdict);  // a refusal is a verdict to send as well
  verdict = masked(verdict, verdictMask);
  tutti::Result<bool> done = feed(verdict.data(), verdict.size());
  if (hungUp) return;
  TUTTI_ASSERT(done.ok() == accept);
  if (done.ok()) TUTTI_ASSERT(*done);
  if (!done.ok()) checkRefusal(done.status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Refusals are logged at WARN; thousands a second would drown the fuzzer's own output.
  static const bool quiet = tutti::log::configure("ERROR", "ALL", "");
  TUTTI_ASSERT(quiet);
  const std::span<const std::uint8_t> bytes(data, size);
  decodeWhole(bytes);
  FuzzInput in(bytes);
  switch (in.u8() % 4) {
    case 0:
      serverJudgesBytes(in);
      break;
    case 1:
      pureSides(in);
      break;
    case 2:
      gateOverSocket(in);
      break;
    default:
      clientOverSocket(in);
      break;
  }
  return 0;
}
