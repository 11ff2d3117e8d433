// Store semantics, checked identically on every implementation: MemoryStore, a PrefixStore
// over it, and a TcpStoreClient talking to a TcpStoreServer over loopback.

#include "tutti/store.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store.h"

namespace tutti {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes bytesOf(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string textOf(const Bytes& b) { return std::string(b.begin(), b.end()); }

// Generous bound for waits that are expected to succeed; a hang fails instead of blocking.
Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }
// Short deadline for waits that are expected to time out.
Deadline shortly() { return Deadline::after(std::chrono::milliseconds(50)); }

// Owns whatever an implementation needs to live (the server for TCP) next to the store.
struct StoreUnderTest {
  std::unique_ptr<TcpStoreServer> server;
  std::shared_ptr<Store> store;
  // A second, independent handle onto the same data, as another rank would hold.
  std::function<std::shared_ptr<Store>()> another;
};

struct Impl {
  const char* name;
  std::function<StoreUnderTest()> make;
};

// Names the implementation in ctest's output instead of dumping its bytes.
void PrintTo(const Impl& impl, std::ostream* os) { *os << impl.name; }

StoreUnderTest makeMemory() {
  auto store = makeMemoryStore();
  return {nullptr, store, [store] { return store; }};
}

StoreUnderTest makePrefix() {
  auto base = makeMemoryStore();
  // Noise in a sibling prefix must never be visible through ours.
  EXPECT_TRUE(makePrefixStore("other", base)->set("k", bytesOf("other")).ok());
  return {nullptr, makePrefixStore("job", base), [base] { return makePrefixStore("job", base); }};
}

StoreUnderTest makeTcp() {
  // With a real secret, so that the whole suite runs over authenticated connections.
  auto key = auth::Key::fromSecret("store-test-secret-0123456789");
  EXPECT_TRUE(key.ok()) << key.status().toString();
  if (!key.ok()) return {};
  TcpStoreServer::Options options;
  options.key = *key;
  auto server = TcpStoreServer::start("127.0.0.1", 0, options);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  if (!server.ok()) return {};
  HostPort address = (*server)->address();
  auto client = TcpStoreClient::connect(address, *key, soon());
  EXPECT_TRUE(client.ok()) << client.status().toString();
  if (!client.ok()) return {};
  auto another = [address, key = *key]() -> std::shared_ptr<Store> {
    auto c = TcpStoreClient::connect(address, key, soon());
    EXPECT_TRUE(c.ok()) << c.status().toString();
    return c.ok() ? *c : nullptr;
  };
  return {std::move(server).value(), *client, another};
}

class StoreTest : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    s_ = GetParam().make();
    ASSERT_NE(s_.store, nullptr);
  }
  Store& store() { return *s_.store; }

  StoreUnderTest s_;
};

TEST_P(StoreTest, SetThenGetReturnsTheLatestValue) {
  ASSERT_TRUE(store().set("k", bytesOf("first")).ok());
  ASSERT_TRUE(store().set("k", bytesOf("second")).ok());
  auto v = store().get("k", soon());
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(textOf(*v), "second");
  ASSERT_TRUE(store().set("empty", {}).ok());
  auto e = store().get("empty", shortly());
  ASSERT_TRUE(e.ok()) << e.status().toString();
  EXPECT_TRUE(e->empty());
}

TEST_P(StoreTest, BinaryValuesSurviveExactly) {
  Bytes value(70000);
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<std::uint8_t>(i * 131 + 7);
  ASSERT_TRUE(store().set("blob", value).ok());
  auto v = store().get("blob", soon());
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, value);
}

TEST_P(StoreTest, PresentKeyIsReturnedEvenPastTheDeadline) {
  ASSERT_TRUE(store().set("k", bytesOf("v")).ok());
  auto v = store().get("k", Deadline::after(std::chrono::seconds(-1)));
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(textOf(*v), "v");
  EXPECT_TRUE(store().wait({"k"}, Deadline::after(std::chrono::seconds(-1))).ok());
}

TEST_P(StoreTest, GetOfAMissingKeyTimesOutNamingIt) {
  auto v = store().get("never/set", shortly());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kTimeout);
  EXPECT_NE(v.status().message().find("never/set"), std::string::npos) << v.status().message();
  // The store stays usable after a timeout.
  ASSERT_TRUE(store().set("after", bytesOf("x")).ok());
  EXPECT_TRUE(store().get("after", soon()).ok());
}

TEST_P(StoreTest, BlockingGetIsWokenBySetFromAnotherThread) {
  auto other = s_.another();
  ASSERT_NE(other, nullptr);
  Result<Bytes> got = Status(ErrorCode::kInternal, "not run");
  std::thread getter([&] { got = store().get("late", soon()); });
  ASSERT_TRUE(other->set("late", bytesOf("here")).ok());
  getter.join();
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(textOf(*got), "here");
}

TEST_P(StoreTest, WaitTimesOutNamingOnlyTheMissingKeys) {
  ASSERT_TRUE(store().set("present-key", bytesOf("1")).ok());
  Status s = store().wait({"present-key", "missing-1", "missing-2"}, shortly());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kTimeout);
  EXPECT_NE(s.message().find("missing-1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("missing-2"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("present-key"), std::string::npos) << s.message();
}

TEST_P(StoreTest, WaitReturnsOnceEveryKeyIsSet) {
  EXPECT_TRUE(store().wait({}, shortly()).ok());
  auto other = s_.another();
  ASSERT_NE(other, nullptr);
  Status waited = Status(ErrorCode::kInternal, "not run");
  std::thread waiter([&] { waited = store().wait({"w/0", "w/1", "w/2"}, soon()); });
  for (int i = 2; i >= 0; --i) ASSERT_TRUE(other->set("w/" + std::to_string(i), bytesOf("x")).ok());
  waiter.join();
  EXPECT_TRUE(waited.ok()) << waited.toString();
}

TEST_P(StoreTest, AddCountsInDecimal) {
  auto a = store().add("n", 5);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(*a, 5);
  a = store().add("n", -12);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(*a, -7);
  auto v = store().get("n", soon());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(textOf(*v), "-7");
  ASSERT_TRUE(store().set("m", bytesOf("40")).ok());
  a = store().add("m", 2);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 42);
  // add sets the key, so it wakes waiters like set does.
  EXPECT_TRUE(store().wait({"n", "m"}, shortly()).ok());
}

TEST_P(StoreTest, AddOnNonIntegerOrOverflowIsInvalidArgument) {
  ASSERT_TRUE(store().set("text", bytesOf("twelve")).ok());
  auto a = store().add("text", 1);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("text"), std::string::npos) << a.status().message();
  auto v = store().get("text", soon());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(textOf(*v), "twelve");  // unchanged
  ASSERT_TRUE(store().add("big", INT64_MAX).ok());
  a = store().add("big", 1);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
  // The connection (for TCP) survives an error reply.
  EXPECT_TRUE(store().add("fine", 1).ok());
}

TEST_P(StoreTest, ConcurrentAddsFromManyThreadsAreExact) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 200;
  std::vector<std::shared_ptr<Store>> handles;
  for (int t = 0; t < kThreads; ++t) handles.push_back(s_.another());
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i)
        if (!handles[t] || !handles[t]->add("counter", t + 1).ok()) ++failures[t];
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  auto total = store().add("counter", 0);
  ASSERT_TRUE(total.ok()) << total.status().toString();
  EXPECT_EQ(*total, kAdds * kThreads * (kThreads + 1) / 2);
}

TEST_P(StoreTest, BoundsAreInvalidArgument) {
  std::string longKey(Store::kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(store().set(longKey, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store().get(longKey, shortly()).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store().add(longKey, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store().wait({"ok", longKey}, shortly()).code(), ErrorCode::kInvalidArgument);
  std::vector<std::string> tooMany(Store::kMaxKeysPerWait + 1, "k");
  EXPECT_EQ(store().wait(tooMany, shortly()).code(), ErrorCode::kInvalidArgument);
  Status big = store().set("big", Bytes(Store::kMaxValueBytes + 1));
  EXPECT_EQ(big.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(big.message().find("exceeds"), std::string::npos) << big.message();
  // Nothing of the refused calls was stored, and the store still works.
  EXPECT_EQ(store().get("big", shortly()).status().code(), ErrorCode::kTimeout);
  EXPECT_TRUE(store().set("ok", bytesOf("1")).ok());
}

TEST_P(StoreTest, LongestKeyIsAccepted) {
  // For the prefix store the bound applies to the prefixed key, so leave room for "job/".
  std::string key(Store::kMaxKeyBytes - 4, 'k');
  ASSERT_TRUE(store().set(key, bytesOf("v")).ok());
  EXPECT_TRUE(store().get(key, soon()).ok());
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreTest,
                         ::testing::Values(Impl{"Memory", makeMemory}, Impl{"Prefix", makePrefix},
                                           Impl{"Tcp", makeTcp}),
                         [](const ::testing::TestParamInfo<Impl>& param) {
                           return param.param.name;
                         });

TEST(PrefixStore, KeysLiveUnderThePrefixInTheBase) {
  auto base = makeMemoryStore();
  auto a = makePrefixStore("a", base);
  auto b = makePrefixStore("b", base);
  ASSERT_TRUE(a->set("k", bytesOf("from a")).ok());
  ASSERT_TRUE(b->set("k", bytesOf("from b")).ok());
  auto raw = base->get("a/k", soon());
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(textOf(*raw), "from a");
  auto viaB = b->get("k", soon());
  ASSERT_TRUE(viaB.ok());
  EXPECT_EQ(textOf(*viaB), "from b");
  EXPECT_EQ(a->get("b/k", shortly()).status().code(), ErrorCode::kTimeout);
  // Prefixes nest.
  auto nested = makePrefixStore("inner", a);
  ASSERT_TRUE(nested->add("n", 3).ok());
  auto n = base->get("a/inner/n", soon());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(textOf(*n), "3");
}

TEST(PrefixStore, KeyBoundAppliesAfterPrefixing) {
  auto store = makePrefixStore("p", makeMemoryStore());
  std::string fits(Store::kMaxKeyBytes - 2, 'k');
  std::string tooLong(Store::kMaxKeyBytes - 1, 'k');
  EXPECT_TRUE(store->set(fits, {}).ok());
  Status s = store->set(tooLong, {});
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.toString();
}

}  // namespace
}  // namespace tutti
