#pragma once
/// \file
/// Errors are values in tutti: every fallible call returns a `Status` or a `Result<T>`.
/// The library never throws. A `Status` is a small value type (code, message, and the
/// rank at fault when one is known); it is cheap to copy when OK and safe to pass
/// between threads by value.

#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "tutti/export.h"

namespace tutti {

/// Semantic error codes. The C API maps them one to one onto `tuttiResult_t`.
enum class ErrorCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,  ///< bad input on this rank (null buffer, bad count, rank out of range)
  kInvalidUsage,     ///< wrong call order or state (call after destroy, ...)
  kMismatch,         ///< ranks disagree on a collective's shape (count, dtype, op, root)
  kTimeout,          ///< a deadline passed
  kPeerFailure,      ///< a peer died or its connection broke; peerRank() names it
  kProtocolError,    ///< bytes that do not parse or are not authenticated
  kSystemError,      ///< a system call failed (message names syscall and errno)
  kNotSupported,     ///< valid request that this build or algorithm cannot serve
  kAborted,          ///< the communicator was aborted (locally or by another rank)
  kInternal,         ///< a bug in tutti
};

/// Stable lower-case name of a code, e.g. "peer failure".
TUTTI_API const char* errorCodeName(ErrorCode code);

/// The outcome of an operation: OK, or a code with a human-readable message.
class [[nodiscard]] TUTTI_API Status {
 public:
  /// Sentinel for "no rank is known to be at fault".
  static constexpr int kNoRank = -1;

  Status() = default;
  Status(ErrorCode code, std::string message, int peerRank = kNoRank)
      : code_(code), peerRank_(peerRank), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// The rank this error blames (a dead or misbehaving peer), or kNoRank.
  int peerRank() const { return peerRank_; }

  /// "peer failure: rank 2 closed its connection ..." or "ok".
  std::string toString() const;

  /// Returns a copy whose message is prefixed with `context` and ": ".
  Status withContext(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  int peerRank_ = kNoRank;
  std::string message_;
};

/// Either a value of type T or a non-OK Status (C++23's std::expected is not available
/// to us under GCC 12 in C++20 mode).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : hasValue_(true) { new (&storage_) T(std::move(value)); }  // NOLINT
  Result(Status status) : status_(std::move(status)) {                        // NOLINT
    if (status_.ok()) status_ = Status(ErrorCode::kInternal, "Result built from an OK Status");
  }
  Result(const Result& other) : hasValue_(other.hasValue_), status_(other.status_) {
    if (hasValue_) new (&storage_) T(other.value());
  }
  Result(Result&& other) noexcept : hasValue_(other.hasValue_), status_(std::move(other.status_)) {
    if (hasValue_) new (&storage_) T(std::move(other.value()));
  }
  Result& operator=(Result other) noexcept {
    reset();
    hasValue_ = other.hasValue_;
    status_ = std::move(other.status_);
    if (hasValue_) new (&storage_) T(std::move(other.value()));
    return *this;
  }
  ~Result() { reset(); }

  bool ok() const { return hasValue_; }
  /// OK when a value is held; the error otherwise.
  const Status& status() const { return status_; }

  T& value() & { return *ptr(); }
  const T& value() const& { return *ptr(); }
  T&& value() && { return std::move(*ptr()); }
  T* operator->() { return ptr(); }
  const T* operator->() const { return ptr(); }
  T& operator*() & { return *ptr(); }
  const T& operator*() const& { return *ptr(); }

 private:
  T* ptr() { return std::launder(reinterpret_cast<T*>(&storage_)); }
  const T* ptr() const { return std::launder(reinterpret_cast<const T*>(&storage_)); }
  void reset() {
    if (hasValue_) ptr()->~T();
    hasValue_ = false;
  }

  bool hasValue_ = false;
  Status status_;
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace tutti
