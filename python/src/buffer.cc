#include "buffer.h"

#include <string_view>
#include <utility>

namespace py = pybind11;

namespace tutti::python {

namespace {

std::string typeName(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

std::optional<DataType> integerOfSize(std::size_t itemsize, bool isSigned) {
  switch (itemsize) {
    case 1: return isSigned ? DataType::kInt8 : DataType::kUint8;
    case 4: return isSigned ? DataType::kInt32 : DataType::kUint32;
    case 8: return isSigned ? DataType::kInt64 : DataType::kUint64;
    default: return std::nullopt;  // 16-bit integers: tutti has none
  }
}

}  // namespace

std::optional<DataType> dataTypeOfFormat(const char* format, std::size_t itemsize) {
  std::string_view f = format != nullptr ? format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
  if (f.size() != 1) return std::nullopt;
  std::optional<DataType> t;
  switch (f[0]) {
    case 'b': t = DataType::kInt8; break;
    case 'B': case 'c': t = DataType::kUint8; break;
    case 'e': t = DataType::kFloat16; break;
    case 'f': t = DataType::kFloat32; break;
    case 'd': t = DataType::kFloat64; break;
    case 'i': case 'l': case 'q': case 'n': t = integerOfSize(itemsize, true); break;
    case 'I': case 'L': case 'Q': case 'N': t = integerOfSize(itemsize, false); break;
    default: return std::nullopt;
  }
  if (t && dataTypeSize(*t) != itemsize) return std::nullopt;
  return t;
}

std::optional<DataType> dataTypeArg(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  if (py::isinstance<DataType>(obj)) return obj.cast<DataType>();
  if (py::isinstance<py::str>(obj)) {
    const std::string name = obj.cast<std::string>();
    if (auto t = parseDataType(name)) return t;
    throw py::value_error("dtype '" + name + "' is not one tutti has (int8, uint8, int32, "
                          "uint32, int64, uint64, float16, bfloat16, float32, float64)");
  }
  // numpy dtypes and types: their name ("float32", "int64", ...).
  if (py::hasattr(obj, "name") || py::hasattr(obj, "__name__")) {
    py::object name = py::hasattr(obj, "name") ? obj.attr("name") : obj.attr("__name__");
    if (py::isinstance<py::str>(name)) return dataTypeArg(name);
  }
  throw py::type_error("dtype must be a tutti.DataType or a name such as 'bfloat16', not " +
                       typeName(obj));
}

ReduceOp reduceOpArg(py::handle obj) {
  if (py::isinstance<ReduceOp>(obj)) return obj.cast<ReduceOp>();
  if (py::isinstance<py::str>(obj)) {
    const std::string name = obj.cast<std::string>();
    if (auto op = parseReduceOp(name)) return *op;
    throw py::value_error("op '" + name + "' is not one tutti has (sum, prod, min, max, avg)");
  }
  throw py::type_error("op must be a tutti.ReduceOp or a name such as 'sum', not " +
                       typeName(obj));
}

Buffer::Buffer(Buffer&& other) noexcept
    : view_(other.view_), held_(std::exchange(other.held_, false)), dtype_(other.dtype_),
      count_(other.count_), name_(std::move(other.name_)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (held_) PyBuffer_Release(&view_);
    view_ = other.view_;
    held_ = std::exchange(other.held_, false);
    dtype_ = other.dtype_;
    count_ = other.count_;
    name_ = std::move(other.name_);
  }
  return *this;
}

Buffer::~Buffer() {
  if (held_) PyBuffer_Release(&view_);
}

Buffer Buffer::take(py::handle obj, const char* name, bool writable,
                    std::optional<DataType> dtype) {
  Buffer b;
  b.name_ = name;
  if (!PyObject_CheckBuffer(obj.ptr())) {
    throw py::type_error(b.name_ + " must support the buffer protocol (a numpy array, "
                         "bytearray, memoryview, ...), not " + typeName(obj));
  }
  if (PyObject_GetBuffer(obj.ptr(), &b.view_, PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
  b.held_ = true;
  if (writable && b.view_.readonly) {
    throw py::value_error(b.name_ + " is read-only, and this call writes it");
  }
  if (!PyBuffer_IsContiguous(&b.view_, 'C')) {
    throw py::value_error(b.name_ + " is not C-contiguous (tutti reads and writes one run of "
                          "memory); pass numpy.ascontiguousarray(" + b.name_ + ")");
  }
  const char* format = b.view_.format != nullptr ? b.view_.format : "B";
  if (format[0] == '>' || format[0] == '!') {
    throw py::value_error(b.name_ + " is big-endian (format '" + std::string(format) +
                          "'); tutti reduces elements in this machine's byte order");
  }
  const auto itemsize = static_cast<std::size_t>(b.view_.itemsize);
  const std::optional<DataType> own = dataTypeOfFormat(format, itemsize);
  if (dtype) {
    // Bytes (uint8) and types tutti has not (uint16 bit patterns of bfloat16) take any
    // dtype; an array of another tutti type is not silently reinterpreted.
    if (own && *own != *dtype && *own != DataType::kUint8) {
      throw py::value_error(b.name_ + " holds " + dataTypeName(*own) + " elements, not " +
                            dataTypeName(*dtype) + " as dtype= says");
    }
    b.dtype_ = *dtype;
  } else if (own) {
    b.dtype_ = *own;
  } else {
    throw py::value_error(b.name_ + " has elements of format '" + std::string(format) +
                          "' (" + std::to_string(itemsize) + " bytes), which is no tutti "
                          "type; pass dtype= to say what its bytes hold (for example "
                          "dtype='bfloat16' for a uint16 array of bfloat16 bit patterns)");
  }
  const std::size_t size = dataTypeSize(b.dtype_);
  if (b.bytes() % size != 0) {
    throw py::value_error(b.name_ + " holds " + std::to_string(b.bytes()) + " bytes, not a "
                          "whole number of " + dataTypeName(b.dtype_) + " elements");
  }
  b.count_ = b.bytes() / size;
  return b;
}

void Buffer::expectCount(std::size_t want, const char* what) const {
  if (count_ != want) {
    throw py::value_error(name_ + " holds " + std::to_string(count_) + " elements, but " +
                          what + " needs " + std::to_string(want));
  }
}

void Buffer::expectAtLeast(std::size_t want, const char* what) const {
  if (count_ < want) {
    throw py::value_error(name_ + " holds " + std::to_string(count_) + " elements, but " +
                          what + " needs at least " + std::to_string(want));
  }
}

void Buffer::expectSameType(const Buffer& other) const {
  if (dtype_ != other.dtype_) {
    throw py::value_error(name_ + " holds " + dataTypeName(dtype_) + " and " + other.name_ +
                          " holds " + dataTypeName(other.dtype_) + "; a call moves one type");
  }
}

}  // namespace tutti::python
