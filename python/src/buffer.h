#pragma once
// Owns: a Python object's buffer (Py_buffer, and through it a reference to the object),
// seen as a C-contiguous run of elements of one tutti DataType, with the checks that make a
// bad array a ValueError before anything moves. Must not: release the buffer without the GIL.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <optional>
#include <string>

#include <tutti/types.h>

namespace tutti::python {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  /// Releases the buffer: the GIL must be held.
  ~Buffer();

  /// Takes `obj`'s buffer. `name` names the argument in errors; `writable` when the call
  /// writes it; `dtype` overrides the element type read from the buffer's format (needed
  /// for bfloat16, which numpy has not: pass its bit patterns as uint16 with
  /// dtype="bfloat16"). Throws TypeError (no buffer protocol) or ValueError (read-only,
  /// not C-contiguous, big-endian, an element type tutti has not, a size that is not a
  /// whole number of elements).
  static Buffer take(pybind11::handle obj, const char* name, bool writable,
                     std::optional<DataType> dtype);

  bool held() const { return held_; }
  void* data() const { return view_.buf; }
  std::size_t bytes() const { return static_cast<std::size_t>(view_.len); }
  std::size_t count() const { return count_; }
  DataType dtype() const { return dtype_; }
  const std::string& name() const { return name_; }

  /// Throws ValueError unless the buffer holds exactly `want` elements.
  void expectCount(std::size_t want, const char* what) const;
  /// Throws ValueError unless the buffer holds at least `want` elements.
  void expectAtLeast(std::size_t want, const char* what) const;
  /// Throws ValueError unless `other` has this buffer's element type.
  void expectSameType(const Buffer& other) const;

 private:
  Py_buffer view_{};
  bool held_ = false;
  DataType dtype_ = DataType::kUint8;
  std::size_t count_ = 0;
  std::string name_;
};

/// The element type a struct-module format names with this item size ("f" -> float32,
/// "<i8"-style numpy formats, "e" -> float16), or nullopt when tutti has none.
std::optional<DataType> dataTypeOfFormat(const char* format, std::size_t itemsize);

/// A dtype argument: None, a tutti.DataType, or a name ("bfloat16", "float", "int64", ...).
std::optional<DataType> dataTypeArg(pybind11::handle obj);
/// An op argument: a tutti.ReduceOp or a name ("sum", "prod", "min", "max", "avg").
ReduceOp reduceOpArg(pybind11::handle obj);

}  // namespace tutti::python
