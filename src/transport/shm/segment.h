#pragma once
// The shared-memory segment of one rank (DESIGN.md 5, shm): an anonymous memfd that every
// rank of the communicator on this host maps. A rank's segment holds what others write *to*
// it, so each rank reads only its own segment and writes into its peers':
//
//   [ Control ]   doorbell (futex word), sleeping flag, the abort record (first failure,
//                 written once by whichever rank fails first), per-peer "left" flags and
//                 whether this rank can read each peer's memory with process_vm_readv
//   [ Acks    ]   acks[p][k]: rank p finished reading rendezvous send k of this rank
//   [ Shares  ]   shares[p][k]: rank p's buffer for rendezvous send k of this rank and the
//                 pieces of it each side has claimed, so that this rank (the sender) can
//                 write part of the message while p reads the rest (RndvShare)
//   [ Inbound ]   one ring per peer p: tail (advanced by this rank), then `slots` slots of a
//                 128-byte header and `slotBytes` of payload. A slot is published by its
//                 sequence number, stored last; a message of up to kInlineBytes travels in
//                 the header's first cache line, so the receiver polls and reads one line.
//
// Being a memfd, the segment has no name in /dev/shm: it disappears with the last mapping,
// however its processes end. Peers open it through /proc/<pid>/fd/<fd> while the owner
// keeps the descriptor open (until every rank has mapped every segment).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/assert.h"
#include "transport/link.h"
#include "transport/shm/user_buffers.h"
#include "tutti/status.h"

namespace tutti::shm {

inline constexpr std::uint64_t kSegmentMagic = 0x316d732d69747475ull;  // "utti-sm1", LE
inline constexpr std::size_t kCacheLine = 64;
inline constexpr std::size_t kAbortTextBytes = 512;
/// Rendezvous sends one rank may have outstanding towards one peer.
inline constexpr std::size_t kRndvSlots = 64;

/// What a ring slot carries.
enum class SlotKind : std::uint16_t {
  kData = 1,  ///< a piece of a message, copied into the payload
  kRndv = 2,  ///< a whole message left in the sender's memory, to be read with CMA
};

/// Messages of at most this many bytes travel inside the slot header's first cache line.
inline constexpr std::size_t kInlineBytes = 16;

/// Header of one ring slot (the payload follows it). The first cache line holds all that
/// a message of up to kInlineBytes needs; the second is written and read only for larger
/// pieces and rendezvous.
struct alignas(kCacheLine) SlotHeader {
  /// Index + 1 of the ring position the slot holds, stored last by the sender (sequentially
  /// consistent, see Segment::wakeIfSleeping): the slot is readable once it matches.
  std::atomic<std::uint64_t> seq;
  std::uint64_t tag;
  std::uint64_t msgBytes;    // length of the whole message
  std::uint32_t chunkBytes;  // kData: bytes of payload in this slot
  SlotKind kind;
  std::uint16_t rndvId;      // kRndv: index into the sender's ack table for this peer
  // The call the message belongs to (first piece and kRndv): CallStamp's what and count. A
  // message's stamp has no open bits (those only travel through flat exchanges, FlatSlot),
  // so the first line keeps room for the inline payload; setStamp checks it in debug builds.
  std::uint64_t stampWhat;
  std::uint64_t stampCount;
  char inlineData[kInlineBytes];  // kData of at most kInlineBytes: the whole message
  alignas(kCacheLine) std::uint64_t offset;  // kData: where this piece starts in the message
  std::uint64_t remoteAddr;  // kRndv: the message in the sender's address space
  std::uint64_t rndvSeq;     // kRndv: the value the ack must carry
  BufferRef buffer;          // kRndv: the memAlloc buffer holding the message, if any

  void setStamp(const CallStamp& stamp) {
    TUTTI_DASSERT(stamp.open == 0);
    stampWhat = stamp.what;
    stampCount = stamp.count;
  }
};
static_assert(sizeof(SlotHeader) == 2 * kCacheLine);
static_assert(offsetof(SlotHeader, offset) == kCacheLine);

/// How the two ends of one rendezvous message share its copy: the message is cut into
/// `chunks` pieces (shareChunkBytes()); the receiver claims pieces from the front and reads
/// them with process_vm_readv, the sender claims pieces from the back and writes them into
/// the receiver's buffer with process_vm_writev (or memcpy through a mapping, for buffers
/// from memAlloc: BufferRef). Claims are one compare-and-swap on `claim`
/// (front count in the low 32 bits, back count in the high 32), so every piece is copied
/// exactly once whoever gets there first, and a sender busy elsewhere simply claims none.
/// In a two-way exchange (the receiver is sending to the same peer at the same time) the
/// receiver claims none and `senderCopies` says so: each end writes its own message, read
/// from its own cache, and the sender claims the whole of it at once.
/// Lives in the sender's segment, indexed by receiver and rendezvous id; written by the
/// receiver when it starts the message, `seq` last (it equals the send's rndvSeq).
struct alignas(kCacheLine) RndvShare {
  std::atomic<std::uint64_t> seq;      // rndvSeq of the message the other fields describe
  std::atomic<std::uint64_t> dest;     // the receiver's buffer, in its address space
  std::atomic<std::uint64_t> claim;    // front | back << 32, in pieces
  std::atomic<std::uint32_t> written;  // pieces the sender has finished writing
  std::atomic<std::uint32_t> senderCopies;  // 1: the receiver claims none (written before seq)
  BufferRef destBuffer;  // the memAlloc buffer holding `dest`, if any (written before seq)
};
static_assert(sizeof(RndvShare) == kCacheLine);

/// Bytes of one piece of a shared rendezvous message of `bytes` bytes: small enough that
/// the two ends balance (about 64 pieces), large enough that a system call per claim is
/// cheap beside the copy. Both ends compute the same.
inline std::uint64_t shareChunkBytes(std::uint64_t bytes) {
  constexpr std::uint64_t kMin = 32 << 10, kPage = 4096;
  const std::uint64_t per = (bytes / 64 + kPage - 1) / kPage * kPage;
  return per < kMin ? kMin : per;
}

/// A slot's fields as the receiver copied them out (they are checked, then used; the
/// second cache line is read only when the piece needs it).
struct SlotView {
  std::uint64_t tag = 0;
  std::uint64_t msgBytes = 0;
  std::uint64_t offset = 0;
  std::uint32_t chunkBytes = 0;
  SlotKind kind = SlotKind::kData;
  std::uint16_t rndvId = 0;
  std::uint64_t remoteAddr = 0;
  std::uint64_t rndvSeq = 0;
  BufferRef buffer;
  CallStamp stamp;
  const char* data = nullptr;  // kData: the piece's bytes (inline or the payload)
};

/// Bytes one rank may contribute to a flat exchange (FlatSlot): 8 KiB and the rest of the
/// slot's first line. Up to 8 KiB per rank the exchange beat the algorithms' messages at
/// 2, 4 and 8 ranks (defaults.cc).
inline constexpr std::size_t kFlatBytes = 8192 + 32;

/// One rank's contribution to a flat exchange (ShmTransport::flatExchange): written by the
/// segment's owner, read in place by every other rank. Two per segment, used alternately:
/// a rank that publishes its (k+2)-th exchange has seen every rank's (k+1)-th, which each
/// published only after it had finished reading everybody's k-th, so the slot it reuses is
/// free. A contribution of up to 32 bytes shares the cache line of `seq`.
struct alignas(kCacheLine) FlatSlot {
  /// The call's sequence number + 1, stored last (sequentially consistent, see
  /// Segment::wakeIfSleeping); 0 before the first use and while the owner rewrites the slot
  /// (a reader that does not wait for this call, ShmTransport::checkFlatArrivalsLocked,
  /// reads the stamp between two loads of seq, as a seqlock).
  std::atomic<std::uint64_t> seq;
  std::atomic<std::uint64_t> stampWhat;   // CallStamp::what
  std::atomic<std::uint64_t> stampCount;  // CallStamp::count
  std::uint32_t bytes;
  std::uint32_t pad;
  char data[kFlatBytes];
  /// CallStamp::open: a flat exchange may carry a stamp with open bits (a rank agreeing on
  /// what its algorithm choice depends on). On a line of its own, past the data, so that
  /// the first line keeps its 32 bytes of contribution: readers need it only when `what`
  /// or `count` differ from theirs, and the owner stores it only when it changes, so that
  /// the line stays shared.
  alignas(kCacheLine) std::atomic<std::uint64_t> stampOpen;

  /// Whether the stamp's what and count are `stamp`'s (then no open bits can make them
  /// conflict): the fast check, on the line of `seq`.
  bool sameCall(const CallStamp& stamp) const {
    return stampWhat.load(std::memory_order_acquire) == stamp.what &&
           stampCount.load(std::memory_order_acquire) == stamp.count;
  }
  CallStamp stamp() const {
    return CallStamp{stampWhat.load(std::memory_order_acquire),
                     stampCount.load(std::memory_order_acquire),
                     stampOpen.load(std::memory_order_acquire)};
  }
};
static_assert(sizeof(FlatSlot) == 32 + kFlatBytes + kCacheLine);
static_assert(offsetof(FlatSlot, data) == 32);

/// The control block at the start of every segment.
struct alignas(kCacheLine) Control {
  std::uint64_t magic;
  std::uint64_t commUid;
  std::int32_t rank;
  std::int32_t size;
  std::uint32_t slots;
  std::uint32_t slotBytes;
  /// 1: this rank writes pieces of its rendezvous sends into receivers that share them
  /// (RndvShare; ShmTransport::Options::cmaShare). Set before the segment is announced.
  std::uint32_t writesPieces;
  /// Bumped by anyone who gives this rank something to do (messages and room only while
  /// it sleeps: Segment::wakeIfSleeping); the owner sleeps on it.
  alignas(kCacheLine) std::atomic<std::uint32_t> doorbell;
  /// Non-zero while the owner is (about to be) asleep on the doorbell.
  alignas(kCacheLine) std::atomic<std::uint32_t> sleeping;
  /// 0: no failure; 1: a rank is writing the record; 2: written.
  alignas(kCacheLine) std::atomic<std::uint32_t> abortState;
  std::int32_t abortCode;
  std::int32_t abortPeer;  // the rank at fault (Status::kNoRank when none)
  std::int32_t abortFrom;  // the rank that wrote the record
  char abortText[kAbortTextBytes];
};

/// Offsets of the parts of a segment for a world of `size` ranks.
struct Layout {
  int size = 1;
  std::uint32_t slots = 0;
  std::uint32_t slotBytes = 0;
  std::size_t leftAt = 0;      // std::atomic<uint32_t>[size]: peer p left (destroyed)
  std::size_t cmaAt = 0;       // std::uint8_t[size]: this rank can read p with CMA
  std::size_t acksAt = 0;      // std::atomic<uint64_t>[size][kRndvSlots]
  std::size_t sharesAt = 0;    // RndvShare[size][kRndvSlots]
  std::size_t flatAt = 0;      // FlatSlot[2]
  std::size_t channelsAt = 0;  // channels, one per rank (the owner's own is unused)
  std::size_t channelBytes = 0;
  std::size_t totalBytes = 0;

  static Layout make(int size, std::uint32_t slots, std::uint32_t slotBytes);
  std::size_t slotStride() const { return sizeof(SlotHeader) + slotBytes; }
};

/// One ring, as seen through a mapping: the sender publishes slots by their sequence
/// numbers, the receiver advances the tail; both count slots since the start.
struct Ring {
  std::atomic<std::uint64_t>* tail = nullptr;
  char* slots = nullptr;
  std::uint32_t count = 0;
  std::size_t stride = 0;

  SlotHeader* header(std::uint64_t index) const {
    return reinterpret_cast<SlotHeader*>(slots + (index % count) * stride);
  }
  char* payload(std::uint64_t index) const {
    return reinterpret_cast<char*>(header(index)) + sizeof(SlotHeader);
  }
  /// True once the sender has published position `index`.
  bool published(std::uint64_t index) const {
    return header(index)->seq.load(std::memory_order_seq_cst) == index + 1;
  }
  /// Copies out the published slot at `index`.
  SlotView read(std::uint64_t index) const;
};

/// A mapping of one rank's segment (its own or a peer's).
class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  /// Creates and maps a new zeroed segment for `rank`, pages populated up front so that no
  /// call faults on them later. kSystemError naming the failed call.
  static Result<Segment> create(const Layout& layout, std::uint64_t commUid, int rank);
  /// Maps the segment that process `pid` holds as descriptor `fd`, checking its magic,
  /// communicator and rank. kSystemError / kProtocolError naming the rank.
  static Result<Segment> open(const Layout& layout, int pid, int fd, std::uint64_t commUid,
                              int rank);

  /// The memfd (only on a created segment, until closeFd()).
  int fd() const { return fd_; }
  void closeFd();
  char* base() const { return base_; }
  Control& control() const { return *reinterpret_cast<Control*>(base_); }
  std::atomic<std::uint32_t>& left(int peer) const;
  std::uint8_t& cma(int peer) const;
  std::atomic<std::uint64_t>& ack(int peer, std::size_t id) const;
  /// How rendezvous send `id` of this segment's owner to `peer` is shared (RndvShare).
  RndvShare& share(int peer, std::size_t id) const;
  /// The owner's flat-exchange slot `parity` (0 or 1).
  FlatSlot& flat(std::uint64_t parity) const;
  /// The ring carrying messages from `sender` to this segment's owner.
  Ring ringFrom(int sender) const;

  /// Rings the doorbell: wakes the owner if it sleeps. Call after publishing.
  void ring() const;
  /// Wakes the owner only if it sleeps: for what its spin watches itself without the
  /// doorbell (published slots, ring tails). The publication must be a sequentially consistent
  /// store; the owner stores its sleeping flag the same way before its last look, so either
  /// that look sees the publication or this sees the flag. Saves the doorbell's cache line
  /// a round trip per message while the owner spins.
  void wakeIfSleeping() const;

 private:
  Segment(const Layout& layout, char* base, int fd) : layout_(layout), base_(base), fd_(fd) {}

  Layout layout_;
  char* base_ = nullptr;
  int fd_ = -1;
};

/// Blocks on a doorbell shared between processes while it equals `expected`, at most
/// `maxWaitNs`. Spurious returns are possible.
void sharedFutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                     std::int64_t maxWaitNs);
void sharedFutexWake(std::atomic<std::uint32_t>* word);

}  // namespace tutti::shm
