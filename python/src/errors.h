#pragma once
// Owns: turning a tutti Status into the Python exception named after its code
// (tutti._errors: InvalidArgumentError, PeerFailureError, ...). Must not: decide what is an
// error; every Status comes from the library unchanged.

#include <pybind11/pybind11.h>

#include <exception>

#include <tutti/status.h>

namespace tutti::python {

/// Thrown by the bindings for a failed Status; translated into a tutti.Error subclass
/// carrying the full message and the blamed rank.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};

/// Throws StatusError unless `status` is OK.
inline void check(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

/// The tutti.Error instance for `status` (not raised).
pybind11::object errorObject(const Status& status);

/// Registers the translator of StatusError.
void registerErrors(pybind11::module_& m);

}  // namespace tutti::python
