#include "tutti/work.h"

#include "core/work_state.h"

namespace tutti {

namespace detail {

bool WorkState::test() const {
  if (done()) return true;
  if (queue_ != nullptr && !hastened_.exchange(true, std::memory_order_relaxed)) {
    if (QueueRunner* runner = queue_->enter()) {
      runner->runSoon();
      queue_->leave();
    }
  }
  return done();
}

Status WorkState::wait(Deadline deadline) const {
  // With a deadline the wait returns by it, which running an operation here could not
  // promise: only open-ended waits run queued operations.
  if (!done() && queue_ != nullptr) {
    if (QueueRunner* runner = queue_->enter()) {
      if (deadline.isNever()) (void)runner->runQueuedUntil(*this);
      else runner->runSoon();
      queue_->leave();
    }
  }
  while (true) {
    auto seen = signal_.snapshot();
    if (done()) return status_;
    if (!signal_.waitChange(seen, deadline, spinNs_) && deadline.expired() && !done())
      return Status(ErrorCode::kTimeout,
                    "the operation has not finished yet (it keeps running; wait again)");
  }
}

}  // namespace detail

Work::Work() = default;
Work::Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

bool Work::test() const { return state_ != nullptr && state_->test(); }

Status Work::wait() const { return wait(Deadline::never()); }

Status Work::wait(Deadline deadline) const {
  if (state_ == nullptr) return Status(ErrorCode::kInvalidUsage, "wait() on an empty Work handle");
  return state_->wait(deadline);
}

}  // namespace tutti
