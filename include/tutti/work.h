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

  /// True once the operation has finished (successfully or not). Never blocks and never
  /// runs an operation on the calling thread; with CommOptions::asyncProgress "wait", the
  /// first test() of an unfinished operation asks the worker to start the queued ones now
  /// rather than after their grace (at most about 2 ms), as MPI_Test progresses requests.
  bool test() const;

  /// Blocks until the operation finishes and returns its status. When no other thread is
  /// running the communicator's operations, the calling thread runs the queued ones itself,
  /// in issue order up to this one (as MPI_Wait progresses a request), instead of waiting
  /// for the communicator's worker thread; the Works of the others complete as usual.
  Status wait() const;

  /// Blocks until the operation finishes or `deadline` passes. On kTimeout the operation
  /// is still running (its own deadline still applies); call wait() again later. Runs no
  /// operation on the calling thread (one could outlast `deadline`); asks the worker to
  /// start the queued ones at once instead.
  Status wait(Deadline deadline) const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace tutti
