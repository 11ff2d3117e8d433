// How a call's messages travel, decided from its shape alone (so every rank decides alike):
// whether its senders ask the transport to copy rather than let the receiver read in place.

#include "core/comm_impl.h"

namespace tutti::detail {

// Blocks from this size go through the rings where the rendezvous would be the kernel's
// copy. Measured when the copies streamed from 32 MiB (reduce::kCopyStreamingBytes, now
// 8 MiB): the choice was not re-measured with the lower threshold, so it keeps its size.
constexpr std::uint64_t kStreamedBlockBytes = std::uint64_t{32} << 20;

// Whether a call's messages go through the transport's buffers rather than being read in
// place by their receiver (rendezvous, TransferRequest::preferCopy). Over shared memory a
// receiver reduces a copied message piece by piece as it arrives, from cache, while its
// sender copies the next pieces on another core; one read in place is read by the
// receiver alone, through the kernel's copy (a bounce buffer at a time, ShmLink::
// readCombiningLocked). Measured against rendezvous (docs/performance.md, 2 and 4 ranks):
// reduce 0.46-0.79 of the time, reduce-scatter 0.78-0.91, all-reduce 0.90 up to 4 MiB and
// 0.83 at 16 MiB on 4 ranks; again once rendezvous reduced through the bounce buffer:
// reduce 16 MiB 0.49, reduce-scatter 64 MiB 0.84, 1 MiB 1.02 (2 ranks). A larger
// all-reduce on 2 ranks keeps rendezvous: both ranks are busy reducing anyway, and half of
// its messages are copied rather than reduced (through the ring it took 1.03-1.06 as long),
// until its halves are large enough for the receiver to stream them out of the ring
// (kStreamedBlockBytes): then the ring took 0.85 (64 MiB) and 0.92-0.93 (128 and 256 MiB)
// of rendezvous' time, 1.00 at 32 MiB and 1.06 at 16 MiB.
// The shm transport ignores the preference for a send from a memAlloc buffer, which the
// receiver reduces straight from its mapping (reduce-scatter 64 MiB on 2 ranks: 0.58).
bool prefersCopy(const CollectiveSpec& spec) {
  switch (spec.kind) {
    case Collective::kReduce:
    case Collective::kReduceScatter:
    case Collective::kReduceScatterV:
      return true;
    case Collective::kAllReduce:
      return spec.size > 2 || spec.count * dataTypeSize(spec.dtype) <= (4u << 20) ||
             spec.count * dataTypeSize(spec.dtype) / 2 >= kStreamedBlockBytes;
    case Collective::kAllGather:
    case Collective::kAllToAll:
      // Every rank sends and receives at once, so both cores copy anyway. A block of
      // kStreamedBlockBytes moves faster through the rings, copied into cache by its
      // sender and streamed out by its receiver, than by the kernel's copy from memory to
      // memory.
      return spec.count * dataTypeSize(spec.dtype) >= kStreamedBlockBytes;
    default:
      return false;
  }
}

}  // namespace tutti::detail
