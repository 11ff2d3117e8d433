#include "transport/shm/segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include "base/strings.h"

namespace tutti::shm {
namespace {

std::size_t roundUp(std::size_t value, std::size_t to) { return (value + to - 1) / to * to; }

Status systemError(const std::string& what) {
  return Status(ErrorCode::kSystemError, strFormat("%s: %s", what.c_str(), std::strerror(errno)));
}

}  // namespace

Layout Layout::make(int size, std::uint32_t slots, std::uint32_t slotBytes) {
  Layout l;
  l.size = size;
  l.slots = slots;
  l.slotBytes = slotBytes;
  const auto n = static_cast<std::size_t>(size);
  std::size_t at = roundUp(sizeof(Control), kCacheLine);
  l.leftAt = at;
  at = roundUp(at + n * sizeof(std::atomic<std::uint32_t>), kCacheLine);
  l.cmaAt = at;
  at = roundUp(at + n, kCacheLine);
  l.acksAt = at;
  at = roundUp(at + n * kRndvSlots * sizeof(std::atomic<std::uint64_t>), kCacheLine);
  l.sharesAt = at;
  at = roundUp(at + n * kRndvSlots * sizeof(RndvShare), kCacheLine);
  l.flatAt = at;
  at += 2 * sizeof(FlatSlot);
  l.channelsAt = at;
  // The tail on a line of its own: the receiver writes it, the sender reads it rarely.
  l.channelBytes = kCacheLine + static_cast<std::size_t>(slots) * l.slotStride();
  l.totalBytes = roundUp(at + n * l.channelBytes, 4096);
  return l;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, layout_.totalBytes);
  closeFd();
}

Segment::Segment(Segment&& other) noexcept
    : layout_(other.layout_), base_(other.base_), fd_(other.fd_) {
  other.base_ = nullptr;
  other.fd_ = -1;
}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, layout_.totalBytes);
    closeFd();
    layout_ = other.layout_;
    base_ = other.base_;
    fd_ = other.fd_;
    other.base_ = nullptr;
    other.fd_ = -1;
  }
  return *this;
}

void Segment::closeFd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<Segment> Segment::create(const Layout& layout, std::uint64_t commUid, int rank) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "tutti-shm", MFD_CLOEXEC));
  if (fd < 0) return systemError("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(layout.totalBytes)) != 0) {
    Status s = systemError(strFormat("sizing the shared segment to %zu bytes", layout.totalBytes));
    close(fd);
    return s;
  }
  void* base = mmap(nullptr, layout.totalBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                    fd, 0);
  if (base == MAP_FAILED) {
    Status s = systemError("mapping the shared segment");
    close(fd);
    return s;
  }
  Segment segment(layout, static_cast<char*>(base), fd);
  // A fresh memfd reads as zeros: every atomic starts at 0; construct the control block's
  // atomics in place for form's sake and fill in the identity last.
  Control* control = new (base) Control{};
  control->commUid = commUid;
  control->rank = rank;
  control->size = layout.size;
  control->slots = layout.slots;
  control->slotBytes = layout.slotBytes;
  control->magic = kSegmentMagic;
  return segment;
}

Result<Segment> Segment::open(const Layout& layout, int pid, int fd, std::uint64_t commUid,
                              int rank) {
  const std::string path = strFormat("/proc/%d/fd/%d", pid, fd);
  const int mine = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0) return systemError(strFormat("opening rank %d's shared segment %s", rank, path.c_str()));
  struct stat st {};
  if (fstat(mine, &st) != 0 || static_cast<std::size_t>(st.st_size) != layout.totalBytes) {
    close(mine);
    return Status(ErrorCode::kProtocolError,
                  strFormat("rank %d's shared segment has %lld bytes, expected %zu", rank,
                            static_cast<long long>(st.st_size), layout.totalBytes));
  }
  void* base = mmap(nullptr, layout.totalBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                    mine, 0);
  close(mine);  // the mapping keeps the memory
  if (base == MAP_FAILED) return systemError(strFormat("mapping rank %d's shared segment", rank));
  Segment segment(layout, static_cast<char*>(base), -1);
  const Control& c = segment.control();
  if (c.magic != kSegmentMagic || c.commUid != commUid || c.rank != rank || c.size != layout.size)
    return Status(ErrorCode::kProtocolError,
                  strFormat("%s is not rank %d's segment of this communicator", path.c_str(), rank));
  return segment;
}

std::atomic<std::uint32_t>& Segment::left(int peer) const {
  return reinterpret_cast<std::atomic<std::uint32_t>*>(base_ + layout_.leftAt)[peer];
}

std::uint8_t& Segment::cma(int peer) const {
  return reinterpret_cast<std::uint8_t*>(base_ + layout_.cmaAt)[peer];
}

std::atomic<std::uint64_t>& Segment::ack(int peer, std::size_t id) const {
  auto* table = reinterpret_cast<std::atomic<std::uint64_t>*>(base_ + layout_.acksAt);
  return table[static_cast<std::size_t>(peer) * kRndvSlots + id];
}

RndvShare& Segment::share(int peer, std::size_t id) const {
  auto* table = reinterpret_cast<RndvShare*>(base_ + layout_.sharesAt);
  return table[static_cast<std::size_t>(peer) * kRndvSlots + id];
}

FlatSlot& Segment::flat(std::uint64_t parity) const {
  return reinterpret_cast<FlatSlot*>(base_ + layout_.flatAt)[parity & 1];
}

Ring Segment::ringFrom(int sender) const {
  char* channel = base_ + layout_.channelsAt + static_cast<std::size_t>(sender) * layout_.channelBytes;
  Ring ring;
  ring.tail = reinterpret_cast<std::atomic<std::uint64_t>*>(channel);
  ring.slots = channel + kCacheLine;
  ring.count = layout_.slots;
  ring.stride = layout_.slotStride();
  return ring;
}

SlotView Ring::read(std::uint64_t index) const {
  const SlotHeader* h = header(index);
  SlotView v;
  v.tag = h->tag;
  v.msgBytes = h->msgBytes;
  v.chunkBytes = h->chunkBytes;
  v.kind = h->kind;
  v.rndvId = h->rndvId;
  v.stamp = CallStamp{h->stampWhat, h->stampCount};
  if (v.kind == SlotKind::kData && v.msgBytes <= kInlineBytes) {
    v.data = h->inlineData;  // the whole message, in the line just polled
    return v;
  }
  v.offset = h->offset;
  v.remoteAddr = h->remoteAddr;
  v.rndvSeq = h->rndvSeq;
  if (v.kind == SlotKind::kRndv) v.buffer = h->buffer;
  v.data = payload(index);
  return v;
}

void Segment::ring() const {
  Control& c = control();
  c.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (c.sleeping.load(std::memory_order_seq_cst) != 0) sharedFutexWake(&c.doorbell);
}

void Segment::wakeIfSleeping() const {
  Control& c = control();
  if (c.sleeping.load(std::memory_order_seq_cst) == 0) return;
  c.doorbell.fetch_add(1, std::memory_order_seq_cst);
  sharedFutexWake(&c.doorbell);
}

void sharedFutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                     std::int64_t maxWaitNs) {
  timespec ts{static_cast<time_t>(maxWaitNs / 1000000000), static_cast<long>(maxWaitNs % 1000000000)};
  // Not FUTEX_PRIVATE: the word lives in memory other processes map.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void sharedFutexWake(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace tutti::shm
