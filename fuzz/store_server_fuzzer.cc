// Fuzz target: the TCP store server's request path after authentication
// (src/bootstrap/tcp_store_server.cc).
//
// Each input is what one authenticated client sends: a fresh server is started on the
// loopback interface, a client connects and passes the handshake with the job key, then
// sends the input's bytes and shuts its writing side. The server must neither crash nor
// hang: it answers and then closes the connection, and every reply the client reads is
// checked against a reference: the same requests applied, in order, to the in-memory
// Store (bootstrap/memory_store.cc) with deadlines that have passed.
//
// The server reads requests until the first one that does not decode (or is a reply),
// answers them in order, and closes the connection on that one or on the client's end of
// stream. A GET or WAIT whose keys are missing waits, and the client's further requests
// wait behind it: the client's end of stream drops it unanswered, unless its own timeout
// came first (which only a timeout of a millisecond or so can), in which case it is
// answered TIMEOUT naming the keys still missing and the next request is served. Nothing
// else can set a key meanwhile (the client is alone), so the reference answers a waiting
// request as timed out and goes on; the replies must be a prefix of the reference's, whose
// length depends on timing and whose contents do not.
//
// A fresh server per input keeps the inputs independent (each starts from an empty store)
// and costs a thread and a few sockets, well under a millisecond.

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/assert.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/net.h"
#include "bootstrap/auth.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store.h"
#include "fuzz_keys.h"
#include "tutti/store.h"

namespace {

using tutti::Deadline;
using tutti::ErrorCode;
using tutti::Status;
using namespace tutti::storeproto;
using Bytes = std::vector<std::uint8_t>;

// Far beyond anything a correct server needs on a loaded machine; an input that reaches it
// is a hang, which libFuzzer's -timeout reports with the input.
constexpr std::chrono::seconds kPatience{60};

// The requests the server will read from `bytes`, in order: up to the first one that does
// not decode, is a reply, or is cut short by the end of the input.
std::vector<Message> requestsIn(std::span<const std::uint8_t> bytes) {
  std::vector<Message> out;
  while (bytes.size() >= kHeaderBytes) {
    tutti::Result<Header> header = decodeHeader(bytes);
    if (!header.ok() || !isRequest(header->opcode)) break;
    const std::size_t total = kHeaderBytes + header->payloadBytes;
    if (bytes.size() < total) break;
    tutti::Result<Message> m =
        decodePayload(*header, bytes.subspan(kHeaderBytes, header->payloadBytes));
    if (!m.ok()) break;
    out.push_back(std::move(m).value());
    bytes = bytes.subspan(total);
  }
  return out;
}

// The reply the reference store gives to `request`; one that would wait times out.
Message referenceReply(tutti::Store& store, const Message& request) {
  const Deadline passed = Deadline::after(std::chrono::milliseconds(0));
  switch (request.opcode) {
    case Opcode::kSet: {
      TUTTI_ASSERT(store.set(request.key, request.value).ok());  // decoded, so within bounds
      return Message::ok(request.requestId);
    }
    case Opcode::kGet: {
      tutti::Result<Bytes> value = store.get(request.key, passed);
      if (value.ok()) return Message::valueReply(request.requestId, *value);
      return Message::timeoutReply(request.requestId, {request.key});
    }
    case Opcode::kAdd: {
      tutti::Result<std::int64_t> sum = store.add(request.key, request.integer);
      if (sum.ok()) return Message::intReply(request.requestId, *sum);
      return Message::errorReply(request.requestId, sum.status().code(), sum.status().message());
    }
    case Opcode::kWait: {
      std::vector<std::string> missing;
      for (const std::string& key : request.keys)
        if (!store.get(key, passed).ok()) missing.push_back(key);
      if (missing.empty()) return Message::ok(request.requestId);
      return Message::timeoutReply(request.requestId, std::move(missing));
    }
    default:
      TUTTI_ASSERT(isRequest(request.opcode));  // requestsIn() keeps requests only
      return Message::ok(request.requestId);
  }
}

// The reference's replies to `requests`, encoded back to back.
Bytes referenceReplies(const std::vector<Message>& requests) {
  std::shared_ptr<tutti::Store> store = tutti::makeMemoryStore();
  Bytes out;
  for (const Message& request : requests)
    TUTTI_ASSERT(encode(referenceReply(*store, request), &out).ok());
  return out;
}

// Everything the server sends until it closes the connection.
Bytes readToEnd(int fd) {
  Bytes out;
  const Deadline deadline = Deadline::after(kPatience);
  std::uint8_t buf[16384];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out.insert(out.end(), buf, buf + n);
      continue;
    }
    // A server that closes with our bytes unread resets the connection: also its end.
    if (n == 0 || errno == ECONNRESET) return out;
    TUTTI_ASSERT(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    pollfd pfd{fd, POLLIN, 0};
    TUTTI_ASSERT(!deadline.expired());
    ::poll(&pfd, 1, deadline.pollTimeoutMs());
  }
}

const tutti::auth::Key& jobKey() {
  static const tutti::auth::Key key = *tutti::auth::Key::fromSecret(tutti::fuzz::kStoreSecret);
  return key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Every malformed request is a WARN; thousands a second would drown the fuzzer's output.
  static const bool quiet = tutti::log::configure("ERROR", "ALL", "");
  TUTTI_ASSERT(quiet);
  const std::span<const std::uint8_t> bytes(data, size);

  tutti::TcpStoreServer::Options options;
  options.key = jobKey();
  options.maxClients = 1;
  options.authTimeout = kPatience;
  auto server = tutti::TcpStoreServer::start("127.0.0.1", 0, options);
  TUTTI_ASSERT(server.ok());
  const Deadline deadline = Deadline::after(kPatience);
  tutti::Result<tutti::UniqueFd> fd = tutti::connectTcp((*server)->address(), deadline);
  TUTTI_ASSERT(fd.ok());
  TUTTI_ASSERT(tutti::auth::authenticateToServer(fd->get(), jobKey(), tutti::auth::Context::store(),
                                                 deadline)
                   .ok());
  // The server may close as soon as it meets a bad request, before it has read the rest.
  const Status sent = tutti::writeFull(fd->get(), bytes.data(), bytes.size(), deadline);
  TUTTI_ASSERT(sent.ok() || sent.code() == ErrorCode::kPeerFailure);
  ::shutdown(fd->get(), SHUT_WR);
  const Bytes replies = readToEnd(fd->get());

  const Bytes expected = referenceReplies(requestsIn(bytes));
  // A prefix of whole replies: decode them one by one and compare.
  std::span<const std::uint8_t> got(replies);
  std::span<const std::uint8_t> want(expected);
  while (!got.empty()) {
    tutti::Result<Header> header = decodeHeader(got);
    TUTTI_ASSERT(header.ok());
    const std::size_t total = kHeaderBytes + header->payloadBytes;
    TUTTI_ASSERT(got.size() >= total && want.size() >= total);
    TUTTI_ASSERT(
        std::equal(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(total), want.begin()));
    got = got.subspan(total);
    want = want.subspan(total);
  }
  (*server)->stop();
  return 0;
}
