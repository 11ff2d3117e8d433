// The store behind its authentication handshake, over loopback: wrong secrets, no secret,
// random bytes, replays, oversize lengths, silence and floods are refused and logged while
// honest clients keep being served; and the listener binds only the address it is given.
// The handshake's own logic is unit-tested in auth_test.cc; HandshakeGate's bounds here.

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/net.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store.h"

namespace tutti {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr char kSecret[] = "tcp-store-auth-test-secret-0123456789";
constexpr char kOtherSecret[] = "a-different-secret-for-another-job-42";

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

auth::Key key(const char* secret) {
  auto k = auth::Key::fromSecret(secret);
  EXPECT_TRUE(k.ok()) << k.status().toString();
  return k.ok() ? *k : auth::Key();
}

std::unique_ptr<TcpStoreServer> startServer(
    const char* host = "127.0.0.1",
    std::chrono::milliseconds authTimeout = std::chrono::seconds(5)) {
  TcpStoreServer::Options options;
  options.key = key(kSecret);
  options.authTimeout = authTimeout;
  auto server = TcpStoreServer::start(host, 0, options);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// An honest client proves it still gets served: a round trip through the store.
void expectServed(const HostPort& address, const std::string& tag) {
  auto client = TcpStoreClient::connect(address, key(kSecret), soon());
  ASSERT_TRUE(client.ok()) << client.status().toString();
  ASSERT_TRUE((*client)->set(tag, Bytes{1, 2, 3}).ok());
  auto back = (*client)->get(tag, soon());
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(*back, (Bytes{1, 2, 3}));
}

UniqueFd tcpConnect(const HostPort& address) {
  auto fd = connectTcp(address, soon());
  EXPECT_TRUE(fd.ok()) << fd.status().toString();
  return fd.ok() ? std::move(fd).value() : UniqueFd();
}

// Reads until the peer closes (true) or `deadline`; what it sends on the way is returned.
bool readUntilClosed(int fd, Bytes* got, Deadline deadline) {
  std::uint8_t buf[256];
  while (true) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, deadline.pollTimeoutMs()) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;
    if (n > 0 && got != nullptr) got->insert(got->end(), buf, buf + n);
  }
}

// Sends the log (WARN and up) to a file for the test's duration, to check what the server
// said about the connections it refused. The server logs a refusal before it closes the
// connection, and serves its connections one event at a time on one thread: so the line is
// in the file once the refused connection reads as closed, or once a later client has been
// served. The tests read it only after one of those.
class LogCapture {
 public:
  LogCapture() : path_("/tmp/tutti-store-auth-test." + std::to_string(::getpid()) + ".log") {
    std::remove(path_.c_str());
    EXPECT_TRUE(log::configure("WARN", "ALL", path_));
  }
  ~LogCapture() {
    log::configure("WARN", "ALL", "");
    std::remove(path_.c_str());
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool has(const std::string& needle) const { return text().find(needle) != std::string::npos; }

 private:
  std::string path_;
};

TEST(TcpStoreAuth, WrongSecretIsRefusedWithAClearErrorAndLogged) {
  LogCapture log;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  const std::string address = server->address().toString();
  auto client = TcpStoreClient::connect(server->address(), key(kOtherSecret), soon());
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), ErrorCode::kProtocolError);
  EXPECT_EQ(client.status().message(),
            "connecting to the store at " + address +
                ": refused this process's authentication: the two do not hold the same job "
                "secret");
  expectServed(server->address(), "after-wrong-secret");
  EXPECT_TRUE(log.has("store server on " + address + ": refused connection from 127.0.0.1:"))
      << log.text();
  EXPECT_TRUE(log.has(": its proof did not verify (a different job secret")) << log.text();
}

TEST(TcpStoreAuth, ClientWithoutASecretIsRefusedAndToldToSetOne) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = TcpStoreClient::connect(server->address(), auth::Key(), soon());
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().message(),
            "connecting to the store at " + server->address().toString() +
                ": refused this process's authentication: the two do not hold the same job "
                "secret (this process has none: give it the job's secret through TUTTI_SECRET "
                "or TUTTI_SECRET_FILE)");
}

TEST(TcpStoreAuth, ServerWithoutTheSecretIsNotTrusted) {
  // A store started without a secret (another job's, or an impostor's) refuses our key; a
  // client that has none meets it and succeeds, which is what "no secret" means.
  TcpStoreServer::Options open;
  auto server = TcpStoreServer::start("127.0.0.1", 0, open);
  ASSERT_TRUE(server.ok());
  auto ours = TcpStoreClient::connect((*server)->address(), key(kSecret), soon());
  EXPECT_EQ(ours.status().code(), ErrorCode::kProtocolError);
  EXPECT_TRUE(TcpStoreClient::connect((*server)->address(), auth::Key(), soon()).ok());
}

TEST(TcpStoreAuth, RandomBytesAndStoreRequestsBeforeAuthenticatingAreRefused) {
  LogCapture log;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  std::mt19937 gen(7);
  std::vector<Bytes> inputs;
  for (std::size_t n : {1u, 71u, 72u, 73u, 4096u}) {
    Bytes b(n);
    for (auto& x : b) x = static_cast<std::uint8_t>(gen());
    inputs.push_back(b);
  }
  // A well-formed store request declaring the largest payload, and one declaring 4 GiB:
  // neither is read past the 72 bytes of a response, so nothing is buffered for them.
  auto set = storeproto::encode(storeproto::Message::set(1, "k", Bytes(100, 'v')));
  ASSERT_TRUE(set.ok());
  inputs.push_back(*set);
  Bytes oversize = *set;
  oversize[12] = oversize[13] = oversize[14] = oversize[15] = 0xff;
  inputs.push_back(oversize);
  for (const Bytes& input : inputs) {
    SCOPED_TRACE(input.size());
    UniqueFd fd = tcpConnect(server->address());
    ASSERT_TRUE(writeFull(fd.get(), input.data(), input.size(), soon()).ok() ||
                input.size() > auth::kResponseBytes);  // may be refused mid-write
    if (input.size() < auth::kResponseBytes) ::shutdown(fd.get(), SHUT_WR);
    Bytes got;
    EXPECT_TRUE(readUntilClosed(fd.get(), &got, soon()));
    // At most the challenge and a refusal came back, never a store reply.
    EXPECT_LE(got.size(), auth::kChallengeBytes + auth::kVerdictBytes);
    expectServed(server->address(), "after-garbage");
  }
  EXPECT_TRUE(log.has("54 53 54 52 that are not a tutti handshake")) << log.text();
  EXPECT_TRUE(log.has("closed the connection before authenticating")) << log.text();
}

TEST(TcpStoreAuth, ReplayedClientTranscriptIsRefused) {
  LogCapture log;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  const auth::Key k = key(kSecret);
  // An honest connection, played by hand so that its response can be recorded.
  UniqueFd first = tcpConnect(server->address());
  auth::ChallengeBytes challenge{};
  ASSERT_TRUE(readFull(first.get(), challenge.data(), challenge.size(), soon()).ok());
  auto nonce = auth::randomNonce();
  ASSERT_TRUE(nonce.ok());
  auth::ClientHandshake honest(k, auth::Context::store(), *nonce);
  auto recorded = honest.respond(challenge);
  ASSERT_TRUE(recorded.ok());
  ASSERT_TRUE(writeFull(first.get(), recorded->data(), recorded->size(), soon()).ok());
  auth::VerdictBytes verdict{};
  ASSERT_TRUE(readFull(first.get(), verdict.data(), verdict.size(), soon()).ok());
  ASSERT_TRUE(honest.check(verdict).ok());
  // The eavesdropper replays the response on a connection of its own.
  UniqueFd replay = tcpConnect(server->address());
  ASSERT_TRUE(readFull(replay.get(), challenge.data(), challenge.size(), soon()).ok());
  ASSERT_TRUE(writeFull(replay.get(), recorded->data(), recorded->size(), soon()).ok());
  Bytes got;
  EXPECT_TRUE(readUntilClosed(replay.get(), &got, soon()));
  ASSERT_EQ(got.size(), auth::kVerdictBytes);
  auto refusal = auth::decodeVerdict(got);
  ASSERT_TRUE(refusal.ok()) << refusal.status().toString();
  EXPECT_FALSE(refusal->accepted);
  EXPECT_TRUE(log.has("handshake replayed from another connection")) << log.text();
}

TEST(TcpStoreAuth, SilentConnectionIsClosedAtTheTimeout) {
  LogCapture log;
  auto server = startServer("127.0.0.1", std::chrono::milliseconds(100));
  ASSERT_NE(server, nullptr);
  UniqueFd idle = tcpConnect(server->address());
  Bytes got;
  EXPECT_TRUE(readUntilClosed(idle.get(), &got, soon()));
  EXPECT_EQ(got.size(), auth::kChallengeBytes);  // the challenge, then nothing
  EXPECT_TRUE(log.has("did not authenticate within 0.1 s (0 of 72 response bytes")) << log.text();
}

TEST(TcpStoreAuth, FloodOfIdleConnectionsDoesNotLockHonestClientsOut) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  // Three times the handshake slots, all silent, all held open by us.
  std::vector<UniqueFd> flood;
  for (std::size_t i = 0; i < 3 * auth::kMaxPendingHandshakes; ++i) {
    flood.push_back(tcpConnect(server->address()));
    ASSERT_TRUE(flood.back().valid());
  }
  for (int i = 0; i < 3; ++i) expectServed(server->address(), "during-flood-" + std::to_string(i));
}

TEST(TcpStoreAuth, ListenerBindsOnlyTheAddressItIsGiven) {
  // 127.0.0.2 is a loopback address of its own on Linux: a store bound there must not be
  // reachable through 127.0.0.1 on the same port.
  auto server = startServer("127.0.0.2");
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->address().host, "127.0.0.2");
  expectServed(server->address(), "on-127.0.0.2");
  HostPort elsewhere{"127.0.0.1", server->address().port};
  auto fd = connectTcp(elsewhere, Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_FALSE(fd.ok()) << "the store answered on " << elsewhere.toString();
}

}  // namespace
}  // namespace tutti
