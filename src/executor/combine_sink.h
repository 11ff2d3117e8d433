#pragma once
// CombineSink: what a reduction receive hands its link (TransferRequest::combine), so that
// each piece is reduced where the link holds it. The executor's (executor.cc).

#include <cstddef>

#include "base/assert.h"
#include "reduce/reduce.h"
#include "transport/link.h"
#include "tutti/types.h"

namespace tutti {

// A reduction receive's combine, handed to the link (TransferRequest::combine): each piece
// is reduced into dst straight from where the link holds it, dst = src (op) piece.
class CombineSink final : public PieceSink {
 public:
  void set(char* dst, const char* src, std::size_t bytes, std::size_t elemSize, DataType dtype,
           ReduceOp op) {
    dst_ = dst;
    bytes_ = bytes;
    src_ = src;
    elemSize_ = elemSize;
    dtype_ = dtype;
    op_ = op;
  }
  std::size_t granule() const override { return elemSize_; }
  void take(std::size_t offset, const char* piece, std::size_t bytes) const override {
    TUTTI_ASSERT(offset % elemSize_ == 0 && bytes % elemSize_ == 0);
    // The whole message's size picks the stores, whatever the size of the piece.
    reduce::combine(dst_ + offset, src_ + offset, piece, bytes / elemSize_, dtype_, op_, bytes_);
  }
  void takeInto(std::size_t offset, const char* piece, std::size_t bytes,
                char* into) const override {
    TUTTI_ASSERT(offset % elemSize_ == 0 && bytes % elemSize_ == 0);
    // Into a link's buffer that its reader takes soon: stores that keep it in the caches.
    reduce::combine(into, src_ + offset, piece, bytes / elemSize_, dtype_, op_);
  }
  char* destination() const override { return dst_; }

 private:
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t elemSize_ = 1;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
};

}  // namespace tutti
