#pragma once
// The objects behind the C API's opaque handles, and the few helpers every C entry point
// shares: code and enum conversions (checked one to one at compile time), the per-
// communicator last-error slot, and the guard that turns a C call into a C++ one.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>

#include "base/strings.h"
#include "tutti/communicator.h"
#include "tutti/tutti.h"

namespace tutti::capi {

/// The last error of one communicator. Shared with the requests it issued, so a request
/// waited on after its communicator was destroyed still has somewhere to report to.
/// Thread-safe.
class ErrorSlot {
 public:
  /// Replaces the message.
  void record(std::string message);
  /// The message as of now, copied into a buffer owned by this slot and the calling thread,
  /// so that another thread recording an error cannot invalidate the returned pointer. The
  /// copy lives until this thread reads again or the slot is destroyed.
  const char* read();

 private:
  std::mutex mutex_;
  std::string message_;
  // One copy per reading thread; bounded by the threads that ever read this communicator.
  std::map<std::thread::id, std::string> copies_;
};

/// The result code of an error code; the values match one to one (static_asserts in
/// comm.cc).
inline tuttiResult_t toResult(ErrorCode code) {
  return static_cast<tuttiResult_t>(static_cast<int>(code));
}

/// The C++ data type of a C one; kInvalidArgument for a value outside the enum.
Result<DataType> toDataType(tuttiDataType_t datatype);
/// The C++ operator of a C one; kInvalidArgument for a value outside the enum.
Result<ReduceOp> toReduceOp(tuttiRedOp_t op);

}  // namespace tutti::capi

/// A communicator handle: the C++ communicator, the settings the C API adds to it, and its
/// last error. Destroyed by tuttiCommDestroy.
struct tuttiComm {
  explicit tuttiComm(tutti::Communicator c) : comm(std::move(c)) {}

  /// Options of every call: the timeout tuttiSetTimeout set, if any.
  tutti::CallOptions callOptions() const {
    tutti::CallOptions options;
    options.timeout = timeout;
    return options;
  }

  tutti::Communicator comm;
  std::optional<std::chrono::milliseconds> timeout;
  std::shared_ptr<tutti::capi::ErrorSlot> errors = std::make_shared<tutti::capi::ErrorSlot>();
  /// Held shared by every C call on this handle while it runs (guarded()), and exclusively
  /// by tuttiCommDestroy and tuttiCommAbort before they free it: a call in progress on
  /// another thread when tuttiCommAbort is called returns (tuttiAborted) before the handle
  /// goes away, instead of returning into freed memory.
  std::shared_mutex inUse;
};

/// A request handle: the operation's Work, where its failure is reported, and the name of
/// the call that started it (for that report). Destroyed by tuttiRequestFree.
struct tuttiRequest {
  tutti::Work work;
  std::shared_ptr<tutti::capi::ErrorSlot> errors;
  const char* function = "";
};

namespace tutti::capi {

/// Records `status` as `comm`'s last error, prefixed with the C function's name, and
/// returns its code (tuttiSuccess for OK, recording nothing).
tuttiResult_t report(tuttiComm* comm, const char* function, const Status& status);

/// Runs `body(comm)` for the C function `function`, returning a Status, after checking that
/// comm is not NULL; records a failure as comm's last error. Holds comm->inUse shared
/// throughout. No C++ exception may cross
/// into a C caller (that is undefined behaviour there): tutti itself never throws, but the
/// standard library can (std::bad_alloc), so the guard turns one into a result code.
template <typename Body>
tuttiResult_t guarded(tuttiComm* comm, const char* function, Body&& body) {
  if (comm == nullptr) return tuttiInvalidArgument;
  try {
    std::shared_lock<std::shared_mutex> inUse(comm->inUse);
    return report(comm, function, body(*comm));
  } catch (const std::bad_alloc&) {
    return report(comm, function, Status(ErrorCode::kSystemError, "out of memory"));
  } catch (...) {
    return report(comm, function, Status(ErrorCode::kInternal, "unexpected C++ exception"));
  }
}

/// For the ...Async functions: runs `start(comm)`, which returns the operation's Work (or an
/// argument error), and hands it out as a new request in *request. An operation that has
/// already failed when it is issued (bad arguments) is reported at once, with *request set
/// to NULL.
template <typename Start>
tuttiResult_t startRequest(tuttiComm* comm, tuttiRequest_t* request, const char* function,
                           Start&& start) {
  if (request == nullptr) {
    return comm == nullptr
               ? tuttiInvalidArgument
               : report(comm, function,
                        Status(ErrorCode::kInvalidArgument, "the request pointer is NULL"));
  }
  *request = nullptr;
  return guarded(comm, function, [&](tuttiComm& c) -> Status {
    Result<Work> work = start(c);
    if (!work.ok()) return work.status();
    if (work->test()) {
      Status early = work->wait();
      if (!early.ok()) return early;
    }
    *request = new tuttiRequest{std::move(work).value(), c.errors, function};
    return Status::Ok();
  });
}

}  // namespace tutti::capi
