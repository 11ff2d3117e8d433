#include "transport/loopback.h"

#include <algorithm>
#include <cstring>

#include "base/strings.h"

namespace tutti {
namespace {

// What a receive does with a message's bytes: hands them to its combine sink when it has
// one (as other links may), else copies them into its buffer.
void deliver(TransferRequest* request, const char* bytes, std::size_t count) {
  if (request->combine != nullptr) {
    if (count > 0) request->combine->take(0, bytes, count);
    request->combined = true;
  } else if (count > 0) {
    std::memcpy(request->data, bytes, count);
  }
}

// Spare buffers kept for later messages: up to this much (the other links' default cap on
// unexpected bytes), so that a loop of sends to self allocates nothing once warm.
constexpr std::uint64_t kSpareBudgetBytes = 64u << 20;

}  // namespace

LoopbackLink::LoopbackLink(int rank, WaitSignal* progress) : rank_(rank), progress_(progress) {}

LoopbackLink::~LoopbackLink() = default;

void LoopbackLink::complete(TransferRequest* request, Status status) {
  request->status_ = std::move(status);
  request->state.store(TransferRequest::kDone, std::memory_order_release);
}

Status LoopbackLink::sizeMismatch(Tag tag, std::size_t sent, std::size_t want) const {
  return Status(ErrorCode::kMismatch,
                strFormat("rank %d sent itself a message of %zu bytes (tag 0x%llx) but its "
                          "receive takes %zu",
                          rank_, sent, static_cast<unsigned long long>(tag), want),
                rank_);
}

void LoopbackLink::postSend(TransferRequest* request, Tag tag, const void* data,
                            std::size_t bytes) {
  request->tag = tag;
  request->data = const_cast<char*>(static_cast<const char*>(data));
  request->bytes = bytes;
  request->progress = 0;
  request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(posted_.begin(), posted_.end(),
                           [&](const TransferRequest* r) { return r->tag == tag; });
    if (it != posted_.end()) {
      TransferRequest* receive = *it;
      posted_.erase(it);
      if (receive->bytes != bytes) {
        Status refused = sizeMismatch(tag, bytes, receive->bytes);
        complete(receive, refused);
        complete(request, refused);
      } else {
        deliver(receive, static_cast<const char*>(data), bytes);
        complete(receive, Status::Ok());
        complete(request, Status::Ok());
      }
    } else {
      // No receive yet: the message waits in a buffer of ours, and the send is done.
      std::unique_ptr<Buffered> b = spare_.take(bytes);
      b->tag = tag;
      b->bytes = bytes;
      if (bytes > 0) std::memcpy(b->data.data(), data, bytes);
      pushEarly(buffered_, std::move(b));
      complete(request, Status::Ok());
    }
  }
  progress_->notify();
}

void LoopbackLink::postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) {
  request->tag = tag;
  request->data = static_cast<char*>(data);
  request->bytes = bytes;
  request->progress = 0;
  request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(buffered_.begin(), buffered_.end(),
                           [&](const std::unique_ptr<Buffered>& b) { return b->tag == tag; });
    if (it == buffered_.end()) {
      posted_.push_back(request);
      return;  // nothing completed: nothing to notify
    }
    std::unique_ptr<Buffered> b = std::move(*it);
    buffered_.erase(it);
    if (b->bytes != bytes) {
      complete(request, sizeMismatch(tag, b->bytes, bytes));
    } else {
      deliver(request, b->data.data(), bytes);
      complete(request, Status::Ok());
    }
    spare_.give(std::move(b), kSpareBudgetBytes);
  }
  progress_->notify();
}

void LoopbackLink::cancel(TransferRequest* request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (request->done()) return;
    auto it = std::find(posted_.begin(), posted_.end(), request);
    if (it != posted_.end()) posted_.erase(it);
    complete(request, Status(ErrorCode::kAborted, "transfer cancelled"));
  }
  progress_->notify();
}

std::size_t LoopbackLink::bufferedMessages() {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffered_.size();
}

}  // namespace tutti
