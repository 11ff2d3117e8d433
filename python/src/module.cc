// tutti._tutti: the Python module over tutti's C++ API (python/tutti/__init__.py re-exports
// it). Every call releases the GIL while the library runs; errors are tutti.Error
// subclasses (tutti/_errors.py); a bad array is a ValueError before anything moves.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include <tutti/tutti.hpp>

#include "buffer.h"
#include "calls.h"
#include "errors.h"
#include "work.h"

namespace py = pybind11;
using namespace tutti;          // NOLINT(google-build-using-namespace)
using namespace tutti::python;  // NOLINT(google-build-using-namespace)

namespace {

CommOptions commOptions(std::optional<double> timeout, const std::string& name,
                        const std::string& transport, const std::string& asyncProgress) {
  CommOptions o;
  if (timeout) o.timeout = callOptions(timeout, "").timeout;
  if (!name.empty()) o.name = name;
  o.transport = transport;
  o.asyncProgress = asyncProgress;
  return o;
}

CommHolder unwrap(Result<Communicator> r) {
  check(r.status());
  return CommHolder(new Communicator(std::move(r).value()));
}

void bindEnums(py::module_& m) {
  py::enum_<DataType>(m, "DataType", "Element types; calls also take their names.")
      .value("INT8", DataType::kInt8).value("UINT8", DataType::kUint8)
      .value("INT32", DataType::kInt32).value("UINT32", DataType::kUint32)
      .value("INT64", DataType::kInt64).value("UINT64", DataType::kUint64)
      .value("FLOAT16", DataType::kFloat16).value("BFLOAT16", DataType::kBFloat16)
      .value("FLOAT32", DataType::kFloat32).value("FLOAT64", DataType::kFloat64)
      .export_values();
  py::enum_<ReduceOp>(m, "ReduceOp", "Reduction operators; calls also take their names.")
      .value("SUM", ReduceOp::kSum).value("PROD", ReduceOp::kProd)
      .value("MIN", ReduceOp::kMin).value("MAX", ReduceOp::kMax).value("AVG", ReduceOp::kAvg)
      .export_values();
}

void bindWork(py::module_& m) {
  py::class_<PyWork>(m, "Work", "The handle of an `_async` call.")
      .def("wait", &PyWork::wait, py::arg("timeout") = py::none(),
           "Blocks until the call ends and raises its error. With timeout (seconds), raises "
           "tutti.TimeoutError when it has not ended by then; the call goes on.")
      .def("test", &PyWork::test, "True once the call has ended; never blocks.");
  m.def(
      "wait_all",
      [](py::iterable works) {
        for (py::handle w : works) w.cast<PyWork&>().wait(std::nullopt);
      },
      py::arg("works"), "Waits for every Work in turn; raises the first error.");
}

void bindCommunicator(py::module_& m) {
  CommClass cls(m, "Communicator",
      "A group of ranks. Destroying it is collective: call destroy() on every rank in the "
      "same order (or use it as a context manager); one left to the garbage collector is "
      "destroyed then, which waits for the peers.");
  cls.def_static(
         "from_env",
         [](std::optional<double> timeout, const std::string& name, const std::string& transport,
            const std::string& asyncProgress) {
           const CommOptions o = commOptions(timeout, name, transport, asyncProgress);
           Result<Communicator> r = Status(ErrorCode::kInternal, "not run");
           {
             py::gil_scoped_release release;
             r = Communicator::fromEnv(o);
           }
           return unwrap(std::move(r));
         },
         py::kw_only(), py::arg("timeout") = py::none(), py::arg("name") = "world",
         py::arg("transport") = "", py::arg("async_progress") = "",
         "The world communicator from the launcher's environment (tutti-run, torchrun, "
         "mpirun, Slurm).")
      .def_static(
          "connect",
          [](const std::string& address, int rank, int size, std::optional<double> timeout,
             const std::string& name, const std::string& transport, const std::string& asyncProgress) {
            const CommOptions o = commOptions(timeout, name, transport, asyncProgress);
            Result<Communicator> r = Status(ErrorCode::kInternal, "not run");
            {
              py::gil_scoped_release release;
              r = Communicator::connect(address, rank, size, o);
            }
            return unwrap(std::move(r));
          },
          py::arg("store_address"), py::arg("rank"), py::arg("size"), py::kw_only(),
          py::arg("timeout") = py::none(), py::arg("name") = "world", py::arg("transport") = "",
          py::arg("async_progress") = "",
          "size ranks that meet at a TCP store at 'host:port' (rank 0 serves it).")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("name", &Communicator::name)
      .def(
          "split",
          [](Communicator& comm, int color, std::optional<int> key) -> py::object {
            Result<std::optional<Communicator>> r = Status(ErrorCode::kInternal, "not run");
            {
              py::gil_scoped_release release;
              r = comm.split(color, key.value_or(comm.rank()));
            }
            check(r.status());
            if (!r.value()) return py::none();
            return py::cast(CommHolder(new Communicator(std::move(*r.value()))));
          },
          py::arg("color"), py::arg("key") = py::none(),
          "Ranks with the same color (>= 0) form a new communicator ordered by key (default: "
          "rank); color -1 (Communicator.NO_COLOR) gets None.")
      .def(
          "destroy",
          [](Communicator& comm) {
            Status s;
            {
              py::gil_scoped_release release;
              s = comm.destroy();
            }
            check(s);
          },
          "Collective: waits for issued calls and for every peer to destroy it too.")
      .def(
          "abort", [](Communicator& comm) { comm.abort(); },
          "Fails the communicator at once, here and on every peer.")
      .def(
          "last_error",
          [](const Communicator& comm) -> py::object {
            const Status s = comm.lastError();
            return s.ok() ? py::none() : errorObject(s);
          },
          "The first error the communicator failed with (a tutti.Error, not raised), or None.")
      .def("__enter__", [](Communicator& comm) -> Communicator& { return comm; },
           py::return_value_policy::reference)
      .def("__exit__",
           [](Communicator& comm, py::handle type, py::handle, py::handle) {
             if (comm.size() == 0) return;  // destroyed already
             if (!type.is_none()) {
               // Leaving on an exception: the peers may be waiting in a call this rank will
               // never make; fail the communicator so they learn at once, then release it.
               comm.abort();
             }
             Status s;
             {
               py::gil_scoped_release release;
               s = comm.destroy();
             }
             if (type.is_none()) check(s);
           })
      .def("__repr__", [](const Communicator& comm) {
        return "<tutti.Communicator '" + comm.name() + "' rank " + std::to_string(comm.rank()) +
               " of " + std::to_string(comm.size()) + ">";
      });
  cls.attr("NO_COLOR") = Communicator::kNoColor;
  bindCalls(cls);
}

}  // namespace

PYBIND11_MODULE(_tutti, m) {
  m.doc() = "tutti's collectives for Python (see the tutti package).";
  m.attr("__version__") = versionString();
  registerErrors(m);
  bindEnums(m);
  bindWork(m);
  bindCommunicator(m);
}
