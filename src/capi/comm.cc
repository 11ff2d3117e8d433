// The C API's library, communicator and request functions (tutti.h), as thin wrappers over
// tutti::Communicator and tutti::Work.

#include <cmath>

#include "base/log.h"
#include "base/macros.h"
#include "capi/handles.h"
#include "tutti/build_config.h"
#include "tutti/memory.h"
#include "tutti/tutti.h"

namespace tutti::capi {
namespace {

// The C enums mirror the C++ ones value for value, so conversions are casts; these prove it.
static_assert(tuttiSuccess == static_cast<int>(ErrorCode::kOk));
static_assert(tuttiInvalidArgument == static_cast<int>(ErrorCode::kInvalidArgument));
static_assert(tuttiInvalidUsage == static_cast<int>(ErrorCode::kInvalidUsage));
static_assert(tuttiMismatch == static_cast<int>(ErrorCode::kMismatch));
static_assert(tuttiTimeout == static_cast<int>(ErrorCode::kTimeout));
static_assert(tuttiPeerFailure == static_cast<int>(ErrorCode::kPeerFailure));
static_assert(tuttiProtocolError == static_cast<int>(ErrorCode::kProtocolError));
static_assert(tuttiSystemError == static_cast<int>(ErrorCode::kSystemError));
static_assert(tuttiNotSupported == static_cast<int>(ErrorCode::kNotSupported));
static_assert(tuttiAborted == static_cast<int>(ErrorCode::kAborted));
static_assert(tuttiInternalError == static_cast<int>(ErrorCode::kInternal));
static_assert(tuttiNumResults == static_cast<int>(ErrorCode::kInternal) + 1,
              "a new ErrorCode needs its tuttiResult_t");

static_assert(tuttiInt8 == static_cast<int>(DataType::kInt8));
static_assert(tuttiUint8 == static_cast<int>(DataType::kUint8));
static_assert(tuttiInt32 == static_cast<int>(DataType::kInt32));
static_assert(tuttiUint32 == static_cast<int>(DataType::kUint32));
static_assert(tuttiInt64 == static_cast<int>(DataType::kInt64));
static_assert(tuttiUint64 == static_cast<int>(DataType::kUint64));
static_assert(tuttiFloat16 == static_cast<int>(DataType::kFloat16));
static_assert(tuttiBfloat16 == static_cast<int>(DataType::kBFloat16));
static_assert(tuttiFloat32 == static_cast<int>(DataType::kFloat32));
static_assert(tuttiFloat64 == static_cast<int>(DataType::kFloat64));
static_assert(tuttiNumTypes == kNumDataTypes, "a new DataType needs its tuttiDataType_t");

static_assert(tuttiSum == static_cast<int>(ReduceOp::kSum));
static_assert(tuttiProd == static_cast<int>(ReduceOp::kProd));
static_assert(tuttiMin == static_cast<int>(ReduceOp::kMin));
static_assert(tuttiMax == static_cast<int>(ReduceOp::kMax));
static_assert(tuttiAvg == static_cast<int>(ReduceOp::kAvg));
static_assert(tuttiNumOps == kNumReduceOps, "a new ReduceOp needs its tuttiRedOp_t");

// Every int is a value of the C enums (their IntMin/IntMax members), so converting one that
// a C caller cast from any int is defined behaviour here, and the checks below see it.
static_assert(sizeof(tuttiDataType_t) == sizeof(int) && sizeof(tuttiRedOp_t) == sizeof(int) &&
              sizeof(tuttiResult_t) == sizeof(int));

// tuttiSetTimeout's bound: far beyond any job, and small enough that the deadline
// arithmetic (nanoseconds in 64 bits) cannot overflow.
constexpr double kMaxTimeoutSeconds = 1e9;

// A failed init has no communicator to keep its message in, and a process-wide "last
// error" would be mutable global state (STYLE.md 3.6), so the message goes to the log, which
// shows WARN by default.
tuttiResult_t initFailed(const char* function, const Status& status) {
  TUTTI_WARN(kInit, "%s: %s", function, status.toString().c_str());
  return toResult(status.code());
}

// Wraps a new C++ communicator in a handle.
tuttiResult_t handOut(const char* function, Result<Communicator> comm, tuttiComm_t* out) {
  if (!comm.ok()) return initFailed(function, comm.status());
  *out = new (std::nothrow) tuttiComm(std::move(comm).value());
  return *out == nullptr ? tuttiSystemError : tuttiSuccess;
}

// The status of a finished request, recorded as its communicator's last error on failure.
tuttiResult_t requestResult(tuttiRequest* request, const Status& status) {
  if (status.ok()) return tuttiSuccess;
  try {
    request->errors->record(strFormat("%s: %s", request->function, status.toString().c_str()));
  } catch (const std::bad_alloc&) {
    // No exception may reach the C caller (see guarded() in handles.h); the result code
    // still tells what happened, only the message is lost.
  }
  return toResult(status.code());
}

}  // namespace

void ErrorSlot::record(std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  message_ = std::move(message);
}

const char* ErrorSlot::read() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string& copy = copies_[std::this_thread::get_id()];
  copy = message_;
  return copy.c_str();
}

Result<DataType> toDataType(tuttiDataType_t datatype) {
  const int value = static_cast<int>(datatype);
  TUTTI_CHECK_ARG(value >= 0 && value < tuttiNumTypes,
                  "datatype %d is not a tuttiDataType_t (0 to %d)", value, tuttiNumTypes - 1);
  return static_cast<DataType>(value);
}

Result<ReduceOp> toReduceOp(tuttiRedOp_t op) {
  const int value = static_cast<int>(op);
  TUTTI_CHECK_ARG(value >= 0 && value < tuttiNumOps, "op %d is not a tuttiRedOp_t (0 to %d)",
                  value, tuttiNumOps - 1);
  return static_cast<ReduceOp>(value);
}

tuttiResult_t report(tuttiComm* comm, const char* function, const Status& status) {
  if (status.ok()) return tuttiSuccess;
  comm->errors->record(strFormat("%s: %s", function, status.toString().c_str()));
  return toResult(status.code());
}

}  // namespace tutti::capi

using namespace tutti;
using namespace tutti::capi;

extern "C" {

tuttiResult_t tuttiGetVersion(int* version) {
  if (version == nullptr) return tuttiInvalidArgument;
  *version = TUTTI_VERSION_CODE(TUTTI_VERSION_MAJOR, TUTTI_VERSION_MINOR, TUTTI_VERSION_PATCH);
  return tuttiSuccess;
}

const char* tuttiGetErrorString(tuttiResult_t result) {
  const int value = static_cast<int>(result);
  if (value == tuttiSuccess) return "success";
  if (value < 0 || value >= tuttiNumResults) return "unknown tutti result code";
  // The C++ names are distinct and stable ("invalid argument", "peer failure", ...).
  return errorCodeName(static_cast<ErrorCode>(value));
}

tuttiResult_t tuttiMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return tuttiInvalidArgument;
  *ptr = nullptr;
  Result<void*> buffer = memAlloc(size);
  if (!buffer.ok()) return initFailed("tuttiMemAlloc", buffer.status());
  *ptr = buffer.value();
  return tuttiSuccess;
}

tuttiResult_t tuttiMemFree(void* ptr) {
  Status status = memFree(ptr);
  return status.ok() ? tuttiSuccess : initFailed("tuttiMemFree", status);
}

tuttiResult_t tuttiCommInitFromEnv(tuttiComm_t* comm) {
  if (comm == nullptr) return tuttiInvalidArgument;
  *comm = nullptr;
  try {
    return handOut("tuttiCommInitFromEnv", Communicator::fromEnv(), comm);
  } catch (const std::bad_alloc&) {  // see guarded() in handles.h
    return tuttiSystemError;
  } catch (...) {
    return tuttiInternalError;
  }
}

tuttiResult_t tuttiCommInitRank(tuttiComm_t* comm, int nranks, const char* storeAddr, int rank) {
  if (comm == nullptr || storeAddr == nullptr) return tuttiInvalidArgument;
  *comm = nullptr;
  try {
    return handOut("tuttiCommInitRank", Communicator::connect(storeAddr, rank, nranks), comm);
  } catch (const std::bad_alloc&) {
    return tuttiSystemError;
  } catch (...) {
    return tuttiInternalError;
  }
}

tuttiResult_t tuttiCommDestroy(tuttiComm_t comm) {
  if (comm == nullptr) return tuttiInvalidArgument;
  try {
    // Calls still running on other threads (against the one-thread rule) end by their
    // deadlines; the handle outlives them.
    std::unique_lock<std::shared_mutex> drained(comm->inUse);
  } catch (...) {
    return tuttiInternalError;  // the lock failed (std::system_error): leak rather than free
  }
  // Waits for issued operations and for the peers' farewells (bounded); a mismatch found
  // only now is logged at WARN, naming both calls, and returned.
  const Status found = comm->comm.destroy();
  delete comm;
  return found.ok() ? tuttiSuccess : toResult(found.code());
}

tuttiResult_t tuttiCommAbort(tuttiComm_t comm) {
  if (comm == nullptr) return tuttiInvalidArgument;
  comm->comm.abort();  // calls in progress on other threads now fail with tuttiAborted
  try {
    // Bounded: those calls return at once now that the communicator failed, and at the
    // latest by their deadlines.
    std::unique_lock<std::shared_mutex> drained(comm->inUse);
  } catch (...) {
    return tuttiInternalError;
  }
  delete comm;  // operations still queued fail at once: the transport has failed
  return tuttiSuccess;
}

tuttiResult_t tuttiCommCount(tuttiComm_t comm, int* count) {
  return guarded(comm, "tuttiCommCount", [&](tuttiComm& c) -> Status {
    TUTTI_CHECK_ARG(count != nullptr, "count is NULL");
    *count = c.comm.size();
    return Status::Ok();
  });
}

tuttiResult_t tuttiCommUserRank(tuttiComm_t comm, int* rank) {
  return guarded(comm, "tuttiCommUserRank", [&](tuttiComm& c) -> Status {
    TUTTI_CHECK_ARG(rank != nullptr, "rank is NULL");
    *rank = c.comm.rank();
    return Status::Ok();
  });
}

const char* tuttiCommGetLastError(tuttiComm_t comm) {
  if (comm == nullptr) {
    return "tuttiCommGetLastError: the communicator is NULL (a failed tuttiCommInit* logs its "
           "reason at WARN)";
  }
  try {
    return comm->errors->read();
  } catch (const std::bad_alloc&) {
    return "tuttiCommGetLastError: out of memory copying the message";
  }
}

tuttiResult_t tuttiCommSplit(tuttiComm_t comm, int color, int key, tuttiComm_t* newcomm) {
  return guarded(comm, "tuttiCommSplit", [&](tuttiComm& c) -> Status {
    TUTTI_CHECK_ARG(newcomm != nullptr, "newcomm is NULL");
    *newcomm = nullptr;
    CommOptions options;
    options.timeout = c.timeout;
    TUTTI_ASSIGN_OR_RETURN(std::optional<Communicator> child, c.comm.split(color, key, options));
    if (!child) return Status::Ok();  // TUTTI_SPLIT_NOCOLOR
    auto handle = std::make_unique<tuttiComm>(std::move(*child));
    handle->timeout = c.timeout;
    *newcomm = handle.release();
    return Status::Ok();
  });
}

tuttiResult_t tuttiSetTimeout(tuttiComm_t comm, double seconds) {
  return guarded(comm, "tuttiSetTimeout", [&](tuttiComm& c) -> Status {
    TUTTI_CHECK_ARG(std::isfinite(seconds) && seconds > 0 && seconds <= kMaxTimeoutSeconds,
                    "timeout %g s is not a number of seconds in (0, %g]", seconds,
                    kMaxTimeoutSeconds);
    // Rounded up to whole milliseconds, so a tiny timeout never becomes zero.
    c.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1e3)));
    return Status::Ok();
  });
}

tuttiResult_t tuttiWait(tuttiRequest_t request) {
  if (request == nullptr) return tuttiInvalidArgument;
  // Bounded: every operation completes by its own deadline (Work::wait).
  return requestResult(request, request->work.wait());
}

tuttiResult_t tuttiTest(tuttiRequest_t request, int* done) {
  if (request == nullptr || done == nullptr) return tuttiInvalidArgument;
  if (!request->work.test()) {
    *done = 0;
    return tuttiSuccess;
  }
  *done = 1;
  return requestResult(request, request->work.wait());
}

tuttiResult_t tuttiRequestFree(tuttiRequest_t request) {
  if (request == nullptr) return tuttiInvalidArgument;
  delete request;  // the operation, if still running, keeps its own state alive
  return tuttiSuccess;
}

}  // extern "C"
