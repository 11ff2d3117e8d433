#pragma once
/// \file
/// Communication buffers that peers on the same host read and write directly.
///
/// Inside one machine a large message normally costs the kernel's copy between processes
/// (process_vm_readv), which pins pages and runs at about half of memcpy's speed. A buffer
/// from memAlloc is shared memory of its own: a peer on the same host maps it the first
/// time a message names it and from then on copies or reduces it with plain loads and
/// stores, as ncclMemAlloc'd buffers are read by NCCL's peers. Use it for the large
/// buffers a program passes to collectives again and again; any buffer works with every
/// call, and a buffer from malloc simply takes the kernel's copy.
///
/// Each allocation is one memfd (one file descriptor) rounded up to whole pages and
/// populated up front, so it suits few large buffers, not many small ones. A peer's mapping
/// keeps the memory until that peer drops it: at its next mapping of a buffer of this
/// process, within about a second of its next call (while it has calls running), when it
/// holds more than 32, or when its communicator is destroyed.

#include <cstddef>

#include "tutti/export.h"
#include "tutti/status.h"

namespace tutti {

/// Allocates `bytes` (> 0) bytes, page-aligned, zeroed. kInvalidArgument for 0 bytes,
/// kSystemError naming the system call that failed (out of descriptors or memory).
TUTTI_API Result<void*> memAlloc(std::size_t bytes);

/// Frees a buffer from memAlloc. Null is a no-op; any other pointer memAlloc did not
/// return, or that was freed already, is kInvalidArgument. No call may be using it.
TUTTI_API Status memFree(void* pointer);

}  // namespace tutti
