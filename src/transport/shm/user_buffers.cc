#include "transport/shm/user_buffers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "base/log.h"
#include "base/pool_growth.h"
#include "base/strings.h"

namespace tutti::shm {
namespace {

constexpr std::size_t kPage = 4096;
constexpr const char* kMemfdName = "tutti-buf";
// How /proc/<pid>/fd/<n> reads for such a memfd.
constexpr const char* kMemfdLink = "/memfd:tutti-buf ";

struct Registry {
  std::shared_mutex mutex;
  std::map<std::uint64_t, BufferRef> byBase;  // keyed by BufferRef::base
  std::atomic<std::size_t> count{0};
};

// Never destroyed: a buffer may be freed from a static destructor after this would be.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

Status systemError(const std::string& what, int error) {
  return Status(ErrorCode::kSystemError, strFormat("%s: %s", what.c_str(), std::strerror(error)));
}

}  // namespace

Result<void*> allocUserBuffer(std::size_t bytes) {
  if (bytes == 0) return Status(ErrorCode::kInvalidArgument, "memAlloc: a buffer of 0 bytes");
  if (bytes > (std::size_t{1} << 46))
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("memAlloc: %zu bytes is more than this machine can map", bytes));
  const std::size_t length = (bytes + kPage - 1) / kPage * kPage;
  const int fd = static_cast<int>(syscall(SYS_memfd_create, kMemfdName, MFD_CLOEXEC));
  if (fd < 0) return systemError("memAlloc: memfd_create", errno);
  if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
    const int error = errno;
    close(fd);
    return systemError(strFormat("memAlloc: sizing a buffer to %zu bytes", length), error);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return systemError("memAlloc: fstat", error);
  }
  // Populated: the pages are faulted in here, not inside the first call that uses them.
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return systemError(strFormat("memAlloc: mapping a %zu-byte buffer", length), error);
  }
  BufferRef ref;
  ref.base = reinterpret_cast<std::uint64_t>(base);
  ref.bytes = length;
  ref.inode = static_cast<std::uint64_t>(st.st_ino);
  ref.fd = fd;
  Registry& r = registry();
  {
    std::unique_lock lock(r.mutex);
    r.byBase[ref.base] = ref;
    r.count.store(r.byBase.size(), std::memory_order_release);
  }
  return base;
}

Status freeUserBuffer(void* pointer) {
  if (pointer == nullptr) return Status::Ok();
  Registry& r = registry();
  BufferRef ref;
  {
    std::unique_lock lock(r.mutex);
    auto it = r.byBase.find(reinterpret_cast<std::uint64_t>(pointer));
    if (it == r.byBase.end())
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("memFree: %p is not a buffer memAlloc returned (or it was freed "
                              "already)", pointer));
    ref = it->second;
    r.byBase.erase(it);
    r.count.store(r.byBase.size(), std::memory_order_release);
  }
  munmap(reinterpret_cast<void*>(ref.base), ref.bytes);
  close(ref.fd);
  return Status::Ok();
}

BufferRef findUserBuffer(const void* data, std::size_t bytes) {
  Registry& r = registry();
  if (r.count.load(std::memory_order_acquire) == 0) return {};
  const auto at = reinterpret_cast<std::uint64_t>(data);
  std::shared_lock lock(r.mutex);
  auto it = r.byBase.upper_bound(at);
  if (it == r.byBase.begin()) return {};
  --it;
  const BufferRef& ref = it->second;
  if (at - ref.base > ref.bytes || bytes > ref.bytes - (at - ref.base)) return {};
  return ref;
}

// ---- PeerBuffers ----------------------------------------------------------------------------

PeerBuffers::~PeerBuffers() {
  for (const Mapping& m : maps_) munmap(m.local, m.ref.bytes);
}

char* PeerBuffers::translate(int pid, const BufferRef& ref, std::uint64_t addr,
                             std::uint64_t bytes) {
  if (!ref.valid() || addr < ref.base || addr - ref.base > ref.bytes ||
      bytes > ref.bytes - (addr - ref.base))
    return nullptr;
  char* local = nullptr;
  for (Mapping& m : maps_) {
    if (m.pid == pid && m.ref.inode == ref.inode && m.ref.base == ref.base &&
        m.ref.bytes == ref.bytes) {
      m.lastUse = ++clock_;
      local = m.local;
      break;
    }
  }
  if (local == nullptr) local = map(pid, ref);
  return local == nullptr ? nullptr : local + (addr - ref.base);
}

char* PeerBuffers::map(int pid, const BufferRef& ref) {
  if (std::find(refused_.begin(), refused_.end(), pid) != refused_.end()) return nullptr;
  // Once per peer buffer, on the call that first reaches it (base/pool_growth.h).
  GrowingPool growing;
  dropStale(pid);
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, ref.fd);
  // Only a memfd of memAlloc's is ever opened, whatever a slot says: not a file, a device
  // or a socket that the descriptor number might name.
  char target[64] = {};
  const ssize_t length = readlink(path, target, sizeof(target) - 1);
  if (length <= 0 || std::strncmp(target, kMemfdLink, std::strlen(kMemfdLink)) != 0)
    return nullptr;
  const int fd = ::open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    if (error == EACCES || error == EPERM) {
      TUTTI_DEBUG(kShm, "cannot open process %d's buffers (%s): its messages are copied by "
                  "the kernel", pid, std::strerror(error));
      refused_.push_back(pid);
    }
    return nullptr;
  }
  // The descriptor number may have been reused since the ref was made: only the same
  // memfd, at least as large, is mapped.
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != ref.inode ||
      static_cast<std::uint64_t>(st.st_size) < ref.bytes) {
    close(fd);
    return nullptr;
  }
  void* local = mmap(nullptr, ref.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);  // the mapping keeps the memory
  if (local == MAP_FAILED) return nullptr;
  if (maps_.size() >= capacity_) {
    std::size_t oldest = 0;
    for (std::size_t i = 1; i < maps_.size(); ++i)
      if (maps_[i].lastUse < maps_[oldest].lastUse) oldest = i;
    unmap(oldest);
  }
  maps_.push_back(Mapping{pid, ref, static_cast<char*>(local), ++clock_});
  return static_cast<char*>(local);
}

void PeerBuffers::dropStale(int pid) {
  for (std::size_t i = 0; i < maps_.size();) {
    const Mapping& m = maps_[i];
    if (pid != -1 && m.pid != pid) {
      ++i;
      continue;
    }
    struct stat st {};
    char path[64];  // not a std::string: this runs every second, in the middle of calls
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", m.pid, m.ref.fd);
    if (stat(path, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != m.ref.inode) {
      unmap(i);
      continue;
    }
    ++i;
  }
}

void PeerBuffers::dropFreed() { dropStale(-1); }

void PeerBuffers::unmap(std::size_t index) {
  munmap(maps_[index].local, maps_[index].ref.bytes);
  maps_.erase(maps_.begin() + static_cast<std::ptrdiff_t>(index));
}

}  // namespace tutti::shm
