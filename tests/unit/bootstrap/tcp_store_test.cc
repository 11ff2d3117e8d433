// TcpStoreServer and TcpStoreClient over loopback: what the shared Store suite cannot show.
// Raw sockets play misbehaving clients, and a scripted fake server plays a misbehaving store.
// These run with the no-secret key (a default auth::Key): what is checked here is the store
// protocol behind the handshake; tcp_store_auth_test.cc checks the handshake itself.

#include "bootstrap/tcp_store.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/macros.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/bounded_store.h"
#include "bootstrap/store_protocol.h"

namespace tutti {
namespace {

using Bytes = std::vector<std::uint8_t>;
using storeproto::Message;
using storeproto::Opcode;

Bytes bytesOf(const std::string& s) { return Bytes(s.begin(), s.end()); }
Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

std::unique_ptr<TcpStoreServer> startServer(int maxClients = TcpStoreServer::kMaxClients) {
  TcpStoreServer::Options options;
  options.maxClients = maxClients;
  auto server = TcpStoreServer::start("127.0.0.1", 0, options);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::shared_ptr<TcpStoreClient> connectClient(
    const HostPort& address, std::chrono::milliseconds opTimeout = std::chrono::seconds(30)) {
  auto client = TcpStoreClient::connect(address, auth::Key(), soon(), opTimeout);
  EXPECT_TRUE(client.ok()) << client.status().toString();
  return client.ok() ? *client : nullptr;
}

// A TCP connection that has not authenticated.
UniqueFd tcpConnect(const HostPort& address) {
  auto fd = connectTcp(address, soon());
  EXPECT_TRUE(fd.ok()) << fd.status().toString();
  return fd.ok() ? std::move(fd).value() : UniqueFd();
}

// A raw connection past the handshake: what it sends next is read as store requests.
UniqueFd rawConnect(const HostPort& address) {
  UniqueFd fd = tcpConnect(address);
  if (!fd.valid()) return fd;
  Status s = auth::authenticateToServer(fd.get(), auth::Key(), auth::Context::store(), soon());
  EXPECT_TRUE(s.ok()) << s.toString();
  return s.ok() ? std::move(fd) : UniqueFd();
}

Status sendBytes(int fd, const Bytes& bytes) {
  return writeFull(fd, bytes.data(), bytes.size(), soon());
}

Bytes encoded(const Message& m) {
  auto bytes = storeproto::encode(m);
  EXPECT_TRUE(bytes.ok()) << bytes.status().toString();
  return bytes.ok() ? *bytes : Bytes{};
}

Result<Message> readMessage(int fd) {
  std::uint8_t head[storeproto::kHeaderBytes];
  Status s = readFull(fd, head, sizeof(head), soon());
  if (!s.ok()) return s;
  auto header = storeproto::decodeHeader(head);
  if (!header.ok()) return header.status();
  Bytes payload(header->payloadBytes);
  s = readFull(fd, payload.data(), payload.size(), soon());
  if (!s.ok()) return s;
  return storeproto::decodePayload(*header, payload);
}

// True when the peer closes `fd` (EOF or reset) before the generous deadline, after
// sending at most a few replies (which are read and discarded).
bool closedByPeer(int fd) {
  Deadline deadline = soon();
  std::uint8_t buffer[256];
  for (int i = 0; i < 16; ++i) {
    Status s = readFull(fd, buffer, sizeof(buffer), deadline);
    if (s.code() == ErrorCode::kPeerFailure) return true;
    if (!s.ok()) return false;
  }
  return false;
}

// Plays the server's side of the handshake on a blocking exchange bounded by soon().
Status serveHandshake(int fd, const auth::Key& key) {
  auto nonce = auth::randomNonce();
  if (!nonce.ok()) return nonce.status();
  auth::ServerHandshake handshake(key, auth::Context::store(), *nonce);
  const auth::ChallengeBytes challenge = handshake.challenge();
  TUTTI_RETURN_IF_ERROR(writeFull(fd, challenge.data(), challenge.size(), soon()));
  auth::ResponseBytes response{};
  TUTTI_RETURN_IF_ERROR(readFull(fd, response.data(), response.size(), soon()));
  auth::VerdictBytes verdict{};
  Status judged = handshake.answer(response, &verdict);
  TUTTI_RETURN_IF_ERROR(writeFull(fd, verdict.data(), verdict.size(), soon()));
  return judged;
}

TEST(TcpStore, AddressIsTheBoundPortAndTheGivenHost) {
  auto any = TcpStoreServer::start("", 0, {});
  ASSERT_TRUE(any.ok()) << any.status().toString();
  EXPECT_EQ((*any)->address().host, "127.0.0.1");
  EXPECT_NE((*any)->address().port, 0);
  auto client = connectClient((*any)->address());
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->set("k", bytesOf("v")).ok());

  auto loop = startServer();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->address().host, "127.0.0.1");
  EXPECT_NE(loop->address().port, (*any)->address().port);
}

TEST(TcpStore, LocalAddressIsTheClientsEndOfTheConnection) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectClient(server->address());
  ASSERT_NE(client, nullptr);
  HostPort local = client->localAddress();
  EXPECT_EQ(local.host, "127.0.0.1");
  EXPECT_NE(local.port, 0);
  EXPECT_NE(local.port, server->address().port);
}

TEST(TcpStore, ServerAnswersTimeoutNamingTheKeysStillMissing) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectClient(server->address());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->set("here", bytesOf("1")).ok());
  UniqueFd raw = rawConnect(server->address());
  ASSERT_TRUE(
      sendBytes(raw.get(), encoded(Message::wait(77, {"here", "gone/a", "gone/b"}, 20))).ok());
  auto reply = readMessage(raw.get());
  ASSERT_TRUE(reply.ok()) << reply.status().toString();
  EXPECT_EQ(reply->opcode, Opcode::kTimeout);
  EXPECT_EQ(reply->requestId, 77u);
  EXPECT_EQ(reply->keys, (std::vector<std::string>{"gone/a", "gone/b"}));
  // The connection stays usable after a TIMEOUT.
  ASSERT_TRUE(sendBytes(raw.get(), encoded(Message::get(78, "here", 0))).ok());
  reply = readMessage(raw.get());
  ASSERT_TRUE(reply.ok()) << reply.status().toString();
  EXPECT_EQ(reply->opcode, Opcode::kValue);
  EXPECT_EQ(reply->value, bytesOf("1"));
}

TEST(TcpStore, ParkedGetWithoutTimeoutIsAnsweredBySetFromAnotherClient) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  UniqueFd raw = rawConnect(server->address());
  ASSERT_TRUE(sendBytes(raw.get(), encoded(Message::get(5, "later", storeproto::kNoTimeout))).ok());
  auto client = connectClient(server->address());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->set("later", bytesOf("now")).ok());
  auto reply = readMessage(raw.get());
  ASSERT_TRUE(reply.ok()) << reply.status().toString();
  EXPECT_EQ(reply->opcode, Opcode::kValue);
  EXPECT_EQ(reply->requestId, 5u);
  EXPECT_EQ(reply->value, bytesOf("now"));
}

TEST(TcpStore, PipelinedRequestsAreServedInOrder) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  UniqueFd raw = rawConnect(server->address());
  Bytes burst;
  for (const Message& m : {Message::set(1, "x", bytesOf("1")), Message::get(2, "missing", 20),
                           Message::add(3, "x", 41), Message::get(4, "x", 0)}) {
    Bytes one = encoded(m);
    burst.insert(burst.end(), one.begin(), one.end());
  }
  ASSERT_TRUE(sendBytes(raw.get(), burst).ok());
  std::vector<Opcode> want = {Opcode::kOk, Opcode::kTimeout, Opcode::kInt, Opcode::kValue};
  for (std::uint32_t id = 1; id <= 4; ++id) {
    auto reply = readMessage(raw.get());
    ASSERT_TRUE(reply.ok()) << reply.status().toString();
    EXPECT_EQ(reply->requestId, id);
    EXPECT_EQ(reply->opcode, want[id - 1]) << storeproto::opcodeName(reply->opcode);
    if (id == 3) {
      EXPECT_EQ(reply->integer, 42);
    }
    if (id == 4) {
      EXPECT_EQ(reply->value, bytesOf("42"));
    }
  }
}

TEST(TcpStore, ClientGivesUpOnAListenerThatNeverChallenges) {
  // A listener nobody accepts on: connections complete in the backlog, and no challenge
  // ever comes.
  auto silent = listenTcp("127.0.0.1", 0);
  ASSERT_TRUE(silent.ok()) << silent.status().toString();
  auto address = localAddress(silent->get());
  ASSERT_TRUE(address.ok());
  auto client = TcpStoreClient::connect(*address, auth::Key(),
                                        Deadline::after(std::chrono::milliseconds(50)));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), ErrorCode::kTimeout) << client.status().toString();
  EXPECT_EQ(client.status().message(),
            "connecting to the store at " + address->toString() +
                ": did not complete the authentication handshake before the deadline");
}

// A fake store that authenticates every connection with the no-secret key and then answers
// each request with the next scripted bytes, whichever connection it arrives on: when the
// client drops a connection (as it must after a bad reply) the fake accepts the next one
// and carries on with the script.
class FakeServer {
 public:
  using Script = std::function<Bytes(const Message& request)>;

  explicit FakeServer(std::vector<Script> scripts) : scripts_(std::move(scripts)) {
    auto fd = listenTcp("127.0.0.1", 0);
    EXPECT_TRUE(fd.ok()) << fd.status().toString();
    listener_ = std::move(fd).value();
    address_ = *localAddress(listener_.get());
    thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() { thread_.join(); }
  HostPort address() const { return address_; }

 private:
  void run() {
    std::size_t next = 0;
    while (next < scripts_.size()) {
      pollfd pfd{listener_.get(), POLLIN, 0};
      if (::poll(&pfd, 1, 30000) != 1) return;  // bounded: the test has failed by then
      auto conn = acceptTcp(listener_.get());
      if (!conn.ok()) return;
      if (!conn->valid()) continue;
      if (!serveHandshake(conn->get(), auth::Key()).ok()) continue;
      while (next < scripts_.size()) {
        auto request = readMessage(conn->get());
        if (!request.ok()) break;  // the client closed this connection
        if (!sendBytes(conn->get(), scripts_[next++](*request)).ok()) break;
      }
      // Script done: hold the last connection open until the client leaves, so that it
      // sees what the last script did, not a close.
      if (next == scripts_.size()) (void)readMessage(conn->get());
    }
  }

  std::vector<Script> scripts_;
  UniqueFd listener_;
  HostPort address_;
  std::thread thread_;
};

TEST(TcpStore, ClientGivesUpWhenTheServerNeverAnswers) {
  // The fake authenticates, then lets every request vanish.
  std::vector<FakeServer::Script> silence(3, [](const Message&) { return Bytes{}; });
  FakeServer fake(silence);
  auto client = connectClient(fake.address(), std::chrono::milliseconds(50));
  ASSERT_NE(client, nullptr);
  auto v = client->get("k", Deadline::after(std::chrono::milliseconds(50)));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kTimeout) << v.status().toString();
  EXPECT_NE(v.status().message().find("did not answer"), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find("k"), std::string::npos);
  Status s = client->set("k", bytesOf("v"));  // reconnects, then times out again
  EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.toString();
  auto a = client->add("k", 1);
  EXPECT_EQ(a.status().code(), ErrorCode::kTimeout) << a.status().toString();
}

// A store that authenticates every connection and then never answers (a stopped server).
class SilentServer {
 public:
  SilentServer() {
    auto fd = listenTcp("127.0.0.1", 0);
    EXPECT_TRUE(fd.ok()) << fd.status().toString();
    listener_ = std::move(fd).value();
    address_ = *localAddress(listener_.get());
    thread_ = std::thread([this] {
      std::vector<UniqueFd> open;  // authenticated, never answered
      while (!stop_.load()) {
        pollfd p{listener_.get(), POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) continue;
        auto accepted = acceptTcp(listener_.get());
        if (!accepted.ok() || !accepted->valid()) continue;
        if (serveHandshake(accepted->get(), auth::Key()).ok()) open.push_back(std::move(accepted).value());
      }
    });
  }
  ~SilentServer() {
    stop_.store(true);
    thread_.join();
  }
  HostPort address() const { return address_; }

 private:
  UniqueFd listener_;
  HostPort address_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(TcpStore, SetBeforeIsBoundedByItsDeadlineNotTheOperationTimeout) {
  SilentServer silent;
  const HostPort address = silent.address();
  // The operation timeout would keep a plain set() waiting for a minute.
  auto client = connectClient(address, std::chrono::seconds(60));
  ASSERT_NE(client, nullptr);
  Deadline outer = Deadline::after(std::chrono::seconds(30));
  Status s = detail::setBefore(*client, "k", bytesOf("v"), Deadline::after(std::chrono::milliseconds(50)));
  EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.toString();
  EXPECT_NE(s.message().find("did not answer"), std::string::npos) << s.message();
  EXPECT_FALSE(outer.expired());
  // Through a prefix view too: the prefixed key is what the server would have seen.
  auto view = makePrefixStore("job", client);
  s = detail::setBefore(*view, "k", bytesOf("v"), Deadline::after(std::chrono::milliseconds(50)));
  EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.toString();
  EXPECT_NE(s.message().find("job/k"), std::string::npos) << s.message();
  EXPECT_FALSE(outer.expired());
}

TEST(TcpStore, SetBeforeStoresLikeSet) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectClient(server->address());
  ASSERT_NE(client, nullptr);
  auto view = makePrefixStore("job", client);
  ASSERT_TRUE(detail::setBefore(*view, "k", bytesOf("v"), soon()).ok());
  auto v = client->get("job/k", soon());
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, bytesOf("v"));
  // A store without the bound (the in-memory one never blocks) is simply set.
  auto memory = makeMemoryStore();
  ASSERT_TRUE(detail::setBefore(*memory, "k", bytesOf("w"), soon()).ok());
  EXPECT_EQ(*memory->get("k", soon()), bytesOf("w"));
}

TEST(TcpStore, StoppingTheServerFailsAPendingWait) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  HostPort address = server->address();
  auto client = connectClient(address, std::chrono::milliseconds(100));
  ASSERT_NE(client, nullptr);
  Status waited = Status(ErrorCode::kInternal, "not run");
  std::thread waiter([&] { waited = client->wait({"never"}, soon()); });
  server->stop();
  waiter.join();
  EXPECT_EQ(waited.code(), ErrorCode::kPeerFailure) << waited.toString();
  EXPECT_NE(waited.message().find("store at " + address.toString() + " closed the connection"),
            std::string::npos)
      << waited.message();
  server->stop();  // idempotent
  // Nobody listens any more: the next call's reconnect is refused, which fails it at once.
  Status s = client->set("k", {});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(address.toString()), std::string::npos) << s.toString();
}

// A store that answered and then refuses connections (its server's process exited) fails
// every later call at once, whatever the timeout: waiting cannot bring it back.
TEST(TcpStore, StoreGoneFailsTheNextCallsAtOnceNamingIt) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  const HostPort address = server->address();
  // A five-minute operation timeout: the test's own bound ends far sooner.
  auto client = TcpStoreClient::connect(address, auth::Key(), soon(), std::chrono::minutes(5),
                                        "rank 0");
  ASSERT_TRUE(client.ok()) << client.status().toString();
  ASSERT_TRUE((*client)->set("k", bytesOf("v")).ok());
  server->stop();
  const std::string gone =
      "the store at " + address.toString() + " (served by rank 0) is gone: connection refused";
  // The first call may still find the old connection, closed under it.
  Status s = (*client)->set("k", bytesOf("w"));
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure) << s.toString();
  if (s.message() != gone) s = (*client)->set("k", bytesOf("w"));
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure) << s.toString();
  EXPECT_EQ(s.message(), gone);
  auto added = (*client)->add("n", 1);
  EXPECT_EQ(added.status().message(), gone);
  auto view = makePrefixStore("job", *client);
  added = detail::addBefore(*view, "n", 1, Deadline::after(std::chrono::minutes(5)));
  EXPECT_EQ(added.status().message(), gone);
  auto got = (*client)->get("k", Deadline::after(std::chrono::minutes(5)));
  EXPECT_EQ(got.status().message(), gone);
}

TEST(TcpStore, AddBeforeAddsLikeAdd) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectClient(server->address());
  ASSERT_NE(client, nullptr);
  auto view = makePrefixStore("job", client);
  auto sum = detail::addBefore(*view, "n", 2, soon());
  ASSERT_TRUE(sum.ok()) << sum.status().toString();
  EXPECT_EQ(*sum, 2);
  sum = client->add("job/n", 3);
  ASSERT_TRUE(sum.ok()) << sum.status().toString();
  EXPECT_EQ(*sum, 5);
  auto memory = makeMemoryStore();
  EXPECT_EQ(*detail::addBefore(*memory, "n", 7, soon()), 7);
}

// Each of these byte strings is a client misbehaving in a different way.
std::vector<std::pair<const char*, Bytes>> badInputs() {
  std::vector<std::pair<const char*, Bytes>> out;
  out.emplace_back("http", bytesOf("GET / HTTP/1.1\r\nHost: store\r\n\r\n"));
  Bytes b = encoded(Message::get(1, "k", 0));
  b[4] = 9;
  out.emplace_back("version", b);
  b = encoded(Message::get(1, "k", 0));
  b[12] = b[13] = b[14] = b[15] = 0xff;
  out.emplace_back("oversize", b);
  out.emplace_back("reply-opcode", encoded(Message::ok(1)));
  b = encoded(Message::set(1, "k", bytesOf("v")));
  b[storeproto::kHeaderBytes + 3] = 200;  // key length beyond the payload
  out.emplace_back("field-length", b);
  b = encoded(Message::set(1, "k", bytesOf("v")));
  Bytes tail = encoded(Message::get(2, "k", 0));
  tail[0] = 'X';  // a good message, then a bad one
  b.insert(b.end(), tail.begin(), tail.end());
  out.emplace_back("second-message", b);
  return out;
}

TEST(TcpStore, MisbehavingClientsAreDisconnectedWhileOthersKeepWorking) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto good = connectClient(server->address());
  ASSERT_NE(good, nullptr);
  ASSERT_TRUE(good->set("before", bytesOf("1")).ok());
  // A good client parked on a key must survive the bad ones too.
  auto parked = connectClient(server->address());
  ASSERT_NE(parked, nullptr);
  Result<Bytes> late = Status(ErrorCode::kInternal, "not run");
  std::thread waiter([&] { late = parked->get("late", soon()); });
  for (const auto& [name, bytes] : badInputs()) {
    SCOPED_TRACE(name);
    UniqueFd raw = rawConnect(server->address());
    ASSERT_TRUE(sendBytes(raw.get(), bytes).ok());
    EXPECT_TRUE(closedByPeer(raw.get()));
    EXPECT_TRUE(good->add("served", 1).ok());
  }
  ASSERT_TRUE(good->set("late", bytesOf("2")).ok());
  waiter.join();
  ASSERT_TRUE(late.ok()) << late.status().toString();
  EXPECT_EQ(late.value(), bytesOf("2"));
  auto before = good->get("before", soon());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, bytesOf("1"));
}

TEST(TcpStore, ConnectionsBeyondTheLimitAreClosedAtOnce) {
  auto server = startServer(3);
  ASSERT_NE(server, nullptr);
  std::vector<std::shared_ptr<TcpStoreClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(connectClient(server->address()));
    ASSERT_NE(clients.back(), nullptr);
    // A reply proves the server accepted this one before the next connects.
    ASSERT_TRUE(clients.back()->add("n", 1).ok());
  }
  UniqueFd extra = tcpConnect(server->address());
  EXPECT_TRUE(closedByPeer(extra.get()));
  for (auto& c : clients) EXPECT_TRUE(c->add("n", 1).ok());
  // Once a client leaves there is room again (its departure is noticed asynchronously, so
  // retry until the generous deadline).
  clients.pop_back();
  Deadline deadline = soon();
  bool served = false;
  while (!served && !deadline.expired()) {
    auto c = TcpStoreClient::connect(server->address(), auth::Key(), deadline,
                                     std::chrono::seconds(5));
    served = c.ok() && (*c)->add("n", 1).ok();
  }
  EXPECT_TRUE(served);
}

TEST(TcpStore, LargestKeyAndValueCrossTheWire) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectClient(server->address());
  ASSERT_NE(client, nullptr);
  std::string key(Store::kMaxKeyBytes, 'k');
  Bytes value(Store::kMaxValueBytes);
  for (std::size_t i = 0; i < value.size(); i += 4093)
    value[i] = static_cast<std::uint8_t>(i >> 12);
  ASSERT_TRUE(client->set(key, value).ok());
  auto back = client->get(key, soon());
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_TRUE(*back == value);
}

TEST(TcpStore, BadRepliesAreProtocolErrorsAndTheClientReconnects) {
  std::vector<FakeServer::Script> scripts = {
      [](const Message&) { return bytesOf("HTTP/1.1 400 Bad Request\r\n\r\n"); },
      [](const Message& r) { return encoded(Message::valueReply(r.requestId + 1, {})); },
      [](const Message& r) { return encoded(Message::get(r.requestId, "k", 0)); },
      [](const Message& r) { return encoded(Message::intReply(r.requestId, 3)); },
      [](const Message& r) {
        Bytes b = encoded(Message::valueReply(r.requestId, {}));
        b[12] = b[13] = b[14] = b[15] = 0xff;  // declares 4 GiB
        return b;
      },
      [](const Message& r) {
        return encoded(
            Message::errorReply(r.requestId, ErrorCode::kInvalidArgument, "refused by fake"));
      },
      [](const Message& r) { return encoded(Message::valueReply(r.requestId, bytesOf("fine"))); },
  };
  FakeServer fake(scripts);
  auto client = connectClient(fake.address());
  ASSERT_NE(client, nullptr);
  const char* expected[] = {"bad magic", "reply to request", "request where a reply belongs",
                            "answered GET with INT", "above the cap"};
  for (const char* what : expected) {
    SCOPED_TRACE(what);
    auto v = client->get("k", soon());
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), ErrorCode::kProtocolError) << v.status().toString();
    EXPECT_NE(v.status().message().find(what), std::string::npos) << v.status().message();
  }
  auto refused = client->get("k", soon());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("refused by fake"), std::string::npos);
  auto fine = client->get("k", soon());
  ASSERT_TRUE(fine.ok()) << fine.status().toString();
  EXPECT_EQ(*fine, bytesOf("fine"));
}

}  // namespace
}  // namespace tutti
