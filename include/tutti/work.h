#pragma once
/// \file
/// Work: the handle of one operation started with an `...Async` call.

#include <memory>

#include "tutti/deadline.h"
#include "tutti/export.h"
#include "tutti/status.h"

namespace tutti {

namespace detail {
class WorkState;
}

/// Handle for an in-flight operation. Copyable (copies share the operation); thread-safe.
/// The operation itself always ends by its own deadline (the call's timeout), so wait()
/// without arguments is bounded.
class TUTTI_API Work {
 public:
  /// An invalid handle; wait() returns kInvalidUsage.
  Work();
  explicit Work(std::shared_ptr<detail::WorkState> state);

  bool valid() const { return state_ != nullptr; }

  /// True once the operation has finished (successfully or not). Never blocks.
  bool test() const;

  /// Blocks until the operation finishes and returns its status.
  Status wait() const;

  /// Blocks until the operation finishes or `deadline` passes. On kTimeout the operation
  /// is still running (its own deadline still applies); call wait() again later.
  Status wait(Deadline deadline) const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace tutti
