// The authentication handshake's pure part (auth.h): messages, proofs and their checks, and
// where the job secret comes from. No sockets here; auth_gate_test.cc and
// tcp_store_auth_test.cc run the same handshake over real connections.

#include "bootstrap/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace tutti::auth {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr char kSecretA[] = "0123456789abcdef0123456789abcdef";
constexpr char kSecretB[] = "fedcba9876543210fedcba9876543210";

Key key(const char* secret) {
  auto k = Key::fromSecret(secret);
  EXPECT_TRUE(k.ok()) << k.status().toString();
  return k.ok() ? *k : Key();
}

Nonce nonceOf(std::uint8_t fill) {
  Nonce n;
  n.fill(fill);
  return n;
}

// One whole handshake between a server with `serverKey` and a client with `clientKey`:
// the server's judgement of the response and the client's of the verdict.
struct Outcome {
  Status server;
  Status client;
};

Outcome runHandshake(const Key& serverKey, const Context& serverContext, const Key& clientKey,
                     const Context& clientContext, std::uint8_t serverFill = 1,
                     std::uint8_t clientFill = 2) {
  ServerHandshake server(serverKey, serverContext, nonceOf(serverFill));
  ClientHandshake client(clientKey, clientContext, nonceOf(clientFill));
  Result<ResponseBytes> response = client.respond(server.challenge());
  EXPECT_TRUE(response.ok()) << response.status().toString();
  VerdictBytes verdict{};
  Outcome out;
  out.server = server.answer(*response, &verdict);
  out.client = client.check(verdict);
  return out;
}

TEST(AuthHandshake, SameKeyAndContextAuthenticateBothWays) {
  for (const Context& ctx : {Context::store(), Context::peerLink(0x1234, 0, 4)}) {
    SCOPED_TRACE(ctx.toString());
    Outcome out = runHandshake(key(kSecretA), ctx, key(kSecretA), ctx);
    EXPECT_TRUE(out.server.ok()) << out.server.toString();
    EXPECT_TRUE(out.client.ok()) << out.client.toString();
  }
  // Two processes without a secret also agree: the no-secret key is the same everywhere.
  Outcome open = runHandshake(Key(), Context::store(), Key(), Context::store());
  EXPECT_TRUE(open.server.ok() && open.client.ok());
}

TEST(AuthHandshake, WrongSecretIsRefusedAndTheClientIsToldWhy) {
  Outcome out = runHandshake(key(kSecretA), Context::store(), key(kSecretB), Context::store());
  EXPECT_EQ(out.server.code(), ErrorCode::kProtocolError);
  EXPECT_EQ(out.server.message(),
            "its proof did not verify (a different job secret, a handshake replayed from "
            "another connection, or one meant for another service)");
  EXPECT_EQ(out.client.code(), ErrorCode::kProtocolError);
  EXPECT_EQ(out.client.message(),
            "refused this process's authentication: the two do not hold the same job secret");
}

TEST(AuthHandshake, ClientWithoutASecretIsToldToSetOne) {
  Outcome out = runHandshake(key(kSecretA), Context::store(), Key(), Context::store());
  EXPECT_FALSE(out.server.ok());
  EXPECT_EQ(out.client.message(),
            "refused this process's authentication: the two do not hold the same job secret "
            "(this process has none: give it the job's secret through TUTTI_SECRET or "
            "TUTTI_SECRET_FILE)");
}

TEST(AuthHandshake, ProofsAreBoundToTheirPurposeAndPeers) {
  const Key k = key(kSecretA);
  const Context link = Context::peerLink(0x1234, 1, 4);
  const Context others[] = {Context::store(), Context::peerLink(0x1235, 1, 4),
                            Context::peerLink(0x1234, 2, 4), Context::peerLink(0x1234, 1, 5)};
  for (const Context& other : others) {
    SCOPED_TRACE(other.toString());
    Outcome out = runHandshake(k, link, k, other);
    EXPECT_EQ(out.server.code(), ErrorCode::kProtocolError);
    EXPECT_FALSE(out.client.ok());
  }
}

TEST(AuthHandshake, ReplayedResponseFromAnotherConnectionIsRefused) {
  const Key k = key(kSecretA);
  // Connection 1: an honest exchange, recorded by an eavesdropper.
  ServerHandshake first(k, Context::store(), nonceOf(1));
  ClientHandshake client(k, Context::store(), nonceOf(2));
  Result<ResponseBytes> recorded = client.respond(first.challenge());
  ASSERT_TRUE(recorded.ok());
  VerdictBytes verdict{};
  ASSERT_TRUE(first.answer(*recorded, &verdict).ok());
  // Connection 2: the server's fresh nonce makes the recorded response worthless.
  ServerHandshake second(k, Context::store(), nonceOf(3));
  VerdictBytes refusal{};
  Status replayed = second.answer(*recorded, &refusal);
  EXPECT_EQ(replayed.code(), ErrorCode::kProtocolError);
  EXPECT_NE(replayed.message().find("replayed"), std::string::npos) << replayed.message();
  Result<Verdict> decoded = decodeVerdict(refusal);
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(decoded->accepted);
}

TEST(AuthHandshake, ReplayedVerdictDoesNotConvinceAnotherClient) {
  const Key k = key(kSecretA);
  ServerHandshake server(k, Context::store(), nonceOf(1));
  ClientHandshake honest(k, Context::store(), nonceOf(2));
  VerdictBytes recorded{};
  ASSERT_TRUE(server.answer(*honest.respond(server.challenge()), &recorded).ok());
  // A fake server replays the challenge and the verdict to a client with its own nonce.
  ClientHandshake victim(k, Context::store(), nonceOf(9));
  ASSERT_TRUE(victim.respond(server.challenge()).ok());
  Status s = victim.check(recorded);
  EXPECT_EQ(s.code(), ErrorCode::kProtocolError);
  EXPECT_EQ(s.message(),
            "accepted this process but could not prove that it holds the job secret: it is not "
            "part of this job");
}

TEST(AuthHandshake, ServerWithoutTheSecretCannotPassForGenuine) {
  // It accepts anybody, but its proof is made with the key it has.
  const Key real = key(kSecretA);
  const Key fake = key(kSecretB);
  ClientHandshake client(real, Context::store(), nonceOf(2));
  auto challenge = encodeChallenge(Challenge{nonceOf(1)});
  ASSERT_TRUE(client.respond(challenge).ok());
  Verdict lie{true, serverProof(fake, Context::store(), nonceOf(1), nonceOf(2))};
  EXPECT_EQ(client.check(encodeVerdict(lie)).code(), ErrorCode::kProtocolError);
  // Nor can it turn the client's own proof around: the labels differ.
  Verdict reflected{true, clientProof(real, Context::store(), nonceOf(1), nonceOf(2))};
  EXPECT_EQ(client.check(encodeVerdict(reflected)).code(), ErrorCode::kProtocolError);
}

TEST(AuthMessages, RoundTrip) {
  Challenge c{nonceOf(7)};
  auto cd = decodeChallenge(encodeChallenge(c));
  ASSERT_TRUE(cd.ok());
  EXPECT_EQ(cd->serverNonce, c.serverNonce);
  Response r{nonceOf(8), clientProof(Key(), Context::store(), nonceOf(7), nonceOf(8))};
  auto rd = decodeResponse(encodeResponse(r));
  ASSERT_TRUE(rd.ok());
  EXPECT_EQ(rd->clientNonce, r.clientNonce);
  EXPECT_EQ(rd->proof, r.proof);
  for (bool accepted : {true, false}) {
    Verdict v{accepted, accepted ? r.proof : Mac{}};
    auto vd = decodeVerdict(encodeVerdict(v));
    ASSERT_TRUE(vd.ok()) << vd.status().toString();
    EXPECT_EQ(vd->accepted, accepted);
    EXPECT_EQ(vd->proof, v.proof);
  }
  // The first bytes of every message, as docs/wire-protocol.md shows them.
  auto bytes = encodeChallenge(c);
  EXPECT_EQ(Bytes(bytes.begin(), bytes.begin() + 8), (Bytes{'T', 'A', 'U', 'T', 1, 1, 0, 0}));
}

TEST(AuthMessages, EveryWrongSizeIsRefused) {
  const ResponseBytes encoded = encodeResponse(Response{});
  const Bytes response(encoded.begin(), encoded.end());
  for (std::size_t n = 0; n <= kResponseBytes + 1; ++n) {
    if (n == kResponseBytes) continue;
    Bytes b = response;
    b.resize(n);
    EXPECT_EQ(decodeResponse(b).status().code(), ErrorCode::kProtocolError) << n;
    EXPECT_EQ(decodeChallenge(Bytes(n, 0)).status().code(), ErrorCode::kProtocolError) << n;
    EXPECT_EQ(decodeVerdict(Bytes(n, 0)).status().code(), ErrorCode::kProtocolError) << n;
  }
}

TEST(AuthMessages, EachBadFieldIsNamed) {
  auto good = encodeResponse(Response{});
  auto mutate = [&](std::size_t at, std::uint8_t value) {
    Bytes b(good.begin(), good.end());
    b[at] = value;
    return decodeResponse(b).status().message();
  };
  // A store request where the response belongs shows its bytes.
  Bytes store = {'T', 'S', 'T', 'R', 1, 2, 0, 0};
  store.resize(kResponseBytes);
  EXPECT_NE(decodeResponse(store).status().message().find("54 53 54 52 that are not a tutti"),
            std::string::npos)
      << decodeResponse(store).status().message();
  EXPECT_NE(mutate(4, 2).find("version 2"), std::string::npos) << mutate(4, 2);
  EXPECT_NE(mutate(5, 1).find("message kind 1"), std::string::npos) << mutate(5, 1);
  EXPECT_NE(mutate(7, 9).find("reserved bytes 00 09"), std::string::npos) << mutate(7, 9);
  Bytes refusal(kVerdictBytes, 0);
  std::copy(kMagic, kMagic + 4, refusal.begin());
  refusal[4] = kVersion;
  refusal[5] = static_cast<std::uint8_t>(Kind::kRefused);
  EXPECT_TRUE(decodeVerdict(refusal).ok());
  refusal[20] = 1;
  EXPECT_NE(decodeVerdict(refusal).status().message().find("refusal that carries a proof"),
            std::string::npos);
}

TEST(AuthMessages, RandomBytesNeverPass) {
  // Deterministic noise: the decoders refuse it without crashing, and noise with a valid
  // preamble still fails the proof, both ways.
  std::mt19937 gen(12345);
  const Key k = key(kSecretA);
  ClientHandshake client(k, Context::store(), nonceOf(2));
  ASSERT_TRUE(client.respond(encodeChallenge(Challenge{nonceOf(1)})).ok());
  for (int i = 0; i < 20000; ++i) {
    Bytes b(kResponseBytes);
    for (auto& x : b) x = static_cast<std::uint8_t>(gen());
    if (i % 2 == 0) {
      std::copy(kMagic, kMagic + 4, b.begin());
      b[4] = kVersion;
      b[5] = static_cast<std::uint8_t>(Kind::kResponse);
      b[6] = b[7] = 0;
    }
    ServerHandshake server(k, Context::store(), nonceOf(1));
    VerdictBytes verdict{};
    EXPECT_FALSE(server.answer(b, &verdict).ok());
    b[5] = static_cast<std::uint8_t>(Kind::kAccepted);
    EXPECT_FALSE(client.check(std::span<const std::uint8_t>(b).first(kVerdictBytes)).ok());
  }
}

TEST(AuthKey, SameSecretSameKeyAndShortSecretsAreRefusedWithoutShowingThem) {
  EXPECT_EQ(key(kSecretA).bytes(), key(kSecretA).bytes());
  EXPECT_NE(key(kSecretA).bytes(), key(kSecretB).bytes());
  EXPECT_NE(key(kSecretA).bytes(), Key().bytes());
  EXPECT_TRUE(key(kSecretA).isSecret());
  EXPECT_FALSE(Key().isSecret());
  auto shortKey = Key::fromSecret("hunter2");
  ASSERT_FALSE(shortKey.ok());
  EXPECT_EQ(shortKey.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(shortKey.status().message().find("hunter2"), std::string::npos);
  EXPECT_NE(shortKey.status().message().find("7 bytes long"), std::string::npos);
  auto r1 = Key::random();
  auto r2 = Key::random();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_NE(r1->bytes(), r2->bytes());
  EXPECT_TRUE(r1->isSecret());
}

TEST(AuthKey, GeneratedSecretsAreFreshHex) {
  auto a = generateSecret();
  auto b = generateSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos) << *a;
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(Key::fromSecret(*a).ok());
}

// A file holding `text` with `mode`, removed at the end of the test.
class SecretFile {
 public:
  SecretFile(const std::string& text, mode_t mode)
      : path_("/tmp/tutti-auth-test." + std::to_string(::getpid()) + "." +
              std::to_string(counter_++)) {
    std::ofstream(path_) << text;
    EXPECT_EQ(::chmod(path_.c_str(), mode), 0);
  }
  ~SecretFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(AuthSecretFile, PrivateFileGivesTheKeyOfItsTextWithoutTheNewline) {
  SecretFile file(std::string(kSecretA) + "\n", 0600);
  auto k = keyFromSecretFile(file.path());
  ASSERT_TRUE(k.ok()) << k.status().toString();
  EXPECT_EQ(k->bytes(), key(kSecretA).bytes());
  SecretFile readOnly(kSecretA, 0400);
  EXPECT_TRUE(keyFromSecretFile(readOnly.path()).ok());
}

TEST(AuthSecretFile, UnsafeOrUnusableFilesAreRefusedByName) {
  SecretFile groupReadable(kSecretA, 0640);
  auto s = keyFromSecretFile(groupReadable.path()).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "TUTTI_SECRET_FILE=" + groupReadable.path() +
                             " is accessible to its group or to others (mode 0640): make it "
                             "private with chmod 600");
  SecretFile worldWritable(kSecretA, 0602);
  EXPECT_NE(keyFromSecretFile(worldWritable.path()).status().message().find("mode 0602"),
            std::string::npos);
  auto missing = keyFromSecretFile("/nonexistent/tutti-secret");
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("TUTTI_SECRET_FILE=/nonexistent/tutti-secret"),
            std::string::npos)
      << missing.status().message();
  EXPECT_NE(keyFromSecretFile("/tmp").status().message().find("not a regular file"),
            std::string::npos);
  SecretFile huge(std::string(kMaxSecretFileBytes + 1, 'x'), 0600);
  EXPECT_NE(keyFromSecretFile(huge.path()).status().message().find("at most 4096"),
            std::string::npos);
  SecretFile empty("\n", 0600);
  auto tooShort = keyFromSecretFile(empty.path()).status();
  EXPECT_NE(tooShort.message().find("0 bytes long"), std::string::npos) << tooShort.message();
}

TEST(AuthJobKey, ComesFromTheVariableOrTheFileButNotBoth) {
  SecretFile file(kSecretB, 0600);
  auto fromVar = Config::fromMap({{"TUTTI_SECRET", kSecretA}});
  ASSERT_TRUE(fromVar.ok());
  auto k = jobKey(*fromVar);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  EXPECT_EQ(k->bytes(), key(kSecretA).bytes());
  auto fromFile = Config::fromMap({{"TUTTI_SECRET_FILE", file.path()}});
  ASSERT_TRUE(fromFile.ok());
  k = jobKey(*fromFile);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  EXPECT_EQ(k->bytes(), key(kSecretB).bytes());
  auto both = Config::fromMap({{"TUTTI_SECRET", kSecretA}, {"TUTTI_SECRET_FILE", file.path()}});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(jobKey(*both).status().message(),
            "both TUTTI_SECRET and TUTTI_SECRET_FILE are set; set only one");
  auto weak = Config::fromMap({{"TUTTI_SECRET", "short"}});
  ASSERT_TRUE(weak.ok());
  auto weakKey = jobKey(*weak);
  EXPECT_EQ(weakKey.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(weakKey.status().message().rfind("TUTTI_SECRET: ", 0), 0u);
  EXPECT_EQ(weakKey.status().message().find("short"), std::string::npos);
  auto none = jobKey(Config::defaults());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->isSecret());
  warnIfUnauthenticated(*none, "the test's imaginary listener");  // logs once: not checked
}

TEST(AuthJobKey, TimeoutMustBePositive) {
  auto t = authTimeout(Config::defaults());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count(), 5000);
  auto small = Config::fromMap({{"TUTTI_AUTH_TIMEOUT", "0.0001"}});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(authTimeout(*small)->count(), 1);  // at least a millisecond
  // The registry refuses the rest (config_vars.def): 0, negatives and more than a day.
  for (const char* bad : {"0", "-1", "1e9"}) {
    auto config = Config::fromMap({{"TUTTI_AUTH_TIMEOUT", bad}});
    ASSERT_FALSE(config.ok()) << bad;
    EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(config.status().message().find("more than 0, at most 86400 (seconds)"),
              std::string::npos)
        << config.status().message();
  }
}

}  // namespace
}  // namespace tutti::auth
