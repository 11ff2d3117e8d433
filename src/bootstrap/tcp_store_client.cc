// TcpStoreClient: Store over one blocking-style request/reply exchange per call, on a
// non-blocking socket whose every read and write is bounded by the call's deadline.
//
// The client trusts nothing it reads: replies go through the same decoder as requests do on
// the server, must carry the id of the request in flight and must be one of the replies
// that request allows. Any doubt about where the stream stands (a timeout mid-reply, a bad
// reply, a closed peer) drops the connection; the next call dials again, so one bad
// exchange never poisons the ones after it. Every connection, the first and every
// reconnection, authenticates before its first request (auth_gate.h).

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/bounded_store.h"
#include "bootstrap/store_checks.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store.h"

namespace tutti {
namespace {

using storeproto::Message;
using storeproto::Opcode;

// The server-side timeout for a deadline: the time left in whole milliseconds, rounded up
// so the server never gives up before the caller would.
std::uint32_t serverTimeoutMs(Deadline deadline) {
  if (deadline.isNever()) return storeproto::kNoTimeout;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline.remaining()).count();
  return static_cast<std::uint32_t>(
      std::min<long long>(ms, static_cast<long long>(storeproto::kNoTimeout) - 1));
}

// Connects to the store and authenticates, retrying until `deadline` while the server is
// not listening yet (connectTcp retries that) or closes the connection before its verdict:
// its handshake slots were all busy, which passes. A refusal is final. So is, with
// `gone` (a connection was made before), a refused connection: the server listened and its
// process is gone, which no wait mends; that sets *gone.
Result<UniqueFd> dialStore(const HostPort& server, const auth::Key& key, Deadline deadline,
                           bool* gone = nullptr) {
  auto backoff = std::chrono::milliseconds(1);
  while (true) {
    Result<UniqueFd> connected = connectTcp(server, deadline, gone == nullptr);
    if (!connected.ok() && connected.status().code() == ErrorCode::kPeerFailure && gone)
      *gone = true;
    TUTTI_ASSIGN_OR_RETURN(UniqueFd fd, std::move(connected));
    Status s = auth::authenticateToServer(fd.get(), key, auth::Context::store(), deadline);
    if (s.ok()) return fd;
    if (s.code() != ErrorCode::kPeerFailure || deadline.expired()) return s;
    TUTTI_DEBUG(kBootstrap, "store at %s %s; connecting again", server.toString().c_str(),
                s.message().c_str());
    std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

class Client final : public TcpStoreClient, public detail::BoundedStore {
 public:
  Client(HostPort server, const auth::Key& key, UniqueFd fd, HostPort local,
         std::chrono::milliseconds operationTimeout, const std::string& servedBy)
      : server_(std::move(server)),
        serverText_(server_.toString()),
        storeName_("the store at " + serverText_ +
                   (servedBy.empty() ? "" : " (served by " + servedBy + ")")),
        key_(key),
        operationTimeout_(operationTimeout),
        fd_(std::move(fd)),
        local_(std::move(local)) {}

  Status set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    return setBefore(key, value, Deadline::after(operationTimeout_));
  }

  Status setBefore(const std::string& key, const std::vector<std::uint8_t>& value,
                   Deadline deadline) override {
    TUTTI_RETURN_IF_ERROR(detail::checkKey(key));
    TUTTI_RETURN_IF_ERROR(detail::checkValue(value));
    return call(Message::set(0, key, value), Opcode::kOk, deadline).status();
  }

  Result<std::vector<std::uint8_t>> get(const std::string& key, Deadline deadline) override {
    TUTTI_RETURN_IF_ERROR(detail::checkKey(key));
    TUTTI_ASSIGN_OR_RETURN(Message reply, call(Message::get(0, key, serverTimeoutMs(deadline)),
                                               Opcode::kValue, deadline));
    if (reply.opcode == Opcode::kTimeout) return timeoutStatus(reply.keys, 1);
    return std::move(reply.value);
  }

  Result<std::int64_t> add(const std::string& key, std::int64_t delta) override {
    return addBefore(key, delta, Deadline::after(operationTimeout_));
  }

  Result<std::int64_t> addBefore(const std::string& key, std::int64_t delta,
                                 Deadline deadline) override {
    TUTTI_RETURN_IF_ERROR(detail::checkKey(key));
    TUTTI_ASSIGN_OR_RETURN(Message reply,
                           call(Message::add(0, key, delta), Opcode::kInt, deadline));
    return reply.integer;
  }

  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    TUTTI_RETURN_IF_ERROR(detail::checkWaitKeys(keys));
    TUTTI_ASSIGN_OR_RETURN(Message reply, call(Message::wait(0, keys, serverTimeoutMs(deadline)),
                                               Opcode::kOk, deadline));
    if (reply.opcode == Opcode::kTimeout) return timeoutStatus(reply.keys, keys.size());
    return Status::Ok();
  }

  HostPort localAddress() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return local_;
  }

 private:
  // Sends `request` and returns its reply: `success`, or TIMEOUT for GET/WAIT. An ERROR
  // reply becomes its status; anything else is kProtocolError and closes the connection.
  Result<Message> call(Message request, Opcode success, Deadline deadline);
  Status exchange(const std::vector<std::uint8_t>& bytes, const Message& request, Opcode success,
                  Deadline replyDeadline, Message* reply);
  Status failed(const Status& s, const Message& request);

  // The server's TIMEOUT reply names exactly the keys still missing.
  Status timeoutStatus(const std::vector<std::string>& missing, std::size_t asked) const {
    return Status(ErrorCode::kTimeout,
                  strFormat("timed out waiting for store keys at %s; still missing %zu of %zu: %s",
                            serverText_.c_str(), missing.size(), asked,
                            detail::describeKeys(missing).c_str()));
  }

  const HostPort server_;
  const std::string serverText_;
  const std::string storeName_;  // "the store at H:P (served by ...)", for a store gone
  const auth::Key key_;  // proven on every (re)connection
  const std::chrono::milliseconds operationTimeout_;
  mutable std::mutex mu_;  // held across a whole request/reply exchange
  UniqueFd fd_;            // invalid after a failure until the next call reconnects
  HostPort local_;
  std::uint32_t nextId_ = 1;
};

Result<Message> Client::call(Message request, Opcode success, Deadline deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  request.requestId = nextId_++;
  // Encoding first: a request over the protocol's bounds (a WAIT on very many long keys) is
  // the caller's error and must not cost the connection.
  TUTTI_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, storeproto::encode(request));
  if (!fd_.valid()) {
    bool gone = false;
    Result<UniqueFd> fd = dialStore(server_, key_, deadline, &gone);
    if (gone) return Status(ErrorCode::kPeerFailure, storeName_ + " is gone: connection refused");
    if (!fd.ok()) return fd.status().withContext("reconnecting to the store at " + serverText_);
    fd_ = std::move(fd).value();
    Result<HostPort> local = tutti::localAddress(fd_.get());
    if (local.ok()) local_ = std::move(local).value();
    TUTTI_DEBUG(kBootstrap, "reconnected to the store at %s", serverText_.c_str());
  }
  // The server answers a GET/WAIT at the deadline with the keys still missing; waiting a
  // little longer for that answer keeps the connection in step and the message precise.
  bool serverTimed = request.opcode == Opcode::kGet || request.opcode == Opcode::kWait;
  Deadline replyDeadline = deadline;
  if (serverTimed && !deadline.isNever())
    replyDeadline = Deadline::after(deadline.remaining() + kReplyGrace);
  Message reply;
  Status s = exchange(bytes, request, success, replyDeadline, &reply);
  if (!s.ok()) return failed(s, request);
  if (reply.opcode == Opcode::kError)
    return Status(reply.errorCode,
                  strFormat("store at %s: %s", serverText_.c_str(), reply.text.c_str()));
  return reply;
}

Status Client::exchange(const std::vector<std::uint8_t>& bytes, const Message& request,
                        Opcode success, Deadline replyDeadline, Message* reply) {
  TUTTI_RETURN_IF_ERROR(writeFull(fd_.get(), bytes.data(), bytes.size(), replyDeadline));
  std::uint8_t head[storeproto::kHeaderBytes];
  TUTTI_RETURN_IF_ERROR(readFull(fd_.get(), head, sizeof(head), replyDeadline));
  TUTTI_ASSIGN_OR_RETURN(storeproto::Header header, storeproto::decodeHeader(head));
  const char* sent = storeproto::opcodeName(request.opcode);
  const char* got = storeproto::opcodeName(header.opcode);
  if (storeproto::isRequest(header.opcode))
    return Status(ErrorCode::kProtocolError,
                  strFormat("store protocol: got a %s request where a reply belongs", got));
  if (header.requestId != request.requestId)
    return Status(ErrorCode::kProtocolError,
                  strFormat("store protocol: reply to request %u while request %u is pending",
                            header.requestId, request.requestId));
  bool timeoutOk = request.opcode == Opcode::kGet || request.opcode == Opcode::kWait;
  if (header.opcode != success && header.opcode != Opcode::kError &&
      !(timeoutOk && header.opcode == Opcode::kTimeout))
    return Status(ErrorCode::kProtocolError,
                  strFormat("store protocol: answered %s with %s", sent, got));
  // decodeHeader bounded payloadBytes by the protocol cap, so this allocation is bounded.
  std::vector<std::uint8_t> payload(header.payloadBytes);
  TUTTI_RETURN_IF_ERROR(readFull(fd_.get(), payload.data(), payload.size(), replyDeadline));
  TUTTI_ASSIGN_OR_RETURN(*reply, storeproto::decodePayload(header, payload));
  return Status::Ok();
}

// Maps a failed exchange to the caller's error and forgets the connection.
Status Client::failed(const Status& s, const Message& request) {
  // Whatever went wrong, the stream can no longer be trusted to be at a message boundary.
  fd_.reset();
  const char* op = storeproto::opcodeName(request.opcode);
  switch (s.code()) {
    case ErrorCode::kPeerFailure:
      return Status(ErrorCode::kPeerFailure,
                    strFormat("store at %s closed the connection (%s during %s)",
                              serverText_.c_str(), s.message().c_str(), op));
    case ErrorCode::kTimeout: {
      std::vector<std::string> keys = request.keys;
      if (request.opcode != Opcode::kWait) keys.push_back(request.key);
      return Status(ErrorCode::kTimeout,
                    strFormat("store at %s did not answer %s on keys %s before the deadline",
                              serverText_.c_str(), op, detail::describeKeys(keys).c_str()));
    }
    case ErrorCode::kProtocolError:
      TUTTI_WARN(kBootstrap, "bad reply from the store at %s: %s", serverText_.c_str(),
                 s.message().c_str());
      return s.withContext("store at " + serverText_);
    default:
      return s.withContext(strFormat("%s to the store at %s", op, serverText_.c_str()));
  }
}

}  // namespace

Result<std::shared_ptr<TcpStoreClient>> TcpStoreClient::connect(
    const HostPort& server, const auth::Key& key, Deadline deadline,
    std::chrono::milliseconds operationTimeout, const std::string& servedBy) {
  TUTTI_CHECK_ARG(operationTimeout.count() > 0,
                  "store operation timeout must be positive, got %lld ms",
                  static_cast<long long>(operationTimeout.count()));
  Result<UniqueFd> fd = dialStore(server, key, deadline);
  if (!fd.ok()) return fd.status().withContext("connecting to the store at " + server.toString());
  TUTTI_ASSIGN_OR_RETURN(HostPort local, tutti::localAddress(fd->get()));
  TUTTI_DEBUG(kBootstrap, "connected to the store at %s from %s (authenticated)",
              server.toString().c_str(), local.toString().c_str());
  return std::shared_ptr<TcpStoreClient>(std::make_shared<Client>(
      server, key, std::move(fd).value(), std::move(local), operationTimeout, servedBy));
}

}  // namespace tutti
