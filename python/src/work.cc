#include "work.h"

#include "errors.h"

namespace py = pybind11;

namespace tutti::python {

PyWork::~PyWork() {
  if (result_ || !work_.valid()) return;
  Status ignored;
  {
    py::gil_scoped_release release;
    ignored = work_.wait();
  }
  (void)ignored;  // nobody asked for it; the library logged a failure already
}

void PyWork::finish(const Status& status) {
  result_ = status;
  buffers_.clear();  // with the GIL: releases the arrays
}

void PyWork::wait(std::optional<double> timeoutSeconds) {
  if (!result_) {
    Status s;
    bool ended = true;
    {
      py::gil_scoped_release release;
      if (!timeoutSeconds) {
        s = work_.wait();
      } else {
        s = work_.wait(Deadline::afterSeconds(*timeoutSeconds));
        // Our deadline passing leaves the call running; the call's own status is final.
        if (s.code() == ErrorCode::kTimeout) {
          ended = work_.test();
          if (ended) s = work_.wait();
        }
      }
    }
    if (!ended) check(s);
    finish(s);
  }
  check(*result_);
}

bool PyWork::test() {
  if (result_) return true;
  if (!work_.test()) return false;
  Status s;
  {
    py::gil_scoped_release release;
    s = work_.wait();  // ended: returns at once
  }
  finish(s);
  return true;
}

}  // namespace tutti::python
