#pragma once
// Owns: one async call's tutti::Work and the buffers it reads and writes, held until the
// call has ended. Must not: run or wait for a call with the GIL held.

#include <pybind11/pybind11.h>

#include <optional>
#include <vector>

#include <tutti/work.h>

#include "buffer.h"

namespace tutti::python {

class PyWork {
 public:
  PyWork(tutti::Work work, std::vector<Buffer> buffers)
      : work_(std::move(work)), buffers_(std::move(buffers)) {}
  PyWork(PyWork&&) = default;
  PyWork& operator=(PyWork&&) = delete;
  /// A Work dropped before it ended waits for it (bounded by the call's deadline), so that
  /// no call writes into an array Python has freed.
  ~PyWork();

  /// Blocks (GIL released) until the call ends, or `timeoutSeconds` passes (then raises
  /// tutti.TimeoutError and the call goes on); raises the call's error.
  void wait(std::optional<double> timeoutSeconds);
  /// True once the call has ended; never blocks.
  bool test();

 private:
  void finish(const Status& status);

  tutti::Work work_;
  std::vector<Buffer> buffers_;
  std::optional<Status> result_;
};

}  // namespace tutti::python
