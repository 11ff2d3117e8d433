// AVX-512 (F+BW+VL+DQ) kernels for every (dtype, op): the lane types and formats are in
// kernels_avx512.h, the loops and tables in kernels_simd.h. This file is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq (see CMakeLists.txt) and only reached after
// isaSupported(Isa::kAvx512) said yes at run time. Unlike AVX2, AVX-512 has every integer
// operation as one instruction (AVX-512DQ's 64-bit multiply, AVX-512F's 64-bit min/max),
// except byte multiplication, and masked loads and stores for every element width.

#include "reduce/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include "reduce/kernels_avx512.h"

namespace tutti::reduce::detail {

CombineFn avx512CombineKernel(DataType dtype, ReduceOp op) {
  return pickCombine<Formats>(dtype, op);
}

AverageFn avx512AverageKernel(DataType dtype) { return pickAverage<Formats>(dtype); }

CopyFn avx512StreamCopyKernel() { return &streamCopy<IntLanes>; }

CopyTwoFn avx512StreamCopyTwoKernel() { return &streamCopyTwo<IntLanes>; }

}  // namespace tutti::reduce::detail

#else  // not x86: no AVX-512 kernels; isaSupported(kAvx512) is false there.

namespace tutti::reduce::detail {
CombineFn avx512CombineKernel(DataType, ReduceOp) { return nullptr; }
AverageFn avx512AverageKernel(DataType) { return nullptr; }
CopyFn avx512StreamCopyKernel() { return nullptr; }
CopyTwoFn avx512StreamCopyTwoKernel() { return nullptr; }
}  // namespace tutti::reduce::detail

#endif
