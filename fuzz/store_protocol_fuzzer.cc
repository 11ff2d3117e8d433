// Fuzz target: the TCP store's protocol (src/bootstrap/store_protocol.h).
//
// Two directions on every input:
//  1. Decode. The bytes go through decode() and, separately, through decodeHeader() and
//     decodePayload() the way the server reads a socket (header first, then the payload it
//     declares); both paths must agree. Whatever decodes must encode back to the very same
//     bytes: every field has one encoding (big-endian integers, exact lengths, zero flags,
//     no trailing bytes), so a difference means the decoder accepted something the encoder
//     cannot produce, or lost a field.
//  2. Encode. The same bytes also drive the construction of a message (opcode, id, fields);
//     whatever encode() accepts must decode to an equal message ("whatever we send, we
//     accept"), with an ERROR text longer than kMaxErrorBytes cut, as documented.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/assert.h"
#include "bootstrap/store_protocol.h"
#include "fuzz_input.h"

namespace {

using tutti::ErrorCode;
using namespace tutti::storeproto;
using tutti::fuzz::FuzzInput;
using Bytes = std::vector<std::uint8_t>;

// Field by field, only the fields the opcode carries (see Message).
bool sameMessage(const Message& a, const Message& b) {
  if (a.opcode != b.opcode || a.requestId != b.requestId) return false;
  switch (a.opcode) {
    case Opcode::kSet:
      return a.key == b.key && a.value == b.value;
    case Opcode::kGet:
      return a.key == b.key && a.timeoutMs == b.timeoutMs;
    case Opcode::kAdd:
      return a.key == b.key && a.integer == b.integer;
    case Opcode::kWait:
      return a.keys == b.keys && a.timeoutMs == b.timeoutMs;
    case Opcode::kOk:
      return true;
    case Opcode::kValue:
      return a.value == b.value;
    case Opcode::kInt:
      return a.integer == b.integer;
    case Opcode::kTimeout:
      return a.keys == b.keys;
    case Opcode::kError:
      return a.errorCode == b.errorCode && a.text == b.text;
  }
  return false;
}

void decodeDirection(std::span<const std::uint8_t> bytes) {
  tutti::Result<Message> whole = decode(bytes);
  tutti::Result<Header> header = decodeHeader(bytes);
  if (!header.ok()) {
    TUTTI_ASSERT(header.status().code() == ErrorCode::kProtocolError);
    TUTTI_ASSERT(!whole.ok());
    return;
  }
  TUTTI_ASSERT(header->payloadBytes <= kMaxPayloadBytes);
  // The server's path: a payload of exactly the declared length, when the input has it.
  const std::size_t total = kHeaderBytes + header->payloadBytes;
  if (bytes.size() >= total) {
    tutti::Result<Message> split =
        decodePayload(*header, bytes.subspan(kHeaderBytes, header->payloadBytes));
    if (bytes.size() == total) TUTTI_ASSERT(split.ok() == whole.ok());
    if (split.ok() && whole.ok()) TUTTI_ASSERT(sameMessage(*split, *whole));
  }
  if (!whole.ok()) {
    TUTTI_ASSERT(whole.status().code() == ErrorCode::kProtocolError);
    return;
  }
  TUTTI_ASSERT(bytes.size() == total);
  TUTTI_ASSERT(whole->opcode == header->opcode && whole->requestId == header->requestId);
  tutti::Result<Bytes> again = encode(*whole);
  TUTTI_ASSERT(again.ok());
  TUTTI_ASSERT(std::equal(again->begin(), again->end(), bytes.begin(), bytes.end()));
}

Message buildMessage(FuzzInput& in) {
  const std::uint8_t kind = in.u8() % 9;
  const std::uint32_t id = in.u32();
  switch (kind) {
    case 0: {
      std::string key = in.text();
      return Message::set(id, std::move(key), in.field());
    }
    case 1: {
      std::string key = in.text();
      return Message::get(id, std::move(key), in.u32());
    }
    case 2: {
      std::string key = in.text();
      return Message::add(id, std::move(key), static_cast<std::int64_t>(in.u64()));
    }
    case 3: {
      std::vector<std::string> keys = in.texts();
      return Message::wait(id, std::move(keys), in.u32());
    }
    case 4:
      return Message::ok(id);
    case 5:
      return Message::valueReply(id, in.field());
    case 6:
      return Message::intReply(id, static_cast<std::int64_t>(in.u64()));
    case 7:
      return Message::timeoutReply(id, in.texts());
    default: {
      const auto code = static_cast<ErrorCode>(in.u8() % 16);
      return Message::errorReply(id, code, in.text());
    }
  }
}

// What encode() must accept among the messages buildMessage() makes: keys within their
// bound and a real error code. Values (at most 128 KiB here), key counts (at most 255) and
// payloads stay far below their limits, so those refusals are left to the unit tests.
bool encodable(const Message& msg) {
  auto keyFits = [](const std::string& key) { return key.size() <= tutti::Store::kMaxKeyBytes; };
  switch (msg.opcode) {
    case Opcode::kSet:
    case Opcode::kGet:
    case Opcode::kAdd:
      return keyFits(msg.key);
    case Opcode::kWait:
    case Opcode::kTimeout:
      return std::all_of(msg.keys.begin(), msg.keys.end(), keyFits);
    case Opcode::kError:
      return msg.errorCode != ErrorCode::kOk && msg.errorCode <= ErrorCode::kInternal;
    default:
      return true;
  }
}

void encodeDirection(std::span<const std::uint8_t> bytes) {
  FuzzInput in(bytes);
  Message msg = buildMessage(in);
  tutti::Result<Bytes> encoded = encode(msg);
  TUTTI_ASSERT(encoded.ok() == encodable(msg));
  if (!encoded.ok()) {
    TUTTI_ASSERT(encoded.status().code() == ErrorCode::kInvalidArgument);
    return;
  }
  tutti::Result<Message> decoded = decode(*encoded);
  TUTTI_ASSERT(decoded.ok());
  if (msg.opcode == Opcode::kError && msg.text.size() > kMaxErrorBytes)
    msg.text.resize(kMaxErrorBytes);
  TUTTI_ASSERT(sameMessage(msg, *decoded));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  decodeDirection(bytes);
  encodeDirection(bytes);
  return 0;
}
