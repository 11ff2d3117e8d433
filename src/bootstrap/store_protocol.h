#pragma once
// The TCP store's wire protocol: pure encode/decode functions, no I/O, so that every bound
// can be unit-tested. The format is described in docs/wire-protocol.md ("Store protocol").
//
// A message is a 16-byte header followed by `payloadBytes` of payload:
//   magic "TSTR" (4) | version (1) | opcode (1) | flags (2, zero) | request id (4) | payload length
//   (4)
// All integers are big-endian. Variable-length fields are a u32 length then the bytes.
// Every length is validated against the Store bounds and against the bytes actually
// present before anything is allocated, so a hostile peer can neither crash the decoder
// nor make it allocate more than it has already sent (or than the header cap allows).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::storeproto {

/// "TSTR" as it appears on the wire.
inline constexpr std::uint8_t kMagic[4] = {'T', 'S', 'T', 'R'};
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;

/// Largest payload any message may declare: one key, one value and their length prefixes,
/// plus a little room for fixed-width fields. Every other message shape must fit in it too
/// (a WAIT whose keys add up to more is refused by the encoder).
inline constexpr std::size_t kMaxPayloadBytes = Store::kMaxValueBytes + Store::kMaxKeyBytes + 64;
/// Longest error text a reply carries; longer messages are cut by the encoder.
inline constexpr std::size_t kMaxErrorBytes = 4096;
/// timeout_ms value meaning "no server-side timeout" (the client's deadline is never).
inline constexpr std::uint32_t kNoTimeout = 0xffffffffu;

static_assert(kMaxPayloadBytes <= 0xffffffffu, "payload length must fit its u32 field");
static_assert(kHeaderBytes == sizeof(kMagic) + 1 + 1 + 2 + 4 + 4,
              "header: magic, version, opcode, flags, request id, payload length");

enum class Opcode : std::uint8_t {
  // Requests (client to server).
  kSet = 0x01,   ///< key, value
  kGet = 0x02,   ///< key, timeout_ms
  kAdd = 0x03,   ///< key, delta (i64)
  kWait = 0x04,  ///< key count, keys, timeout_ms
  // Replies (server to client); the request id echoes the request's.
  kOk = 0x81,       ///< empty
  kValue = 0x82,    ///< value
  kInt = 0x83,      ///< i64
  kTimeout = 0x84,  ///< key count, keys still missing
  kError = 0x85,    ///< error code (u8), message
};

/// "SET", "VALUE", ...; "unknown" for values outside the enum.
const char* opcodeName(Opcode op);
/// True for the four request opcodes.
bool isRequest(Opcode op);

/// The fixed header, as decoded and validated by decodeHeader().
struct Header {
  Opcode opcode = Opcode::kOk;
  std::uint32_t requestId = 0;
  std::uint32_t payloadBytes = 0;
};

/// One decoded message. Only the fields of its opcode are meaningful:
///   SET key,value · GET key,timeoutMs · ADD key,integer · WAIT keys,timeoutMs
///   OK – · VALUE value · INT integer · TIMEOUT keys · ERROR errorCode,text
struct Message {
  Opcode opcode = Opcode::kOk;
  std::uint32_t requestId = 0;
  std::string key;
  std::vector<std::uint8_t> value;
  std::vector<std::string> keys;
  std::uint32_t timeoutMs = kNoTimeout;
  std::int64_t integer = 0;
  ErrorCode errorCode = ErrorCode::kOk;
  std::string text;

  static Message set(std::uint32_t id, std::string key, std::vector<std::uint8_t> value);
  static Message get(std::uint32_t id, std::string key, std::uint32_t timeoutMs);
  static Message add(std::uint32_t id, std::string key, std::int64_t delta);
  static Message wait(std::uint32_t id, std::vector<std::string> keys, std::uint32_t timeoutMs);
  static Message ok(std::uint32_t id);
  static Message valueReply(std::uint32_t id, std::vector<std::uint8_t> value);
  static Message intReply(std::uint32_t id, std::int64_t value);
  static Message timeoutReply(std::uint32_t id, std::vector<std::string> missing);
  static Message errorReply(std::uint32_t id, ErrorCode code, std::string text);
};

/// Appends the encoding of `msg` to `*out`. Fails with kInvalidArgument (and appends
/// nothing) when a field exceeds its bound or the payload would exceed kMaxPayloadBytes;
/// an ERROR text longer than kMaxErrorBytes is cut rather than refused.
Status encode(const Message& msg, std::vector<std::uint8_t>* out);

/// Convenience form of encode() returning a fresh buffer.
Result<std::vector<std::uint8_t>> encode(const Message& msg);

/// Validates the first kHeaderBytes of `bytes`: magic, version, known opcode, zero flags and
/// payload length within kMaxPayloadBytes. kProtocolError (saying what was wrong) otherwise,
/// including when fewer than kHeaderBytes are given.
Result<Header> decodeHeader(std::span<const std::uint8_t> bytes);

/// Decodes the payload of a message whose header was validated. `payload` must be exactly
/// header.payloadBytes long; every field must fit and nothing may follow the last one.
Result<Message> decodePayload(const Header& header, std::span<const std::uint8_t> payload);

/// Decodes one complete message (header + payload, nothing more, nothing less).
Result<Message> decode(std::span<const std::uint8_t> bytes);

}  // namespace tutti::storeproto
