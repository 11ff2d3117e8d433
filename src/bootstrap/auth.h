#pragma once
// Authentication of every TCP connection, store and peer link alike (DESIGN.md 6): a mutual
// HMAC-SHA256 challenge-response over a per-job secret, run before any other byte of the
// connection is interpreted. The format is described in docs/wire-protocol.md
// ("Authentication handshake").
//
//   server -> client  CHALLENGE  "TAUT" | version | kind 1 | 0 0 | server nonce (32)
//   client -> server  RESPONSE   "TAUT" | version | kind 2 | 0 0 | client nonce (32)
//                                | HMAC(key, "client" label | nonces | context) (32)
//   server -> client  VERDICT    "TAUT" | version | kind 3 accepted / 4 refused | 0 0
//                                | HMAC(key, "server" label | nonces | context) (32; zero
//                                  when refused)
//
// Every message has a fixed size, so a listener reads at most 72 bytes from a stranger and
// allocates nothing for it. Fresh random nonces on both sides make a recorded transcript
// useless on any other connection; the context (store, or peer link of communicator X to
// rank R of N) makes a proof for one purpose useless for another; the two labels keep a
// server's proof from passing as a client's.
//
// Everything in this header is pure (no I/O) except the secret loading and the random
// draws, so that the decoders and checkers can be fuzzed directly. The non-blocking socket
// side (listeners' pending handshakes, the client's exchange) is in auth_gate.h.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/config.h"
#include "tutti/status.h"

namespace tutti::auth {

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;
inline constexpr std::size_t kKeyBytes = 32;
/// A shorter secret is refused: 16 bytes is the least that cannot be guessed online.
inline constexpr std::size_t kMinSecretBytes = 16;
/// A longer secret file is refused (it is not a secret file).
inline constexpr std::size_t kMaxSecretFileBytes = 4096;

/// "TAUT" as it appears on the wire.
inline constexpr std::uint8_t kMagic[4] = {'T', 'A', 'U', 'T'};
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kPreambleBytes = 8;  // magic, version, kind, two zero bytes
inline constexpr std::size_t kChallengeBytes = kPreambleBytes + kNonceBytes;
inline constexpr std::size_t kResponseBytes = kPreambleBytes + kNonceBytes + kMacBytes;
inline constexpr std::size_t kVerdictBytes = kPreambleBytes + kMacBytes;
static_assert(kChallengeBytes == 40 && kResponseBytes == 72 && kVerdictBytes == 40,
              "docs/wire-protocol.md gives these sizes");

using Nonce = std::array<std::uint8_t, kNonceBytes>;
using Mac = std::array<std::uint8_t, kMacBytes>;
using ChallengeBytes = std::array<std::uint8_t, kChallengeBytes>;
using ResponseBytes = std::array<std::uint8_t, kResponseBytes>;
using VerdictBytes = std::array<std::uint8_t, kVerdictBytes>;

/// The second byte after the magic and version: which message this is.
enum class Kind : std::uint8_t { kChallenge = 1, kResponse = 2, kAccepted = 3, kRefused = 4 };

/// The key every MAC of a job is made with: HMAC-SHA256(secret, "tutti job key v1"), so
/// that secrets of any length and alphabet give a fixed-size key. Copyable; the bytes are
/// wiped when a Key is destroyed.
class Key {
 public:
  /// The key of a job without a secret, derived from the empty secret. Every process has
  /// it, so it authenticates nothing: it only proves that both ends speak tutti.
  Key();
  Key(const Key& other) = default;
  Key& operator=(const Key& other) = default;
  ~Key();

  /// The key of `secret` (its bytes as given: hex digits or any text). kInvalidArgument
  /// when the secret is shorter than kMinSecretBytes (the message never shows the secret).
  static Result<Key> fromSecret(std::string_view secret);
  /// A key nobody else has (for a one-rank job's private store). kSystemError when the
  /// random generator fails.
  static Result<Key> random();

  /// False for the no-secret key.
  bool isSecret() const { return isSecret_; }
  const std::array<std::uint8_t, kKeyBytes>& bytes() const { return bytes_; }

 private:
  std::array<std::uint8_t, kKeyBytes> bytes_{};
  bool isSecret_ = false;
};

/// What a connection is for; part of every MAC, so a proof never serves another purpose.
enum class Purpose : std::uint8_t { kStore = 1, kPeerLink = 2 };

struct Context {
  Purpose purpose = Purpose::kStore;
  std::uint64_t commUid = 0;       ///< peer links: the communicator's id
  std::uint32_t acceptorRank = 0;  ///< peer links: the rank that listens
  std::uint32_t worldSize = 0;     ///< peer links: the communicator's size

  /// A connection to the rendezvous store.
  static Context store() { return Context{}; }
  /// A connection to rank `acceptorRank` of the `worldSize`-rank communicator `commUid`.
  static Context peerLink(std::uint64_t commUid, int acceptorRank, int worldSize);
  /// "store" or "peer link to rank 2 of 4 (communicator 0x...)", for messages.
  std::string toString() const;
};

// --- secrets -------------------------------------------------------------------------------

/// The job key from the configuration: TUTTI_SECRET (its bytes as given), or the contents of
/// the file TUTTI_SECRET_FILE names (without trailing whitespace). The file must be a
/// regular file that neither its group nor others may read or write (chmod 600). With
/// neither variable set, returns the no-secret Key (see warnIfUnauthenticated()). Errors
/// (kInvalidArgument, naming the variable, never the secret): both set, a secret shorter
/// than kMinSecretBytes, a file that is missing, unreadable, not regular, too permissive or
/// over kMaxSecretFileBytes.
Result<Key> jobKey(const Config& config);
/// Called before `listener` ("the store on 10.0.0.1:29500", "this rank's TCP listener")
/// starts accepting with `key`: when that is the no-secret key, logs a WARN that connections
/// are not authenticated and how to set a secret, once per process.
void warnIfUnauthenticated(const Key& key, const std::string& listener);
/// TUTTI_AUTH_TIMEOUT as a duration (the registry has checked its range; never fails, kept a
/// Result for its callers).
Result<std::chrono::milliseconds> authTimeout(const Config& config);
/// The TUTTI_SECRET_FILE part of jobKey(), for tests.
Result<Key> keyFromSecretFile(const std::string& path);
/// A fresh secret for a job: 32 random bytes as 64 lower-case hex digits. kSystemError when
/// the random generator fails.
Result<std::string> generateSecret();

// --- pure protocol -------------------------------------------------------------------------

/// A fresh random nonce (OpenSSL's RAND_bytes). kSystemError when the generator fails.
Result<Nonce> randomNonce();

struct Challenge {
  Nonce serverNonce{};
};
struct Response {
  Nonce clientNonce{};
  Mac proof{};
};
struct Verdict {
  bool accepted = false;
  Mac proof{};  // zero when refused
};

ChallengeBytes encodeChallenge(const Challenge& challenge);
ResponseBytes encodeResponse(const Response& response);
VerdictBytes encodeVerdict(const Verdict& verdict);

/// Decoders: `bytes` must be exactly the message's size. kProtocolError, saying what was
/// wrong (size, magic with the bytes seen, version, kind, reserved bytes), otherwise.
Result<Challenge> decodeChallenge(std::span<const std::uint8_t> bytes);
Result<Response> decodeResponse(std::span<const std::uint8_t> bytes);
Result<Verdict> decodeVerdict(std::span<const std::uint8_t> bytes);

/// HMAC(key, label | serverNonce | clientNonce | context) with the client's or the server's
/// label.
Mac clientProof(const Key& key, const Context& context, const Nonce& serverNonce,
                const Nonce& clientNonce);
Mac serverProof(const Key& key, const Context& context, const Nonce& serverNonce,
                const Nonce& clientNonce);

/// Constant-time comparison (CRYPTO_memcmp), so the time taken says nothing about where a
/// forged proof first differs.
bool macEqual(const Mac& a, const Mac& b);

/// Checks a client's response to the challenge carrying `serverNonce`: kProtocolError
/// "its proof did not verify ..." when the proof is not the one the key and context give.
Status verifyResponse(const Key& key, const Context& context, const Nonce& serverNonce,
                      const Response& response);

/// Checks the server's verdict on this client's response: OK when it accepted and its
/// proof verifies. kProtocolError otherwise: refused (with a hint when this process has
/// no secret), or accepted without a valid proof (the server does not hold the secret).
Status verifyVerdict(const Key& key, const Context& context, const Nonce& serverNonce,
                     const Nonce& clientNonce, const Verdict& verdict);

/// The listening side of one handshake, no I/O: the challenge to send, then the verdict on
/// the response. Holds a pointer to `key`, which must outlive it.
class ServerHandshake {
 public:
  /// `nonce` must be fresh for every connection (randomNonce()); tests pass fixed ones.
  ServerHandshake(const Key& key, const Context& context, const Nonce& nonce)
      : key_(&key), context_(context), nonce_(nonce) {}

  ChallengeBytes challenge() const { return encodeChallenge(Challenge{nonce_}); }

  /// Judges the client's response (the kResponseBytes it sent). OK: accepted, and
  /// *verdict is the accepting verdict with this side's proof. Otherwise the
  /// kProtocolError says why, and *verdict is a refusal.
  Status answer(std::span<const std::uint8_t> response, VerdictBytes* verdict) const;

 private:
  const Key* key_;
  Context context_;
  Nonce nonce_;
};

/// The connecting side of one handshake, no I/O: the response to the challenge, then the
/// check of the verdict. Holds a pointer to `key`, which must outlive it.
class ClientHandshake {
 public:
  /// `nonce` must be fresh for every connection (randomNonce()); tests pass fixed ones.
  ClientHandshake(const Key& key, const Context& context, const Nonce& nonce)
      : key_(&key), context_(context), clientNonce_(nonce) {}

  /// Decodes the server's challenge (kChallengeBytes) and returns the response to send.
  /// kProtocolError for bytes that are not a challenge.
  Result<ResponseBytes> respond(std::span<const std::uint8_t> challenge);
  /// Checks the server's verdict (kVerdictBytes), after respond(): see verifyVerdict().
  Status check(std::span<const std::uint8_t> verdict) const;

 private:
  const Key* key_;
  Context context_;
  Nonce clientNonce_;
  Nonce serverNonce_{};
  bool responded_ = false;
};

}  // namespace tutti::auth
