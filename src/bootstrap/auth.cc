// The authentication handshake's pure part (messages, proofs, checks) and the job secret.
// OpenSSL's libcrypto provides HMAC-SHA256, the random generator and the constant-time
// comparison; nothing else of it is used.

#include "bootstrap/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/assert.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"

namespace tutti::auth {
namespace {

// The labels are as long as each other, so the MAC input has one layout for both sides.
constexpr char kClientLabel[] = "tutti-auth-v1 cl";
constexpr char kServerLabel[] = "tutti-auth-v1 sv";
constexpr std::size_t kLabelBytes = sizeof(kClientLabel) - 1;
static_assert(sizeof(kServerLabel) == sizeof(kClientLabel), "labels share one layout");
constexpr std::size_t kContextBytes = 1 + 8 + 4 + 4;
constexpr std::size_t kProofInputBytes = kLabelBytes + 2 * kNonceBytes + kContextBytes;
constexpr char kKeyLabel[] = "tutti job key v1";

// HMAC-SHA256 of `data` under `key`. It cannot fail with these arguments (a built-in digest
// and in-memory buffers), so a failure is a broken libcrypto, which we do not run on.
std::array<std::uint8_t, 32> hmacSha256(const std::uint8_t* key, std::size_t keyLen,
                                        const std::uint8_t* data, std::size_t len) {
  std::array<std::uint8_t, 32> out{};
  unsigned int outLen = 0;
  const unsigned char* done = HMAC(EVP_sha256(), key, static_cast<int>(keyLen), data, len,
                                   out.data(), &outLen);
  TUTTI_ASSERT(done != nullptr);
  TUTTI_ASSERT_CMP(outLen, ==, out.size());
  return out;
}

void putBe(std::uint8_t* out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<std::uint8_t>(value);
    value >>= 8;
  }
}

Mac proof(const char* label, const Key& key, const Context& context, const Nonce& serverNonce,
          const Nonce& clientNonce) {
  std::uint8_t input[kProofInputBytes];
  std::uint8_t* p = input;
  std::memcpy(p, label, kLabelBytes);
  p += kLabelBytes;
  std::memcpy(p, serverNonce.data(), kNonceBytes);
  p += kNonceBytes;
  std::memcpy(p, clientNonce.data(), kNonceBytes);
  p += kNonceBytes;
  *p++ = static_cast<std::uint8_t>(context.purpose);
  putBe(p, context.commUid, 8);
  putBe(p + 8, context.acceptorRank, 4);
  putBe(p + 12, context.worldSize, 4);
  TUTTI_ASSERT_CMP(static_cast<std::size_t>(p + 16 - input), ==, sizeof(input));
  return hmacSha256(key.bytes().data(), key.bytes().size(), input, sizeof(input));
}

void putPreamble(std::uint8_t* out, Kind kind) {
  std::memcpy(out, kMagic, sizeof(kMagic));
  out[4] = kVersion;
  out[5] = static_cast<std::uint8_t>(kind);
  out[6] = 0;
  out[7] = 0;
}

Status protocolError(std::string message) {
  return Status(ErrorCode::kProtocolError, std::move(message));
}

// Checks size, magic, version and the reserved bytes; returns the kind byte.
Result<std::uint8_t> checkPreamble(std::span<const std::uint8_t> bytes, std::size_t size,
                                   const char* what) {
  if (bytes.size() != size)
    return protocolError(strFormat("authentication: a %s is %zu bytes, got %zu", what, size,
                                   bytes.size()));
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return protocolError(strFormat(
        "authentication: expected a %s, got bytes %02x %02x %02x %02x that are not a tutti "
        "handshake (another program, or a tutti without authentication?)",
        what, bytes[0], bytes[1], bytes[2], bytes[3]));
  if (bytes[4] != kVersion)
    return protocolError(strFormat("authentication: %s of version %u; this process speaks %u",
                                   what, bytes[4], kVersion));
  if (bytes[6] != 0 || bytes[7] != 0)
    return protocolError(strFormat("authentication: %s with reserved bytes %02x %02x set", what,
                                   bytes[6], bytes[7]));
  return bytes[5];
}

Status badKind(std::uint8_t kind, const char* what) {
  return protocolError(strFormat("authentication: expected a %s, got message kind %u", what, kind));
}

// Reads the secret file: a regular file only its owner may read or write.
Result<std::string> readSecretFile(const std::string& path) {
  const std::string var = "TUTTI_SECRET_FILE=" + path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    Status s = systemError("open", errno, path);
    return Status(ErrorCode::kInvalidArgument, var + ": " + s.message());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    Status s = systemError("fstat", errno, path);
    return Status(ErrorCode::kInvalidArgument, var + ": " + s.message());
  }
  TUTTI_CHECK_ARG(S_ISREG(st.st_mode), "%s is not a regular file", var.c_str());
  // A secret others can read is no secret; one others can write lets them choose it.
  TUTTI_CHECK_ARG((st.st_mode & 077) == 0,
                  "%s is accessible to its group or to others (mode %04o): make it private "
                  "with chmod 600",
                  var.c_str(), static_cast<unsigned>(st.st_mode & 07777));
  TUTTI_CHECK_ARG(st.st_size <= static_cast<off_t>(kMaxSecretFileBytes),
                  "%s holds %lld bytes; a secret file holds at most %zu", var.c_str(),
                  static_cast<long long>(st.st_size), kMaxSecretFileBytes);
  std::string text(kMaxSecretFileBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = systemError("read", errno, path);
      return Status(ErrorCode::kInvalidArgument, var + ": " + s.message());
    }
    got += static_cast<std::size_t>(n);
  }
  // The size was checked, but the file may have grown since.
  TUTTI_CHECK_ARG(got <= kMaxSecretFileBytes, "%s holds more than %zu bytes", var.c_str(),
                  kMaxSecretFileBytes);
  text.resize(got);
  // `openssl rand -hex 32 > file` ends with a newline that is not part of the secret.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t'))
    text.pop_back();
  OPENSSL_cleanse(text.data() + text.size(), kMaxSecretFileBytes + 1 - text.size());
  return text;
}

}  // namespace

// --- Key -----------------------------------------------------------------------------------

Key::Key() {
  bytes_ = hmacSha256(nullptr, 0, reinterpret_cast<const std::uint8_t*>(kKeyLabel),
                      sizeof(kKeyLabel) - 1);
}

Key::~Key() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

Result<Key> Key::fromSecret(std::string_view secret) {
  TUTTI_CHECK_ARG(secret.size() >= kMinSecretBytes,
                  "the job secret is %zu bytes long; it must have at least %zu (make one with "
                  "`openssl rand -hex 32`)",
                  secret.size(), kMinSecretBytes);
  Key key;
  key.bytes_ = hmacSha256(reinterpret_cast<const std::uint8_t*>(secret.data()), secret.size(),
                          reinterpret_cast<const std::uint8_t*>(kKeyLabel), sizeof(kKeyLabel) - 1);
  key.isSecret_ = true;
  return key;
}

Result<Key> Key::random() {
  Key key;
  if (RAND_bytes(key.bytes_.data(), static_cast<int>(key.bytes_.size())) != 1)
    return Status(ErrorCode::kSystemError, "the random generator (RAND_bytes) failed");
  key.isSecret_ = true;
  return key;
}

Context Context::peerLink(std::uint64_t commUid, int acceptorRank, int worldSize) {
  TUTTI_ASSERT_CMP(acceptorRank, >=, 0);
  TUTTI_ASSERT_CMP(worldSize, >, acceptorRank);
  return Context{Purpose::kPeerLink, commUid, static_cast<std::uint32_t>(acceptorRank),
                 static_cast<std::uint32_t>(worldSize)};
}

std::string Context::toString() const {
  if (purpose == Purpose::kStore) return "store";
  return strFormat("peer link to rank %u of %u (communicator %016llx)", acceptorRank, worldSize,
                   static_cast<unsigned long long>(commUid));
}

// --- secrets -------------------------------------------------------------------------------

Result<Key> keyFromSecretFile(const std::string& path) {
  TUTTI_ASSIGN_OR_RETURN(std::string text, readSecretFile(path));
  Result<Key> key = Key::fromSecret(text);
  OPENSSL_cleanse(text.data(), text.size());
  if (!key.ok()) return key.status().withContext("TUTTI_SECRET_FILE=" + path);
  return key;
}

Result<Key> jobKey(const Config& config) {
  const bool fromVariable = !config.secret.empty();
  const bool fromFile = !config.secretFile.empty();
  TUTTI_CHECK_ARG(!(fromVariable && fromFile),
                  "both TUTTI_SECRET and TUTTI_SECRET_FILE are set; set only one");
  if (fromVariable) {
    Result<Key> key = Key::fromSecret(config.secret);
    if (!key.ok()) return key.status().withContext("TUTTI_SECRET");
    return key;
  }
  if (fromFile) return keyFromSecretFile(config.secretFile);
  return Key();
}

void warnIfUnauthenticated(const Key& key, const std::string& listener) {
  if (key.isSecret()) return;
  // Once per process: every listener of the process would say the same. This flag is the
  // one piece of mutable state here, and it only ever goes from false to true.
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  TUTTI_WARN(kBootstrap,
             "no job secret (TUTTI_SECRET or TUTTI_SECRET_FILE): %s accepts connections without "
             "authenticating them, so anyone who can reach it can join or disturb this job. "
             "tutti-run sets a secret by itself; under other launchers export "
             "TUTTI_SECRET=$(openssl rand -hex 32) to every rank",
             listener.c_str());
}

Result<std::chrono::milliseconds> authTimeout(const Config& config) {
  // The registry keeps it within (0, 86400] seconds (config_vars.def), so the conversion is
  // exact.
  return std::chrono::milliseconds(
      std::max<std::int64_t>(1, static_cast<std::int64_t>(config.authTimeoutSec * 1000.0)));
}

Result<std::string> generateSecret() {
  std::uint8_t random[32];
  if (RAND_bytes(random, sizeof(random)) != 1)
    return Status(ErrorCode::kSystemError, "the random generator (RAND_bytes) failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(2 * sizeof(random), '0');
  for (std::size_t i = 0; i < sizeof(random); ++i) {
    text[2 * i] = kHex[random[i] >> 4];
    text[2 * i + 1] = kHex[random[i] & 15];
  }
  OPENSSL_cleanse(random, sizeof(random));
  return text;
}

// --- pure protocol -------------------------------------------------------------------------

Result<Nonce> randomNonce() {
  Nonce nonce;
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1)
    return Status(ErrorCode::kSystemError, "the random generator (RAND_bytes) failed");
  return nonce;
}

ChallengeBytes encodeChallenge(const Challenge& challenge) {
  ChallengeBytes out{};
  putPreamble(out.data(), Kind::kChallenge);
  std::memcpy(out.data() + kPreambleBytes, challenge.serverNonce.data(), kNonceBytes);
  return out;
}

ResponseBytes encodeResponse(const Response& response) {
  ResponseBytes out{};
  putPreamble(out.data(), Kind::kResponse);
  std::memcpy(out.data() + kPreambleBytes, response.clientNonce.data(), kNonceBytes);
  std::memcpy(out.data() + kPreambleBytes + kNonceBytes, response.proof.data(), kMacBytes);
  return out;
}

VerdictBytes encodeVerdict(const Verdict& verdict) {
  VerdictBytes out{};
  putPreamble(out.data(), verdict.accepted ? Kind::kAccepted : Kind::kRefused);
  if (verdict.accepted) std::memcpy(out.data() + kPreambleBytes, verdict.proof.data(), kMacBytes);
  return out;
}

Result<Challenge> decodeChallenge(std::span<const std::uint8_t> bytes) {
  TUTTI_ASSIGN_OR_RETURN(std::uint8_t kind, checkPreamble(bytes, kChallengeBytes, "challenge"));
  if (kind != static_cast<std::uint8_t>(Kind::kChallenge)) return badKind(kind, "challenge");
  Challenge c;
  std::memcpy(c.serverNonce.data(), bytes.data() + kPreambleBytes, kNonceBytes);
  return c;
}

Result<Response> decodeResponse(std::span<const std::uint8_t> bytes) {
  TUTTI_ASSIGN_OR_RETURN(std::uint8_t kind, checkPreamble(bytes, kResponseBytes, "response"));
  if (kind != static_cast<std::uint8_t>(Kind::kResponse)) return badKind(kind, "response");
  Response r;
  std::memcpy(r.clientNonce.data(), bytes.data() + kPreambleBytes, kNonceBytes);
  std::memcpy(r.proof.data(), bytes.data() + kPreambleBytes + kNonceBytes, kMacBytes);
  return r;
}

Result<Verdict> decodeVerdict(std::span<const std::uint8_t> bytes) {
  TUTTI_ASSIGN_OR_RETURN(std::uint8_t kind, checkPreamble(bytes, kVerdictBytes, "verdict"));
  Verdict v;
  if (kind == static_cast<std::uint8_t>(Kind::kRefused)) {
    for (std::size_t i = kPreambleBytes; i < kVerdictBytes; ++i)
      if (bytes[i] != 0) return protocolError("authentication: a refusal that carries a proof");
    return v;
  }
  if (kind != static_cast<std::uint8_t>(Kind::kAccepted)) return badKind(kind, "verdict");
  v.accepted = true;
  std::memcpy(v.proof.data(), bytes.data() + kPreambleBytes, kMacBytes);
  return v;
}

Mac clientProof(const Key& key, const Context& context, const Nonce& serverNonce,
                const Nonce& clientNonce) {
  return proof(kClientLabel, key, context, serverNonce, clientNonce);
}

Mac serverProof(const Key& key, const Context& context, const Nonce& serverNonce,
                const Nonce& clientNonce) {
  return proof(kServerLabel, key, context, serverNonce, clientNonce);
}

bool macEqual(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Status verifyResponse(const Key& key, const Context& context, const Nonce& serverNonce,
                      const Response& response) {
  if (!macEqual(response.proof, clientProof(key, context, serverNonce, response.clientNonce)))
    return protocolError(
        "its proof did not verify (a different job secret, a handshake replayed from another "
        "connection, or one meant for another " +
        std::string(context.purpose == Purpose::kStore ? "service" : "rank or communicator") + ")");
  return Status::Ok();
}

Status verifyVerdict(const Key& key, const Context& context, const Nonce& serverNonce,
                     const Nonce& clientNonce, const Verdict& verdict) {
  if (!verdict.accepted)
    return protocolError(strFormat(
        "refused this process's authentication: the two do not hold the same job secret%s",
        key.isSecret() ? ""
                       : " (this process has none: give it the job's secret through "
                         "TUTTI_SECRET or TUTTI_SECRET_FILE)"));
  if (!macEqual(verdict.proof, serverProof(key, context, serverNonce, clientNonce)))
    return protocolError(
        "accepted this process but could not prove that it holds the job secret: it is not "
        "part of this job");
  return Status::Ok();
}

// --- handshakes ----------------------------------------------------------------------------

Status ServerHandshake::answer(std::span<const std::uint8_t> response,
                               VerdictBytes* verdict) const {
  *verdict = encodeVerdict(Verdict{});
  TUTTI_ASSIGN_OR_RETURN(Response r, decodeResponse(response));
  TUTTI_RETURN_IF_ERROR(verifyResponse(*key_, context_, nonce_, r));
  *verdict = encodeVerdict(Verdict{true, serverProof(*key_, context_, nonce_, r.clientNonce)});
  return Status::Ok();
}

Result<ResponseBytes> ClientHandshake::respond(std::span<const std::uint8_t> challenge) {
  TUTTI_ASSIGN_OR_RETURN(Challenge c, decodeChallenge(challenge));
  serverNonce_ = c.serverNonce;
  responded_ = true;
  return encodeResponse(
      Response{clientNonce_, clientProof(*key_, context_, serverNonce_, clientNonce_)});
}

Status ClientHandshake::check(std::span<const std::uint8_t> verdict) const {
  TUTTI_ASSERT(responded_);  // the verdict answers a response
  TUTTI_ASSIGN_OR_RETURN(Verdict v, decodeVerdict(verdict));
  return verifyVerdict(*key_, context_, serverNonce_, clientNonce_, v);
}

}  // namespace tutti::auth
