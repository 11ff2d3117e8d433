// The store codec. Encoding computes and checks the payload size before writing a byte, so
// a refused message leaves the caller's buffer untouched. Decoding validates the header on
// its own (the server does this as soon as 16 bytes arrive, before buffering a payload),
// then walks the payload with a Reader that bounds every field by the bytes actually
// present. The layout is documented in docs/wire-protocol.md.

#include "bootstrap/store_protocol.h"

#include <cstring>
#include <utility>

#include "base/assert.h"
#include "base/macros.h"
#include "base/strings.h"

namespace tutti::storeproto {
namespace {

// Every decoding error carries the same prefix, so logs show at once which protocol failed.
Status protocolError(std::string message) {
  return Status(ErrorCode::kProtocolError, "store protocol: " + std::move(message));
}

// Big-endian writers: the wire order is fixed whatever the host's.
void putU32(std::vector<std::uint8_t>* out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<std::uint8_t>(v >> shift));
}

void putU64(std::vector<std::uint8_t>* out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out->push_back(static_cast<std::uint8_t>(v >> shift));
}

// A "bytes" field: u32 length, then the bytes. Callers have checked len against its bound.
void putField(std::vector<std::uint8_t>* out, const void* data, std::size_t len) {
  putU32(out, static_cast<std::uint32_t>(len));
  const auto* p = static_cast<const std::uint8_t*>(data);
  out->insert(out->end(), p, p + len);
}

std::uint32_t getU32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// Reads fields front to back; every read checks the bytes left first, so a lying length
// can never make it read past the payload or allocate more than the payload holds.
class Reader {
 public:
  Reader(std::span<const std::uint8_t> bytes, Opcode op) : bytes_(bytes), op_(op) {}

  std::size_t remaining() const { return bytes_.size() - pos_; }

  Status u32(const char* what, std::uint32_t* out) {
    TUTTI_RETURN_IF_ERROR(need(4, what));
    *out = getU32(bytes_.data() + pos_);
    pos_ += 4;
    return Status::Ok();
  }

  Status i64(const char* what, std::int64_t* out) {
    std::uint32_t hi = 0;
    std::uint32_t lo = 0;
    TUTTI_RETURN_IF_ERROR(need(8, what));
    TUTTI_RETURN_IF_ERROR(u32(what, &hi));
    TUTTI_RETURN_IF_ERROR(u32(what, &lo));
    *out = static_cast<std::int64_t>((std::uint64_t{hi} << 32) | lo);
    return Status::Ok();
  }

  Status u8(const char* what, std::uint8_t* out) {
    TUTTI_RETURN_IF_ERROR(need(1, what));
    *out = bytes_[pos_++];
    return Status::Ok();
  }

  // A u32 length then that many bytes; the length must be <= maxLen and fit what is left.
  template <typename Container>
  Status field(const char* what, std::size_t maxLen, Container* out) {
    std::uint32_t len = 0;
    TUTTI_RETURN_IF_ERROR(u32(what, &len));
    if (len > maxLen)
      return protocolError(strFormat("%s %s length %u exceeds the limit of %zu bytes",
                                     opcodeName(op_), what, len, maxLen));
    TUTTI_RETURN_IF_ERROR(need(len, what));
    const std::uint8_t* p = bytes_.data() + pos_;
    out->assign(p, p + len);
    pos_ += len;
    return Status::Ok();
  }

  // A u32 count then that many key fields.
  Status keyList(std::vector<std::string>* keys) {
    std::uint32_t count = 0;
    TUTTI_RETURN_IF_ERROR(u32("key count", &count));
    if (count > Store::kMaxKeysPerWait)
      return protocolError(strFormat("%s key count %u exceeds the limit of %zu", opcodeName(op_),
                                     count, Store::kMaxKeysPerWait));
    // Each key takes at least its 4-byte length, so a larger count cannot be honest; checking
    // here keeps reserve() below the size of the payload already received.
    if (std::size_t{count} * 4 > remaining())
      return protocolError(strFormat("truncated %s: key count %u cannot fit in the %zu bytes left",
                                     opcodeName(op_), count, remaining()));
    keys->clear();
    keys->reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      keys->emplace_back();
      TUTTI_RETURN_IF_ERROR(field("key", Store::kMaxKeyBytes, &keys->back()));
    }
    return Status::Ok();
  }

  Status finish() const {
    if (remaining() != 0)
      return protocolError(
          strFormat("%zu trailing bytes after the last field of %s", remaining(), opcodeName(op_)));
    return Status::Ok();
  }

 private:
  Status need(std::size_t n, const char* what) const {
    if (n > remaining())
      return protocolError(strFormat("truncated %s: %s needs %zu bytes at offset %zu, %zu left",
                                     opcodeName(op_), what, n, pos_, remaining()));
    return Status::Ok();
  }

  std::span<const std::uint8_t> bytes_;
  Opcode op_;
  std::size_t pos_ = 0;
};

// Requests are 0x01..0x04 and replies 0x81..0x85, so the top bit tells the direction.
bool isKnownOpcode(std::uint8_t v) { return (v >= 0x01 && v <= 0x04) || (v >= 0x81 && v <= 0x85); }

// Encoder-side bounds. They mirror the decoder's, so that whatever we send, we accept.
Status checkEncodeKey(const Message& msg, const std::string& key) {
  TUTTI_CHECK_ARG(key.size() <= Store::kMaxKeyBytes,
                  "cannot encode %s: key of %zu bytes exceeds the limit of %zu",
                  opcodeName(msg.opcode), key.size(), Store::kMaxKeyBytes);
  return Status::Ok();
}

Status checkEncodeKeys(const Message& msg) {
  TUTTI_CHECK_ARG(msg.keys.size() <= Store::kMaxKeysPerWait,
                  "cannot encode %s: %zu keys exceed the limit of %zu", opcodeName(msg.opcode),
                  msg.keys.size(), Store::kMaxKeysPerWait);
  for (const std::string& key : msg.keys) TUTTI_RETURN_IF_ERROR(checkEncodeKey(msg, key));
  return Status::Ok();
}

Status checkEncodeValue(const Message& msg) {
  TUTTI_CHECK_ARG(msg.value.size() <= Store::kMaxValueBytes,
                  "cannot encode %s: value of %zu bytes exceeds the limit of %zu",
                  opcodeName(msg.opcode), msg.value.size(), Store::kMaxValueBytes);
  return Status::Ok();
}

// Validates the fields of `msg` and returns its payload size (computed in 64 bits, so that
// a WAIT on many long keys cannot wrap around).
Result<std::uint64_t> payloadSize(const Message& msg) {
  auto keysBytes = [&msg] {
    std::uint64_t n = 4;
    for (const std::string& key : msg.keys) n += 4 + key.size();
    return n;
  };
  switch (msg.opcode) {
    case Opcode::kSet:
      TUTTI_RETURN_IF_ERROR(checkEncodeKey(msg, msg.key));
      TUTTI_RETURN_IF_ERROR(checkEncodeValue(msg));
      return 8 + msg.key.size() + msg.value.size();
    case Opcode::kGet:
      TUTTI_RETURN_IF_ERROR(checkEncodeKey(msg, msg.key));
      return 8 + msg.key.size();
    case Opcode::kAdd:
      TUTTI_RETURN_IF_ERROR(checkEncodeKey(msg, msg.key));
      return 12 + msg.key.size();
    case Opcode::kWait:
      TUTTI_RETURN_IF_ERROR(checkEncodeKeys(msg));
      return keysBytes() + 4;
    case Opcode::kOk:
      return 0;
    case Opcode::kValue:
      TUTTI_RETURN_IF_ERROR(checkEncodeValue(msg));
      return 4 + msg.value.size();
    case Opcode::kInt:
      return 8;
    case Opcode::kTimeout:
      TUTTI_RETURN_IF_ERROR(checkEncodeKeys(msg));
      return keysBytes();
    case Opcode::kError:
      TUTTI_CHECK_ARG(msg.errorCode != ErrorCode::kOk && msg.errorCode <= ErrorCode::kInternal,
                      "cannot encode ERROR with code %d", static_cast<int>(msg.errorCode));
      return 5 + std::min(msg.text.size(), kMaxErrorBytes);
  }
  return Status(ErrorCode::kInvalidArgument, strFormat("cannot encode unknown opcode 0x%02x",
                                                       static_cast<unsigned>(msg.opcode)));
}

// Writes the fields in the order payloadSize() counted them; encode() asserts the two agree.
void encodePayload(const Message& msg, std::vector<std::uint8_t>* out) {
  auto putKeys = [&] {
    putU32(out, static_cast<std::uint32_t>(msg.keys.size()));
    for (const std::string& key : msg.keys) putField(out, key.data(), key.size());
  };
  switch (msg.opcode) {
    case Opcode::kSet:
      putField(out, msg.key.data(), msg.key.size());
      putField(out, msg.value.data(), msg.value.size());
      break;
    case Opcode::kGet:
      putField(out, msg.key.data(), msg.key.size());
      putU32(out, msg.timeoutMs);
      break;
    case Opcode::kAdd:
      putField(out, msg.key.data(), msg.key.size());
      putU64(out, static_cast<std::uint64_t>(msg.integer));
      break;
    case Opcode::kWait:
      putKeys();
      putU32(out, msg.timeoutMs);
      break;
    case Opcode::kOk:
      break;
    case Opcode::kValue:
      putField(out, msg.value.data(), msg.value.size());
      break;
    case Opcode::kInt:
      putU64(out, static_cast<std::uint64_t>(msg.integer));
      break;
    case Opcode::kTimeout:
      putKeys();
      break;
    case Opcode::kError:
      out->push_back(static_cast<std::uint8_t>(msg.errorCode));
      putField(out, msg.text.data(), std::min(msg.text.size(), kMaxErrorBytes));
      break;
  }
}

}  // namespace

const char* opcodeName(Opcode op) {
  switch (op) {
    case Opcode::kSet:
      return "SET";
    case Opcode::kGet:
      return "GET";
    case Opcode::kAdd:
      return "ADD";
    case Opcode::kWait:
      return "WAIT";
    case Opcode::kOk:
      return "OK";
    case Opcode::kValue:
      return "VALUE";
    case Opcode::kInt:
      return "INT";
    case Opcode::kTimeout:
      return "TIMEOUT";
    case Opcode::kError:
      return "ERROR";
  }
  return "unknown";
}

bool isRequest(Opcode op) {
  return op == Opcode::kSet || op == Opcode::kGet || op == Opcode::kAdd || op == Opcode::kWait;
}

Message Message::set(std::uint32_t id, std::string key, std::vector<std::uint8_t> value) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kSet;
  m.key = std::move(key);
  m.value = std::move(value);
  return m;
}

Message Message::get(std::uint32_t id, std::string key, std::uint32_t timeoutMs) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kGet;
  m.key = std::move(key);
  m.timeoutMs = timeoutMs;
  return m;
}

Message Message::add(std::uint32_t id, std::string key, std::int64_t delta) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kAdd;
  m.key = std::move(key);
  m.integer = delta;
  return m;
}

Message Message::wait(std::uint32_t id, std::vector<std::string> keys, std::uint32_t timeoutMs) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kWait;
  m.keys = std::move(keys);
  m.timeoutMs = timeoutMs;
  return m;
}

Message Message::ok(std::uint32_t id) {
  Message m;
  m.opcode = Opcode::kOk;
  m.requestId = id;
  return m;
}

Message Message::valueReply(std::uint32_t id, std::vector<std::uint8_t> value) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kValue;
  m.value = std::move(value);
  return m;
}

Message Message::intReply(std::uint32_t id, std::int64_t value) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kInt;
  m.integer = value;
  return m;
}

Message Message::timeoutReply(std::uint32_t id, std::vector<std::string> missing) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kTimeout;
  m.keys = std::move(missing);
  return m;
}

Message Message::errorReply(std::uint32_t id, ErrorCode code, std::string text) {
  Message m = Message::ok(id);
  m.opcode = Opcode::kError;
  m.errorCode = code;
  m.text = std::move(text);
  return m;
}

Status encode(const Message& msg, std::vector<std::uint8_t>* out) {
  TUTTI_ASSIGN_OR_RETURN(std::uint64_t payload, payloadSize(msg));
  TUTTI_CHECK_ARG(payload <= kMaxPayloadBytes,
                  "cannot encode %s: payload of %llu bytes exceeds the protocol cap of %zu bytes",
                  opcodeName(msg.opcode), static_cast<unsigned long long>(payload),
                  kMaxPayloadBytes);
  std::size_t start = out->size();
  out->reserve(start + kHeaderBytes + payload);
  out->insert(out->end(), std::begin(kMagic), std::end(kMagic));
  out->push_back(kVersion);
  out->push_back(static_cast<std::uint8_t>(msg.opcode));
  out->push_back(0);  // flags, reserved
  out->push_back(0);
  putU32(out, msg.requestId);
  putU32(out, static_cast<std::uint32_t>(payload));
  encodePayload(msg, out);
  // The size computed up front and the bytes written must agree, or the stream desyncs.
  TUTTI_ASSERT_CMP(out->size() - start, ==, kHeaderBytes + payload);
  return Status::Ok();
}

Result<std::vector<std::uint8_t>> encode(const Message& msg) {
  std::vector<std::uint8_t> out;
  TUTTI_RETURN_IF_ERROR(encode(msg, &out));
  return out;
}

Result<Header> decodeHeader(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes)
    return protocolError(
        strFormat("truncated header: %zu of %zu bytes", bytes.size(), kHeaderBytes));
  // Checked in wire order, magic first: a stranger (an HTTP client, a port scanner, another
  // protocol) is recognised before any other byte is interpreted.
  const std::uint8_t* p = bytes.data();
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0)
    return protocolError(
        strFormat("bad magic 0x%02x%02x%02x%02x (expected \"TSTR\"): not a tutti store peer", p[0],
                  p[1], p[2], p[3]));
  if (p[4] != kVersion)
    return protocolError(
        strFormat("unsupported version %u (this build speaks version %u)", p[4], kVersion));
  if (!isKnownOpcode(p[5])) return protocolError(strFormat("unknown opcode 0x%02x", p[5]));
  // Flags must be zero so that a later version can give them a meaning that old peers
  // refuse instead of silently ignoring.
  if (p[6] != 0 || p[7] != 0)
    return protocolError(strFormat("reserved flags 0x%02x%02x must be zero", p[6], p[7]));
  Header h;
  h.opcode = static_cast<Opcode>(p[5]);
  h.requestId = getU32(p + 8);
  h.payloadBytes = getU32(p + 12);
  // The cap is checked here, on the header alone, so that neither side ever buffers or
  // allocates for a payload larger than the protocol allows.
  if (h.payloadBytes > kMaxPayloadBytes)
    return protocolError(strFormat("%s declares a payload of %u bytes, above the cap of %zu bytes",
                                   opcodeName(h.opcode), h.payloadBytes, kMaxPayloadBytes));
  return h;
}

Result<Message> decodePayload(const Header& header, std::span<const std::uint8_t> payload) {
  if (payload.size() != header.payloadBytes)
    return protocolError(strFormat("%s payload is %zu bytes but its header declares %u",
                                   opcodeName(header.opcode), payload.size(), header.payloadBytes));
  Message m;
  m.opcode = header.opcode;
  m.requestId = header.requestId;
  // Field by field in wire order; each read fails on its own if the payload runs out.
  Reader r(payload, header.opcode);
  switch (header.opcode) {
    case Opcode::kSet:
      TUTTI_RETURN_IF_ERROR(r.field("key", Store::kMaxKeyBytes, &m.key));
      TUTTI_RETURN_IF_ERROR(r.field("value", Store::kMaxValueBytes, &m.value));
      break;
    case Opcode::kGet:
      TUTTI_RETURN_IF_ERROR(r.field("key", Store::kMaxKeyBytes, &m.key));
      TUTTI_RETURN_IF_ERROR(r.u32("timeout", &m.timeoutMs));
      break;
    case Opcode::kAdd:
      TUTTI_RETURN_IF_ERROR(r.field("key", Store::kMaxKeyBytes, &m.key));
      TUTTI_RETURN_IF_ERROR(r.i64("delta", &m.integer));
      break;
    case Opcode::kWait:
      TUTTI_RETURN_IF_ERROR(r.keyList(&m.keys));
      TUTTI_RETURN_IF_ERROR(r.u32("timeout", &m.timeoutMs));
      break;
    case Opcode::kOk:
      break;
    case Opcode::kValue:
      TUTTI_RETURN_IF_ERROR(r.field("value", Store::kMaxValueBytes, &m.value));
      break;
    case Opcode::kInt:
      TUTTI_RETURN_IF_ERROR(r.i64("integer", &m.integer));
      break;
    case Opcode::kTimeout:
      TUTTI_RETURN_IF_ERROR(r.keyList(&m.keys));
      break;
    case Opcode::kError: {
      std::uint8_t code = 0;
      TUTTI_RETURN_IF_ERROR(r.u8("error code", &code));
      if (code == 0 || code > static_cast<std::uint8_t>(ErrorCode::kInternal))
        return protocolError(strFormat("ERROR carries unknown error code %u", code));
      m.errorCode = static_cast<ErrorCode>(code);
      TUTTI_RETURN_IF_ERROR(r.field("message", kMaxErrorBytes, &m.text));
      break;
    }
  }
  TUTTI_RETURN_IF_ERROR(r.finish());
  return m;
}

Result<Message> decode(std::span<const std::uint8_t> bytes) {
  TUTTI_ASSIGN_OR_RETURN(Header h, decodeHeader(bytes));
  // A whole message must be exactly header + declared payload: short input is truncation,
  // long input is trailing garbage (or a second message the caller did not split off).
  std::size_t total = kHeaderBytes + h.payloadBytes;
  if (bytes.size() < total)
    return protocolError(
        strFormat("truncated %s: %zu of %zu bytes", opcodeName(h.opcode), bytes.size(), total));
  if (bytes.size() > total)
    return protocolError(strFormat("%zu trailing bytes after a %zu-byte %s message",
                                   bytes.size() - total, total, opcodeName(h.opcode)));
  return decodePayload(h, bytes.subspan(kHeaderBytes));
}

}  // namespace tutti::storeproto
