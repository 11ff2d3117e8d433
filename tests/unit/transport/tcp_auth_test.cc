// The TCP transport's establishment behind the authentication handshake: ranks as threads
// over loopback, rendezvousing through an in-memory store. A rank with another key is
// refused on both sides with clear errors; a flood of idle connections and strangers on a
// rank's listener does not keep the real ranks out; the listener binds only its address.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/net.h"
#include "transport/tcp/establish.h"
#include "bootstrap/auth_gate.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"
#include "unit/transport/conformance.h"

namespace tutti::tcp {
namespace {

constexpr std::uint64_t kUid = 0x5eed;
constexpr char kSecret[] = "tcp-auth-test-job-secret-0123456789";
constexpr char kOtherSecret[] = "some-other-job-secret-9876543210";

auth::Key key(const char* secret) {
  auto k = auth::Key::fromSecret(secret);
  EXPECT_TRUE(k.ok()) << k.status().toString();
  return k.ok() ? *k : auth::Key();
}

TcpTransport::Options options(int rank, int size, const auth::Key& k, double seconds = 30,
                              const char* bindHost = "127.0.0.1") {
  TcpTransport::Options o;
  o.rank = rank;
  o.size = size;
  o.commUid = kUid;
  o.bindHost = bindHost;
  o.key = k;
  o.deadline = Deadline::afterSeconds(seconds);
  return o;
}

// One rank establishing on its own thread; result() joins it.
class RankThread {
 public:
  RankThread(Store& store, TcpTransport::Options o)
      : thread_([this, &store, o] {
          auto t = TcpTransport::create(store, "a/", o);
          if (t.ok()) transport_ = std::move(t).value();
          else status_ = t.status();
        }) {}
  ~RankThread() {
    if (thread_.joinable()) thread_.join();
  }
  // Joins; the transport, or null with status() saying why.
  std::unique_ptr<TcpTransport> result() {
    thread_.join();
    return std::move(transport_);
  }
  const Status& status() const { return status_; }

 private:
  std::unique_ptr<TcpTransport> transport_;
  Status status_;
  std::thread thread_;
};

// Rank 0's published listener address, once it has published it.
HostPort addressOf(Store& store, int rank) {
  auto addr = store.get("a/addr/" + std::to_string(rank), Deadline::afterSeconds(30));
  EXPECT_TRUE(addr.ok()) << addr.status().toString();
  if (!addr.ok()) return {};
  auto hp = parsePublishedAddress(std::string(addr->begin(), addr->end()));
  EXPECT_TRUE(hp.ok());
  return hp.ok() ? hp->address : HostPort{};
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A rank that never came keeps the ranks above it from connecting (they wait for its
// address): rank 0's timeout names it, and the ranks that did come apart, as waiting.
TEST(TcpAuth, TimeoutNamesTheRankThatNeverPublishedApartFromThoseWaiting) {
  auto store = makeMemoryStore();
  RankThread rank2(*store, options(2, 4, key(kSecret), 3));
  RankThread rank3(*store, options(3, 4, key(kSecret), 3));
  addressOf(*store, 2);
  addressOf(*store, 3);
  RankThread rank0(*store, options(0, 4, key(kSecret), 1));
  EXPECT_EQ(rank0.result(), nullptr);
  EXPECT_EQ(rank0.status().code(), ErrorCode::kTimeout);
  EXPECT_EQ(rank0.status().message(),
            "timed out waiting for authenticated connections with ranks 1, which never "
            "published an address (did they start?); ranks 2 3 joined but wait for them");
  for (RankThread* higher : {&rank2, &rank3}) {
    EXPECT_EQ(higher->result(), nullptr);
    EXPECT_NE(higher->status().message().find(
                  "rank 1 never published its address (did it start?)"),
              std::string::npos)
        << higher->status().toString();
  }
}

TEST(TcpAuth, RankWithAnotherKeyIsRefusedOnBothSides) {
  const std::string logPath = "/tmp/tutti-tcp-auth-test." + std::to_string(::getpid()) + ".log";
  std::remove(logPath.c_str());
  ASSERT_TRUE(log::configure("WARN", "ALL", logPath));
  auto store = makeMemoryStore();
  // Rank 0 gives up after a few seconds: the rank it waits for will never authenticate.
  RankThread rank0(*store, options(0, 2, key(kSecret), 3));
  const HostPort listener = addressOf(*store, 0);
  RankThread rank1(*store, options(1, 2, key(kOtherSecret)));
  EXPECT_EQ(rank1.result(), nullptr);
  EXPECT_EQ(rank1.status().code(), ErrorCode::kProtocolError);
  EXPECT_EQ(rank1.status().peerRank(), 0);
  EXPECT_EQ(rank1.status().message(),
            "authenticating with rank 0 at " + listener.toString() +
                ": refused this process's authentication: the two do not hold the same job "
                "secret");
  EXPECT_EQ(rank0.result(), nullptr);
  EXPECT_EQ(rank0.status().code(), ErrorCode::kTimeout);
  const std::string& why = rank0.status().message();
  EXPECT_EQ(why.rfind("timed out waiting for authenticated connections with ranks 1; refused 1 "
                      "connection that did not authenticate, the latest from 127.0.0.1:",
                      0),
            0u)
      << why;
  EXPECT_NE(why.find("its proof did not verify"), std::string::npos) << why;
  const std::string logged = readFile(logPath);
  EXPECT_NE(logged.find("rank 0 listening on " + listener.toString() +
                        ": refused connection from 127.0.0.1:"),
            std::string::npos)
      << logged;
  log::configure("WARN", "ALL", "");
  std::remove(logPath.c_str());
}

TEST(TcpAuth, FloodOfIdleConnectionsAndStrangersDoesNotKeepTheRanksOut) {
  log::configure("ERROR", "ALL", "");  // hundreds of refusals are expected here
  auto store = makeMemoryStore();
  const auth::Key k = key(kSecret);
  RankThread rank0(*store, options(0, 3, k));
  const HostPort listener = addressOf(*store, 0);
  // Before the real peers arrive: twice the handshake slots of silent connections (as many
  // as the listener's backlog holds beyond the slots), strangers sending noise or an
  // unauthenticated HELLO, and one with the wrong key.
  std::vector<UniqueFd> flood;
  for (std::size_t i = 0; i < 2 * auth::kMaxPendingHandshakes; ++i) {
    auto fd = connectTcp(listener, Deadline::afterSeconds(10));
    ASSERT_TRUE(fd.ok()) << fd.status().toString();
    flood.push_back(std::move(fd).value());
  }
  for (int i = 0; i < 4; ++i) {
    auto fd = connectTcp(listener, Deadline::afterSeconds(10));
    ASSERT_TRUE(fd.ok());
    auto hello = encodeHeader(FrameHeader{FrameType::kHello, 0, kHelloBytes, 0, {}});
    std::vector<std::uint8_t> noise(100, static_cast<std::uint8_t>(i * 37));
    if (i == 0) noise.assign(hello.begin(), hello.end());
    (void)writeFull(fd->get(), noise.data(), noise.size(), Deadline::afterSeconds(5));
    flood.push_back(std::move(fd).value());
  }
  auto wrong = connectTcp(listener, Deadline::afterSeconds(10));
  ASSERT_TRUE(wrong.ok());
  const auth::Key other = key(kOtherSecret);
  Status refused = auth::authenticateToServer(wrong->get(), other,
                                              auth::Context::peerLink(kUid, 0, 3),
                                              Deadline::afterSeconds(30));
  EXPECT_EQ(refused.code(), ErrorCode::kProtocolError) << refused.toString();
  RankThread rank1(*store, options(1, 3, k));
  RankThread rank2(*store, options(2, 3, k));
  std::vector<std::unique_ptr<TcpTransport>> ts;
  ts.push_back(rank0.result());
  ts.push_back(rank1.result());
  ts.push_back(rank2.result());
  EXPECT_TRUE(rank0.status().ok()) << rank0.status().toString();
  EXPECT_TRUE(rank1.status().ok()) << rank1.status().toString();
  EXPECT_TRUE(rank2.status().ok()) << rank2.status().toString();
  ASSERT_TRUE(ts[0] && ts[1] && ts[2]);
  std::vector<Transport*> ranks = {ts[0].get(), ts[1].get(), ts[2].get()};
  EXPECT_EQ(test::exchangeAllPairs(ranks, {0, 1, 4096, 1u << 20}), "");
  log::configure("WARN", "ALL", "");
}

TEST(TcpAuth, StrangerHoldingTheKeyButClaimingAnImpossibleRankIsRefused) {
  // Holding the key gets a connection as far as its HELLO, which is still checked.
  auto store = makeMemoryStore();
  const auth::Key k = key(kSecret);
  RankThread rank0(*store, options(0, 2, k));
  const HostPort listener = addressOf(*store, 0);
  auto fd = connectTcp(listener, Deadline::afterSeconds(10));
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(auth::authenticateToServer(fd->get(), k, auth::Context::peerLink(kUid, 0, 2),
                                         Deadline::afterSeconds(30))
                  .ok());
  auto header = encodeHeader(FrameHeader{FrameType::kHello, 0, kHelloBytes, 0, {}});
  auto hello = encodeHello(Hello{kUid, 0, 2});  // rank 0 never connects to rank 0
  ASSERT_TRUE(writeFull(fd->get(), header.data(), header.size(), Deadline::afterSeconds(5)).ok());
  ASSERT_TRUE(writeFull(fd->get(), hello.data(), hello.size(), Deadline::afterSeconds(5)).ok());
  char byte = 0;
  EXPECT_EQ(readFull(fd->get(), &byte, 1, Deadline::afterSeconds(30)).code(),
            ErrorCode::kPeerFailure);  // refused: closed without an answer
  RankThread rank1(*store, options(1, 2, k));
  auto t0 = rank0.result();
  auto t1 = rank1.result();
  ASSERT_TRUE(t0 && t1) << rank0.status().toString() << rank1.status().toString();
  std::vector<Transport*> ranks = {t0.get(), t1.get()};
  EXPECT_EQ(test::exchangeAllPairs(ranks, {1, 4096}), "");
}

TEST(TcpAuth, ListenerBindsOnlyTheChosenAddress) {
  auto store = makeMemoryStore();
  const auth::Key k = key(kSecret);
  RankThread rank0(*store, options(0, 2, k, 30, "127.0.0.2"));
  const HostPort listener = addressOf(*store, 0);
  EXPECT_EQ(listener.host, "127.0.0.2");
  // The same port on another loopback address is not ours.
  auto elsewhere = connectTcp(HostPort{"127.0.0.1", listener.port},
                              Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_FALSE(elsewhere.ok()) << "rank 0 accepted on 127.0.0.1:" << listener.port;
  RankThread rank1(*store, options(1, 2, k, 30, "127.0.0.2"));
  auto t0 = rank0.result();
  auto t1 = rank1.result();
  ASSERT_TRUE(t0 && t1) << rank0.status().toString() << rank1.status().toString();
  std::vector<Transport*> ranks = {t0.get(), t1.get()};
  EXPECT_EQ(test::exchangeAllPairs(ranks, {8}), "");
}

}  // namespace
}  // namespace tutti::tcp
