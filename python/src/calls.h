#pragma once
// Owns: turning one Python call of a collective or point-to-point operation (buffers,
// counts, root, op, dtype=, timeout=, algorithm=) into checked buffers and the library
// call, in both forms (blocking and async). Must not: hold the GIL while the library runs.

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tutti/communicator.h>

#include "buffer.h"

namespace tutti::python {

/// A communicator's destructor destroys it, which waits for the peers: never with the GIL.
struct ReleaseGilDelete {
  void operator()(Communicator* comm) const {
    pybind11::gil_scoped_release release;
    delete comm;
  }
};
using CommHolder = std::unique_ptr<Communicator, ReleaseGilDelete>;
using CommClass = pybind11::class_<Communicator, CommHolder>;

/// One prepared call: the buffers it uses (held until it ends) and the library call.
struct Call {
  std::vector<Buffer> buffers;
  CallOptions options;
  std::function<Status(Communicator&, const CallOptions&)> blocking;
  std::function<Work(Communicator&, const CallOptions&)> async;
};

/// The options every call takes by keyword: timeout (seconds) and algorithm.
CallOptions callOptions(std::optional<double> timeoutSeconds, const std::string& algorithm);

/// Adds the collectives and point-to-point calls, blocking and `_async`, to `cls`.
void bindCalls(CommClass& cls);

}  // namespace tutti::python
