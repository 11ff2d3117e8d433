#pragma once
// Buffers that peers on this host read and write directly (tutti::memAlloc, memory.h).
//
// A rendezvous message normally costs the receiver a process_vm_readv of the sender's
// buffer, and a helping sender a process_vm_writev: the kernel's copy, which pins pages and
// runs at about half of memcpy's speed here. A buffer allocated by memAlloc is a memfd of
// its own, mapped shared; a message from or into it names the memfd (BufferRef) so that the
// peer maps it once (through /proc/<pid>/fd, the way segments are opened) and from then on
// copies or reduces it with plain loads and stores. Anything that stops the mapping (the
// descriptor gone, another inode behind it, a permission) falls back to the kernel's copy.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tutti/status.h"

namespace tutti::shm {

/// Where a buffer from allocUserBuffer lies, as a peer needs it to map the buffer. Travels
/// in ring slots and rendezvous shares, so it is plain data of a fixed layout.
struct BufferRef {
  std::uint64_t base = 0;   ///< start of the allocation in the owner's address space
  std::uint64_t bytes = 0;  ///< its length
  std::uint64_t inode = 0;  ///< the memfd's inode: which memory the descriptor must name
  std::int32_t fd = -1;     ///< the owner's descriptor for the memfd; -1: no such buffer
  std::int32_t reserved = 0;

  bool valid() const { return fd >= 0 && bytes > 0; }
};
static_assert(sizeof(BufferRef) == 32);

/// Allocates `bytes` (> 0) of page-aligned memory that peers on this host can map: a memfd
/// of its own, mapped shared and populated. kInvalidArgument for 0 bytes, kSystemError
/// naming the call that failed.
Result<void*> allocUserBuffer(std::size_t bytes);
/// Frees what allocUserBuffer returned. Null is a no-op; any other pointer it did not return
/// (or returned and was freed already) is kInvalidArgument. A peer's mapping keeps the
/// memory until that peer drops it (PeerBuffers).
Status freeUserBuffer(void* pointer);
/// The allocation that holds all of [data, data + bytes), or an invalid ref. Costs one load
/// while no buffer is allocated.
BufferRef findUserBuffer(const void* data, std::size_t bytes);

/// The peers' buffers this process has mapped, by process and memfd inode. Not thread-safe:
/// the shared-memory transport uses it under its lock.
class PeerBuffers {
 public:
  /// At most `capacity` mappings are kept; the least recently used goes first.
  explicit PeerBuffers(std::size_t capacity = 32) : capacity_(capacity) {}
  ~PeerBuffers();
  PeerBuffers(const PeerBuffers&) = delete;
  PeerBuffers& operator=(const PeerBuffers&) = delete;

  /// Where [addr, addr + bytes) of process `pid`, inside its buffer `ref`, is mapped here,
  /// mapping the buffer on first use; null when it cannot be (the caller then uses the
  /// kernel's copy). A ref that does not hold the range is refused, never trusted.
  char* translate(int pid, const BufferRef& ref, std::uint64_t addr, std::uint64_t bytes);
  /// Mappings held now.
  std::size_t size() const { return maps_.size(); }
  /// Drops every mapping whose owner freed the buffer (its descriptor no longer names the
  /// memfd), so that freed memory is not kept alive here. A system call per mapping.
  void dropFreed();

 private:
  struct Mapping {
    int pid = 0;
    BufferRef ref;
    char* local = nullptr;
    std::uint64_t lastUse = 0;
  };
  /// Maps `ref` of `pid`; null when it cannot.
  char* map(int pid, const BufferRef& ref);
  /// Drops the mappings of process `pid` (-1: of every process) whose descriptor no longer
  /// names the same memfd (the owner freed them): without this, a peer that allocates and
  /// frees in a loop would have this process keep its memory alive.
  void dropStale(int pid);
  void unmap(std::size_t index);

  std::size_t capacity_;
  std::vector<Mapping> maps_;
  std::vector<int> refused_;  // processes whose buffers could not be opened: not retried
  std::uint64_t clock_ = 0;
};

}  // namespace tutti::shm
