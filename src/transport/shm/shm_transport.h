#pragma once
// ShmTransport: every peer on this host reached through shared memory (DESIGN.md 5, shm).
//
// Each rank owns a segment (segment.h) with one inbound ring per peer. A message of up to
// `cmaBytes` is copied into the receiver's ring in slot-sized pieces by the sending thread
// and copied out by the receiving thread into the posted receive (or into an "unexpected"
// buffer when the receive is not posted yet): two copies, pipelined, no system call. A
// larger message is sent by rendezvous when the receiver can read this process's memory:
// one slot describes it, the receiver copies it straight from the sender's buffer with
// process_vm_readv (one copy) and marks it done in the sender's ack table. A sender that
// waits for that ack meanwhile writes pieces of the message from the back into the
// receiver's buffer with process_vm_writev (RndvShare, segment.h): the two ends claim
// pieces until none are left, so each core copies what it has time for. Where the buffer
// on the other side came from memAlloc (user_buffers.h), its slot or share names the memfd
// behind it, and that side's copy is a memcpy (or the reduction itself) through this
// process's mapping of it, made on first use (PeerBuffers), instead of the kernel's copy.
//
// There is no progress thread. Posting a request moves what it can at once; the thread
// that waits (waitForProgress) moves the rest, polling for the spin budget, then keeping
// its core for Options::pollNs (polling, or yielding it where ranks outnumber cores), and
// then sleeping on its segment's doorbell. Peers ring the doorbell for acks, leaving and aborts
// always, and for messages and freed slots only while the owner sleeps: a spinning owner
// watches its rings' slots and tails itself, so a small message costs the receiver one
// cache line. A rank blocked in a collective uses no CPU after those few milliseconds, and
// more ranks than cores still progress.
//
// Failures: the first failure (a timeout, a mismatch, a peer found dead through its pidfd,
// a peer that left while still needed) is written into every peer's abort record and rings
// its doorbell, so every rank fails at once naming the rank at fault. One lock guards the
// transport's state; completions are signalled after it is released.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/wait.h"
#include "transport/done_list.h"
#include "base/config.h"
#include "transport/extensions.h"
#include "transport/link.h"
#include "transport/shm/segment.h"
#include "tutti/store.h"

namespace tutti::shm {

class ShmLink;
using tutti::DoneList;

class ShmTransport final : public Transport,
                           public FlatExchange,
                           public DirectCopy,
                           public MappedBuffers,
                           public ProgressHook {
 public:
  /// Slots of the rings by default (Options::slotBytes = 0). A message crosses a ring in
  /// pieces of 32 KiB, larger for large messages up to the slot (ShmLink::pieceBytes).
  /// Between 2 ranks, both copying at once, 256 KiB pieces took 0.85-0.87 of the time of
  /// 32 KiB ones for all-gather and all-to-all of 64 MiB (both through the rings); with
  /// more ranks than cores the larger slots measured 1.04-1.15 for a 16 MiB all-reduce.
  static constexpr std::uint32_t kSlotBytes = 32u << 10;
  static constexpr std::uint32_t kTwoRankSlotBytes = 256u << 10;

  static void plainCopy(void* dst, const void* src, std::size_t bytes, std::size_t) {
    std::memcpy(dst, src, bytes);
  }
  static void plainCopyTwo(void* cached, void* dst, const void* src, std::size_t bytes,
                           std::size_t) {
    std::memcpy(cached, src, bytes);
    std::memcpy(dst, src, bytes);
  }

  struct Options {
    int rank = 0;
    int size = 1;
    std::uint64_t commUid = 0;
    /// Messages of at least this many bytes go by rendezvous (CMA) where the receiver can
    /// read the sender; 0 never.
    std::uint64_t cmaBytes = 256 << 10;
    /// The same where every rank of the host has a core of its own. Ignored when cmaBytes
    /// is 0 or cmaAuto is set.
    std::uint64_t cmaBytesWithCores = 16 << 10;
    /// The thresholds follow autoCmaBytes() (the host's kernel copy against memcpy, and
    /// whether every rank of the host has a core) rather than the two above; cmaBytes 0
    /// still means never.
    bool cmaAuto = false;
    /// The communicator learns per call which way a collective's large messages go
    /// (TUTTI_MESSAGE_PATH=learn): where cmaAuto finds the kernel's copy slow, the threshold
    /// then stays, for the calls that learn to try, and directSlow() tells the others.
    bool learnsPath = false;
    /// Messages of at least this many bytes sent from a memAlloc buffer go by rendezvous,
    /// the receiver reading them through its mapping of the buffer (no system call per
    /// message, so the threshold is lower than cmaBytes); 0 never. Only where the receiver
    /// can read the sender (rendezvousTo).
    std::uint64_t mappedBytes = 16 << 10;
    /// Messages of at least this many bytes may have their pieces written into the rings
    /// past the caches (TransferRequest::streamPieces), where every rank of the host has a
    /// core; 0 never.
    std::uint64_t streamedBytes = kStreamedPiecesFrom;
    /// The sender of a rendezvous message helps: while the receiver reads the message from
    /// the front, the sender writes it into the receiver's buffer from the back (RndvShare
    /// in segment.h), so both cores copy when the sender has nothing else to do.
    bool cmaShare = true;
    /// Rendezvous messages of at most this many bytes that two ranks send each other at
    /// once are each written whole by their sender (leavesExchangeToSender); 0 never;
    /// unset: autoExchangeBytes().
    std::optional<std::uint64_t> exchangeMaxBytes;
    /// Payload bytes of one ring slot; 0: kTwoRankSlotBytes between 2 ranks, else
    /// kSlotBytes. Every rank of the communicator must pass the same.
    std::uint32_t slotBytes = 0;
    /// How the transport copies message bytes into a receiver's buffer (a memAlloc buffer
    /// read or written through its mapping, a piece out of the ring): dst = src over
    /// `bytes`, a piece of a message of `messageBytes`. The layers above pass reduce::copy,
    /// which writes large messages with non-temporal stores; memcpy by default.
    void (*copy)(void* dst, const void* src, std::size_t bytes, std::size_t messageBytes) =
        &plainCopy;
    /// The same for a piece that also goes on into the next ring (a forwarded copy,
    /// ShmLink::forwardLocked): cached = src, the next ring's slot, and dst = src, the
    /// receiver's buffer, written as `copy` would write it. The layers above pass
    /// reduce::copyTwo, which reads the piece once; two memcpys by default.
    void (*copyTwo)(void* cached, void* dst, const void* src, std::size_t bytes,
                    std::size_t messageBytes) = &plainCopyTwo;
    /// Bytes of unexpected messages buffered per peer before the ring stops being drained;
    /// each message counts its entry as well as its payload (ShmLink::kEntryBytes).
    std::uint64_t maxUnexpectedBytes = 64u << 20;
    /// Past this many unexpected bytes from one peer, a message of a later collective call
    /// stays in the ring while this rank still waits for a message of an earlier call
    /// (ShmLink::startMessageLocked): a rank that sends and leaves (a reduce's leaves) then
    /// runs at most this far ahead of its receiver, instead of filling maxUnexpectedBytes
    /// with buffers that miss the cache. 0: no such limit.
    std::uint64_t runAheadBytes = 256u << 10;
    /// The same in messages: past this many unexpected messages from one peer, a later
    /// call's message waits in the ring too. Small calls cost their receiver per message
    /// (a buffer, a match, a line that misses the cache), not per byte: 256 KiB of 8-byte
    /// reduces let a leaf run 32768 calls ahead. 8-byte reduce on 2 cores, time against no
    /// such limit (the ranks under the normal scheduler, as users run them): 4 ranks
    /// 3.5/2.2/1.7/0.8 us before, 0.7/0.9/1.2/1.0 after; 8 ranks 4.1/6.1/3.2/13.7 before,
    /// 1.7/3.1/2.9/1.9 after. Under SCHED_FIFO (scripts/ab_latency.sh -r 5) 4 ranks 0.80, 8
    /// ranks 0.30 of the time; 2 ranks and broadcasts level (0.98-1.02, broadcast 4 ranks
    /// -r 9: 0 / 64 / 256 messages 0.81 / 0.79 / 0.81 us). 16 measured level with 64.
    /// 0: no such limit.
    std::uint64_t runAheadMessages = 64;
    /// After its spin, how long a waiter with nothing to do keeps its core before it sleeps
    /// on its doorbell: polling where every rank of the host has a core, yielding it
    /// (sched_yield: another runnable rank on this core gets it, else the call returns at
    /// once) where ranks outnumber cores. A sleeper is woken late when other work holds its
    /// core (the scheduler hands a yielder's core to anyone runnable, a poller keeps it),
    /// and on a virtual machine a vCPU whose ranks all sleep halts and, when its host is
    /// busy, waits for the hypervisor to run it again. Measurements (docs/performance.md,
    /// "A waiter that keeps its core"): it was 50 us of yields after a 20 us spin.
    std::int64_t pollNs = 5'000'000;
    Deadline deadline = Deadline::afterSeconds(60);
    /// This rank's host as far as shared memory goes; empty: topo::hostIdentity(). Ranks with equal
    /// keys share segments.
    std::string host;
    /// True: every rank must be on this host (kNotSupported otherwise). False: the ranks
    /// on this host are linked, the others left to another transport (HybridTransport).
    bool requireAll = true;
  };

  /// What the configuration sets of the options (TUTTI_SHM_*, and TUTTI_TCP_MAX_UNEXPECTED
  /// for the unexpected bytes); the caller sets the rest (rank, size, commUid, learnsPath,
  /// the copies, deadline, requireAll). The registry has checked every value.
  static Options optionsFrom(const Config& config);

  /// Builds the transport through `store` (keys "<keyPrefix>shm/..."). Every rank of the
  /// communicator must call it. kNotSupported when `requireAll` and the ranks are not all
  /// on one host (every rank sees it), or when no other rank shares this rank's host; the
  /// same kSystemError on every rank when any rank could not set up its segment or map
  /// another's. So whatever the outcome, each pair of ranks agrees on whether it talks
  /// through shared memory.
  static Result<std::unique_ptr<ShmTransport>> create(Store& store, const std::string& keyPrefix,
                                                      const Options& options);
  ~ShmTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Link& link(int peer) override;
  WaitSignal& progressSignal() override { return progress_; }
  void setDriving(bool) override {}
  bool waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) override;
  /// A pass over every link when an inbound ring's next slot holds a message of a call
  /// before `seq` (ShmLink::holdsEarlierCall): nobody reads the rings between calls, and a
  /// call that never waits makes no pass.
  void readStrays(std::uint64_t seq) override;
  void interruptWait() override { onProgress(); }
  /// Rings are read only by the thread that posts or waits (no thread of its own).
  bool arrivalsOnCallingThreads() const override { return true; }
  /// Flat exchanges (flat.cc) where every rank is on this host: each rank writes its
  /// contribution into a slot of its own segment (FlatSlot), every other rank reads it there.
  std::size_t flatBytes() const override;
  TransportExtension* extension(std::string_view name) override;
  bool mapped(const void* data, std::size_t bytes) const override;
  std::uint64_t directFrom() const override { return cmaFrom_; }
  bool directSlow() const override { return directSlow_; }
  /// Where every rank of the host has a core, from Options::streamedBytes (a rank that
  /// shares its core with another does not wait on a far core's cache: it waits for its turn).
  std::uint64_t streamedFrom() const override { return coreEach_ ? options_.streamedBytes : 0; }
  /// On the AMD EPYC VM, where the two vCPUs sometimes sit on far-apart cores: a 2-rank
  /// all-reduce of 256 MiB took 39-41 ms with the senders' copies streamed against 76-99
  /// through the caches, and 55-65 against 38-42 where the cores were near
  /// (docs/performance.md). Calls learn which (PathLearner::Way::kStreamed). From messages
  /// of 256 KiB (a slot between 2 ranks): a 2-rank reduce-scatter of 512 KiB (256 KiB
  /// messages) took 25-35 us learning to stream against 69-74 through the caches where the
  /// cores were far apart, 21-25 either way where they were near; smaller messages stay in
  /// the caches. PathLearner::waysFor says which calls may take it.
  static constexpr std::uint64_t kStreamedPiecesFrom = std::uint64_t{256} << 10;
  Status flatExchange(const FlatCall& call, const char** views, FlatStop* stop) override;
  Status health() const override;
  void fail(const Status& status) override;
  void shutdown(Deadline deadline) override;
  /// The size from which heap-buffer messages go by rendezvous on this host (0: never), as
  /// chosen at creation from the options and the host.
  std::uint64_t cmaFrom() const { return cmaFrom_; }
  /// The highest kernelCopyRatio() (base/host_props.h) that this host's ranks measured (0
  /// where the kernel's copy failed), on which the host's rules decide.
  double hostKernelCopyRatio() const { return hostKernelCopyRatio_; }

  /// Whether `peer` can read this rank's memory, so that large messages to it may go by
  /// rendezvous: from cmaBytes (never when 0) for heap buffers, read with the kernel's
  /// copy, and from mappedBytes for memAlloc buffers, read through a mapping (whatever
  /// cmaBytes says; should the mapping fail, the kernel's copy reads them).
  bool rendezvousTo(int peer) const;
  /// Whether this rank writes pieces of its rendezvous sends to `peer` into the peer's
  /// buffer (it may write into what it may read).
  bool helpsWrite(int peer) const;
  /// Whether a rendezvous message of `bytes` from `peer` that arrives while this rank is
  /// sending to `peer` too is left for the peer to write (RndvShare::senderCopies): the
  /// peer writes pieces and may reach this rank's memory; every rank of this host has a
  /// core of its own (with more ranks than cores, the receiver reads it, so that it need
  /// not wait for a descheduled sender); and the message is at most exchangeMaxBytes_.
  bool leavesExchangeToSender(int peer, std::uint64_t bytes) const;
  /// The automatic rendezvous threshold for heap buffers (Options::cmaAuto); 0: never.
  /// Never past kSlowKernelCopyRatio; else 256K with a core each and 2M without where the
  /// host's kernel copy is costly, 16K and 256K where it is not: the cheaper the kernel's one
  /// copy against the ring's two, the smaller the messages it wins (docs/host-rules.md).
  static std::uint64_t autoCmaBytes(bool coreEach, double hostRatio);
  /// The rendezvous threshold for heap buffers in force (cmaFrom(); 0: none), and whether
  /// it was kept although the kernel's copy is slow (directSlow(), Options::learnsPath):
  /// from the options, whether every rank of the host has a core, and the host's
  /// kernel-copy ratio.
  struct DirectMoves {
    std::uint64_t from = 0;
    bool slow = false;
  };
  static DirectMoves directMoves(const Options& options, bool coreEach, double hostRatio);
  /// Past this ratio the kernel's copy is slow: the rings' copies, made by two cores at once
  /// through the cache, cost less at every size (docs/host-rules.md).
  static constexpr double kSlowKernelCopyRatio = 4.0;
  /// The automatic limit of a two-way exchange written by its senders (Options::
  /// exchangeMaxBytes unset): none where the host's kernel copy is costly, else a quarter of
  /// the ranks' smallest L2 (512K where not known), so that each end's blocks stay in its L2
  /// (docs/host-rules.md).
  static std::uint64_t autoExchangeBytes(double hostRatio, std::uint64_t l2Bytes);
  /// The bounce buffer a rendezvous message reduced as it is read goes through, a piece at
  /// a time (ShmLink::readCombiningLocked): the largest power of two at most an eighth of
  /// the ranks' smallest L2, within 32 KiB to 1 MiB, so that the piece stays in the L2
  /// while it is reduced with the operand and the result beside it; where sysfs does not
  /// say, kBounceBytesUnknownL2 (docs/host-rules.md).
  static std::size_t autoBounceBytes(std::uint64_t l2Bytes);
  static constexpr std::size_t kBounceBytesUnknownL2 = std::size_t{128} << 10;
  /// Whether `peer` shares this rank's host (and so has a link here).
  bool isLocal(int peer) const { return isLocal_[static_cast<std::size_t>(peer)]; }
  /// How many other ranks share this host.
  std::size_t localPeers() const { return local_.size(); }
  /// Whether every rank of this host has a core of its own, and whether each has two (one
  /// more for its worker thread): from every local rank's affinity mask, exchanged at set-up,
  /// and this process's CPU quota (cpus.h). Decides polling against yielding here, and the
  /// spin budgets of the communicator.
  bool coreEach() const { return coreEach_; }
  bool twoCoresEach() const { return twoCoresEach_; }
  /// Payload bytes one ring (one direction between two ranks) holds: slots times slot
  /// bytes, the same on every rank of the communicator.
  std::size_t ringBytes() const {
    return static_cast<std::size_t>(layout_.slots) * layout_.slotBytes;
  }
  /// Wakes this rank's waiter: another transport made progress.
  void onProgress() override;
  /// A transport the waiter also drives (HybridTransport's TCP side): looked at every few
  /// turns of the spin and every yield, handed back to its own thread during a sleep. Set
  /// before the first call; null: none.
  void setWaitPartner(WaitPartner* partner) { partner_ = partner; }
  /// Bytes this rank copied or reduced through its mappings of peers' memAlloc buffers
  /// (user_buffers.h) rather than with the kernel's copy.
  std::uint64_t mappedBytes() const { return mappedBytes_.load(std::memory_order_relaxed); }
  /// Bytes of its rendezvous sends this rank wrote into receivers' buffers itself
  /// (RndvShare: the pieces it claimed), for tests and diagnostics.
  std::uint64_t writtenBytes() const { return writtenBytes_.load(std::memory_order_relaxed); }
  /// Where this rank's waits for its peers went since the transport was made: polling
  /// (the spin and the poll window), yielding its core, asleep on the futex; a wait that
  /// ends within its first 64 turns is not counted. Logged at INFO when the transport goes.
  struct WaitTimes {
    std::uint64_t polls = 0;   // waits that polled past their first turns
    std::uint64_t yields = 0;  // waits that went on to yield the core
    std::uint64_t sleeps = 0;  // sleeps on the futex (one wait may sleep several times)
    std::int64_t polledNs = 0;
    std::int64_t yieldedNs = 0;
    std::int64_t sleptNs = 0;
  };
  WaitTimes waitTimes() const;
  /// Bytes of unexpected messages buffered now, over every link (tests, diagnostics).
  std::uint64_t unexpectedBytes() const;
  /// Unexpected messages buffered now, over every link (tests, diagnostics).
  std::size_t unexpectedMessages() const;
  /// Peers' memAlloc buffers mapped here now.
  std::size_t mappedBuffers() const {
    std::lock_guard<SpinLock> lock(mutex_);
    return peerBuffers_.size();
  }

 private:
  friend class ShmLink;
  /// Tests stage a peer's abort record halfway written (shm_transport_test.cc).
  friend struct ShmTransportProbe;

  ShmTransport(const Options& options);
  /// What a rank publishes about its segment at set-up (shm_transport.cc).
  struct PeerInfo;
  static Result<PeerInfo> parseInfo(const std::string& text, int rank);
  /// The steps of create(), in order: this rank's segment, its record in the store, every
  /// rank's record (which ranks share this host), the local peers' segments mapped, the
  /// agreement that every rank could, then the links.
  Status setUp(Store& store, const std::string& keyPrefix);
  Status createSegment();
  Result<std::vector<PeerInfo>> readInfos(Store& store, const std::string& keyPrefix,
                                          const std::string& host,
                                          std::vector<std::vector<int>>* hostMasks,
                                          std::vector<std::vector<int>>* machineMasks);
  /// Maps the local peers' segments and probes whether their memory can be read directly;
  /// "" or what went wrong.
  std::string attachPeers(const std::vector<PeerInfo>& infos);
  /// Publishes `problem` ("" when this rank attached every peer) and fails unless every
  /// rank did: each pair of ranks then agrees on whether it talks through shared memory.
  Status agreeAttached(Store& store, const std::string& keyPrefix, const std::string& problem);
  /// The links to the local peers; whether each rank has a core (and two) by the masks of
  /// every rank on this machine (`machineMasks`), the host rules by this host's.
  void makeLinks(const std::vector<std::vector<int>>& hostMasks,
                 const std::vector<std::vector<int>>& machineMasks);
  void logSetUp(const std::vector<int>& cpus) const;
  /// flatExchange's end once every peer's contribution is in (flat.cc).
  Status flatDone(const FlatCall& call, std::uint64_t parity);
  /// The error for rank `r`'s contribution to `call`, which does not fit it: of another
  /// call (kMismatch, its stamp in `stop`) or of another size.
  Status flatRefused(const FlatCall& call, std::uint64_t parity, int r, FlatStop* stop) const;
  /// The thresholds that follow the host (cmaFrom_, directSlow_, exchangeMaxBytes_), from
  /// the options, coreEach_, hostKernelCopyRatio_ and the caches of the CPUs in `hostMasks`
  /// (this host's ranks' affinity masks); logs the host's properties and the rules' verdicts.
  void applyHostRules(const std::vector<std::vector<int>>& hostMasks);
  /// One pass over every link. True when anything moved. Needs mutex_.
  bool progressLocked(DoneList& done);
  /// Records that this rank posted a receive of the collective call of `tag`: the latest
  /// such call is where it has got to (ShmLink::startMessageLocked). Needs mutex_.
  void noteCallLocked(Tag tag) {
    if (!hasCall_ || isEarlierCall(lastCall_, tag)) lastCall_ = tag;
    hasCall_ = true;
  }
  /// Adopts a failure written into this rank's abort record by a peer.
  void checkAbortLocked(DoneList& done);
  /// Peers' flat contributions published since the last look go to the call checker like
  /// the first piece of a message (CallChecker::onArrival): a rank in another call learns of
  /// the mismatch at once, even when it only waits for messages nobody will send it.
  void checkFlatArrivalsLocked(DoneList& done);
  /// Peers that died (pidfd readable) without having left; fails the transport.
  void checkPeersLocked(DoneList& done);
  /// checkPeersLocked() when kPeerCheckNs have passed since the last look.
  void checkPeersIfDueLocked(DoneList& done);
  /// True once `peer`'s process has exited (its pidfd is readable).
  bool peerDead(int peer) const;
  /// The error that names `peer` as dead.
  Status deathOf(int peer) const;
  void failLocked(const Status& status, DoneList& done);
  void finish(DoneList& done);

  /// What a waiter saw just before its last pass over the links: whatever a peer publishes
  /// after that pass looked changes one of these words. Peers bump the doorbell for rare
  /// events (acks, leaving, aborts) and publish slots and move tails for messages and room
  /// (Segment::wakeIfSleeping); other threads' completions move progress_.
  struct Marks {
    std::uint32_t bell = 0;
    std::uint64_t arrived = 0;  // sum of the links' arrivals()
    std::uint64_t tails = 0;    // sum of the outbound tails, read while `sending`
    /// Sends waited for room after the last pass: the tails matter. Read otherwise, a tail
    /// would pull its cache line away from the receiver, whose next store to it (one per
    /// message) would then wait for the line to come back.
    bool sending = false;
    std::uint64_t flat = 0;     // sum of the watched flat slots' seq (flatWatch_)
  };
  /// Reads the words of `marks` (no mutex).
  void mark(Marks& marks) const;
  /// True when a pass could find something that the one after `marks` did not: the spin
  /// and the yields read a few words instead of taking the mutex and scanning every link.
  bool changedSince(const Marks& marks, std::uint32_t seen) const;
  /// mark(), then one pass over every link (takes the mutex). True when anything moved.
  bool markAndPass(Marks& marks, DoneList& done);
  /// Whether a wait for `seen` is over after the pass that filled `marks`: a completion, or
  /// a flat exchange's watched slots moved (flat.cc waits for peers' slots, not completions).
  bool waitEnded(const Marks& marks, std::uint32_t seen) const {
    return progress_.snapshot() != seen || (flatWatch_ >= 0 && marks.flat != flatSeen_);
  }
  /// A wait's budgets (spin, then keep or yield the core) and where its time went
  /// (waitTimes()); shm_progress.cc.
  class WaitClock;
  enum class WakeUp { kEnded, kExpired, kAgain };
  /// The end of a wait whose budgets are spent: a last pass with the sleeping flag set,
  /// then a sleep on the doorbell until a peer rings it, the deadline or the next look for
  /// dead peers. kAgain: look again.
  WakeUp sleepOnDoorbell(Marks& marks, std::uint32_t seen, Deadline deadline, DoneList& done);
  void writeAbortTo(int peer, const Status& status);
  /// The failure a peer wrote into this rank's abort record (which must be complete).
  Status abortRecord() const;

  const int rank_;
  const int size_;
  const Options options_;
  Layout layout_;
  Segment own_;
  std::vector<Segment> peers_;         // indexed by rank; empty for self and remote ranks
  std::vector<int> local_;             // the other ranks on this host
  bool coreEach_ = false;              // every rank of this host has a core (setUp)
  bool twoCoresEach_ = false;          // ... and one more for its worker thread (setUp)
  std::uint64_t cmaFrom_ = 0;          // the rendezvous threshold in force (0: none; setUp)
  bool directSlow_ = false;            // kept although the kernel's copy is slow (learnsPath)
  double hostKernelCopyRatio_ = 0;     // the highest kernelCopyRatio() of this host's ranks
  std::uint64_t exchangeMaxBytes_ = 0;  // as set, or autoExchangeBytes() (setUp)
  std::vector<bool> isLocal_;
  std::vector<int> pids_;
  std::vector<int> pidfds_;            // -1 where pidfd_open is not available
  std::vector<std::unique_ptr<ShmLink>> links_;
  Tag lastCall_ = 0;  // noteCallLocked
  bool hasCall_ = false;
  // Where a reduced rendezvous message is read a piece at a time before the receive reduces
  // it (ShmLink::readCombiningLocked): small enough to stay in cache between the two
  // (autoBounceBytes).
  // Allocated with the transport; used under mutex_.
  std::vector<char> bounce_;
  // Peers' memAlloc buffers mapped here (used under mutex_, from const copy paths).
  mutable PeerBuffers peerBuffers_;
  mutable std::atomic<std::uint64_t> mappedBytes_{0};
  std::atomic<std::uint64_t> writtenBytes_{0};
  // waitTimes(): counted by waitForProgress outside its fast path.
  std::atomic<std::uint64_t> waitsPolled_{0}, waitsYielded_{0}, waitSleeps_{0};
  std::atomic<std::int64_t> waitPolledNs_{0}, waitYieldedNs_{0}, waitSleptNs_{0};
  // Taken by the thread driving calls for each post and pass; other threads only to fail
  // the transport or shut it down (SpinLock: no critical section blocks).
  mutable SpinLock mutex_;
  Status health_;
  // Written under mutex_ (before health_); read without it by health()'s fast path.
  std::atomic<bool> failed_{false};
  bool shutDown_ = false;
  WaitSignal progress_;
  WaitPartner* partner_ = nullptr;
  std::int64_t lastPeerCheckNs_ = 0;
  std::int64_t lastFreedCheckNs_ = 0;
  std::uint64_t passes_ = 0;
  // The parity of the peers' flat slots a flat exchange waits on (watched by mark(), so
  // that a publication ends the wait); -1 outside flat exchanges. Driving thread only.
  int flatWatch_ = -1;
  // The seq of each peer's flat slots (2 per rank) already given to the call checker.
  std::vector<std::uint64_t> flatChecked_;
  // The sum of those slots' seq when the exchange last looked: a wait ends once it differs.
  std::uint64_t flatSeen_ = 0;
};

}  // namespace tutti::shm
