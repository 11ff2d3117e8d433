// HandshakeGate and HandshakeClient over socket pairs: the listener's side of the handshake
// accepts the honest, refuses the rest, never reads past the response, evicts and expires
// as documented, and holds no heap memory for the connections it refuses. This binary
// replaces the global operator new to count the bytes outstanding.

#include "bootstrap/auth_gate.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/net.h"
#include "common/replaced_new.h"

namespace {
// Heap bytes allocated and not yet freed, over the whole process, as malloc counts them.
std::atomic<long long> gOutstanding{0};
}  // namespace

// Not inlined, so that the compiler never pairs the malloc/free inside with new/delete at a
// call site (its mismatched-allocation warnings would be right about the inlined code).
#if TUTTI_TEST_REPLACES_NEW
__attribute__((noinline)) void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  gOutstanding.fetch_add(static_cast<long long>(::malloc_usable_size(p)),
                         std::memory_order_relaxed);
  return p;
}
__attribute__((noinline)) void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  gOutstanding.fetch_sub(static_cast<long long>(::malloc_usable_size(p)),
                         std::memory_order_relaxed);
  std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}
#endif

namespace tutti::auth {
namespace {

constexpr char kSecret[] = "auth-gate-test-secret-0123456789";

Key secretKey() {
  auto k = Key::fromSecret(kSecret);
  EXPECT_TRUE(k.ok());
  return k.ok() ? *k : Key();
}

// A connected pair: `server` goes into the gate, `client` is the peer.
struct Pair {
  UniqueFd server;
  UniqueFd client;
};

Pair makePair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  return Pair{UniqueFd(sv[0]), UniqueFd(sv[1])};
}

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

// Both sides run on this thread, each step driven by hand.
TEST(HandshakeGate, AuthenticatesAnHonestClientAndLeavesItsNextBytesUnread) {
  const Key key = secretKey();
  HandshakeGate gate(key, Context::store(), std::chrono::seconds(5), "test listener",
                     log::kBootstrap);
  Pair p = makePair();
  ASSERT_TRUE(gate.makeRoom());
  const int slot = gate.admit(std::move(p.server));
  ASSERT_GE(slot, 0);
  EXPECT_EQ(gate.pending(), 1u);
  auto client = HandshakeClient::create(p.client.get(), key, Context::store());
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(client->onReadable().value(), false);  // challenge read, response sent
  // Bytes the client sends right after its response belong to whatever comes next.
  const char next[] = "next protocol";
  ASSERT_TRUE(writeFull(p.client.get(), next, sizeof(next), soon()).ok());
  EXPECT_EQ(gate.onReadable(slot), HandshakeGate::Progress::kAccepted);
  auto done = client->onReadable();
  ASSERT_TRUE(done.ok()) << done.status().toString();
  EXPECT_TRUE(*done);
  std::string peer;
  UniqueFd fd = gate.release(slot, &peer);
  EXPECT_EQ(gate.pending(), 0u);
  char got[sizeof(next)] = {};
  ASSERT_TRUE(readFull(fd.get(), got, sizeof(got), soon()).ok());
  EXPECT_STREQ(got, next);
  EXPECT_EQ(gate.refusals(), 0u);
}

TEST(HandshakeGate, WrongKeyIsRefusedAndTheClientToldSo) {
  const Key key = secretKey();
  HandshakeGate gate(key, Context::store(), std::chrono::seconds(5), "test listener",
                     log::kBootstrap);
  Pair p = makePair();
  ASSERT_TRUE(gate.makeRoom());
  const int slot = gate.admit(std::move(p.server));
  const Key wrong;
  auto client = HandshakeClient::create(p.client.get(), wrong, Context::store());
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(client->onReadable().value(), false);
  EXPECT_EQ(gate.onReadable(slot), HandshakeGate::Progress::kClosed);
  EXPECT_EQ(gate.fd(slot), -1);
  EXPECT_EQ(gate.refusals(), 1u);
  EXPECT_NE(gate.lastRefusal().find("its proof did not verify"), std::string::npos)
      << gate.lastRefusal();
  auto verdict = client->onReadable();
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(verdict.status().message().find("refused this process's authentication"),
            std::string::npos);
  // A stale readiness event for the freed slot changes nothing.
  EXPECT_EQ(gate.onReadable(slot), HandshakeGate::Progress::kClosed);
}

TEST(HandshakeGate, OldestIdleConnectionIsEvictedWhenEverySlotIsTaken) {
  log::configure("ERROR", "ALL", "");  // 64 refusals' worth of WARN lines is noise here
  const Key key = secretKey();
  HandshakeGate gate(key, Context::store(), std::chrono::seconds(60), "test listener",
                     log::kBootstrap);
  std::vector<UniqueFd> peers;
  int firstSlot = -1;
  for (int i = 0; i < HandshakeGate::slots(); ++i) {
    Pair p = makePair();
    ASSERT_TRUE(gate.makeRoom());
    const int slot = gate.admit(std::move(p.server));
    ASSERT_GE(slot, 0);
    if (i == 0) firstSlot = slot;
    peers.push_back(std::move(p.client));
  }
  EXPECT_EQ(gate.pending(), kMaxPendingHandshakes);
  // Room comes once the oldest has had kEvictableAfter; nextDue() says when to ask again.
  Deadline bound = soon();
  while (!gate.makeRoom() && !bound.expired() && !gate.nextDue().isNever())
    std::this_thread::sleep_until(gate.nextDue().at());
  EXPECT_EQ(gate.pending(), kMaxPendingHandshakes - 1);
  EXPECT_EQ(gate.refusals(), 1u);
  EXPECT_EQ(gate.fd(firstSlot), -1) << "the oldest connection was not the one evicted";
  EXPECT_NE(gate.lastRefusal().find("every handshake slot was taken"), std::string::npos);
  // The evicted peer got its challenge, then the end of the connection.
  ChallengeBytes challenge{};
  ASSERT_TRUE(readFull(peers[0].get(), challenge.data(), challenge.size(), soon()).ok());
  char more = 0;
  EXPECT_EQ(readFull(peers[0].get(), &more, 1, soon()).code(), ErrorCode::kPeerFailure);
  log::configure("WARN", "ALL", "");
}

TEST(HandshakeGate, SilentConnectionExpires) {
  const Key key = secretKey();
  HandshakeGate gate(key, Context::store(), std::chrono::milliseconds(1), "test listener",
                     log::kBootstrap);
  Pair p = makePair();
  ASSERT_TRUE(gate.makeRoom());
  ASSERT_GE(gate.admit(std::move(p.server)), 0);
  EXPECT_FALSE(gate.nextDue().isNever());
  Deadline bound = soon();
  while (gate.pending() > 0 && !bound.expired() && !gate.nextDue().isNever()) {
    std::this_thread::sleep_until(gate.nextDue().at());
    gate.expire();
  }
  EXPECT_EQ(gate.pending(), 0u);
  EXPECT_TRUE(gate.nextDue().isNever());
  EXPECT_NE(gate.lastRefusal().find("did not authenticate within"), std::string::npos)
      << gate.lastRefusal();
}

TEST(HandshakeGate, RefusedConnectionsLeaveNoHeapBehind) {
  if (!TUTTI_TEST_REPLACES_NEW) GTEST_SKIP() << "allocations are not counted here (replaced_new.h)";
  log::configure("NONE", "ALL", "");
  const Key key = secretKey();
  HandshakeGate gate(key, Context::store(), std::chrono::seconds(60), "test listener",
                     log::kBootstrap);
  std::vector<std::uint8_t> garbage(4096, 0xab);
  auto refuseOne = [&](bool sendGarbage) {
    Pair p = makePair();
    ASSERT_TRUE(gate.makeRoom());
    const int slot = gate.admit(std::move(p.server));
    ASSERT_GE(slot, 0);
    if (sendGarbage) {
      ASSERT_TRUE(writeFull(p.client.get(), garbage.data(), garbage.size(), soon()).ok());
    } else {
      p.client.reset();  // gone before it said anything
    }
    EXPECT_EQ(gate.onReadable(slot), HandshakeGate::Progress::kClosed);
  };
  refuseOne(true);  // the first refusal sizes the gate's one message buffer
  {
    // The counter sees this binary's allocations (else the bound below proves nothing).
    const long long base = gOutstanding.load();
    auto probe = std::make_unique<std::vector<char>>(1000);
    EXPECT_GE(gOutstanding.load() - base, 1000);
  }
  const long long before = gOutstanding.load();
  for (int i = 0; i < 500; ++i) refuseOne(i % 2 == 0);
  const long long after = gOutstanding.load();
  // Nothing is kept per refused connection: only the latest refusal's text changes size.
  EXPECT_LE(after - before, 256) << "heap bytes held after 500 refusals";
  EXPECT_EQ(gate.refusals(), 501u);
  log::configure("WARN", "ALL", "");
}

TEST(HandshakeClient, ServerThatClosesBeforeItsVerdictIsARetryableFailure) {
  Pair p = makePair();
  const Key key = secretKey();
  auto client = HandshakeClient::create(p.client.get(), key, Context::store());
  ASSERT_TRUE(client.ok());
  ServerHandshake server(key, Context::store(), Nonce{});
  auto challenge = server.challenge();
  ASSERT_TRUE(writeFull(p.server.get(), challenge.data(), challenge.size(), soon()).ok());
  ASSERT_EQ(client->onReadable().value(), false);
  p.server.reset();
  auto r = client->onReadable();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPeerFailure);
  EXPECT_NE(r.status().message().find("before its verdict"), std::string::npos);
}

}  // namespace
}  // namespace tutti::auth
