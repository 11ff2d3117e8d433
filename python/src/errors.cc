#include "errors.h"

namespace py = pybind11;

namespace tutti::python {

py::object errorObject(const Status& status) {
  // tutti._errors is pure Python (multiple inheritance from ValueError, TimeoutError, ...
  // is simpler there); importing it again is a dictionary lookup.
  py::object make = py::module_::import("tutti._errors").attr("_from_status");
  py::object peer = py::none();
  if (status.peerRank() != Status::kNoRank) peer = py::int_(status.peerRank());
  return make(static_cast<int>(status.code()), status.message(), peer);
}

void registerErrors(py::module_& m) {
  (void)m;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object err = errorObject(e.status());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    }
  });
}

}  // namespace tutti::python
