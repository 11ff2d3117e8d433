#include "transport/shm/shm_transport.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/assert.h"
#include "base/cpus.h"
#include "base/host_props.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/shm/shm_link.h"
#include "transport/tag.h"

namespace tutti::shm {
namespace {

// The ring space one segment offers all its peers together, and the bounds on slots per
// ring: enough to pipeline a message through, few enough that 64 ranks fit in memory.
constexpr std::size_t kRingBudgetBytes = 16u << 20;
constexpr std::uint32_t kMinSlots = 2;
constexpr std::uint32_t kMaxSlots = 16;
// The bounce buffer (bounce_): stays in a core's L2 (1.25 MiB here) while it is reduced.
// All-reduce of 64 MiB on 2 ranks, alternating runs: 128 KiB took 0.88-0.96 of the time of
// 256 KiB, 512 KiB 1.02-1.12.
constexpr std::size_t kBounceBytes = 128u << 10;
// How often a waiting rank looks for peers that died.
constexpr std::int64_t kPeerCheckNs = 50'000'000;
// How often a transport in use looks for mappings of peers' buffers that were freed.
constexpr std::int64_t kFreedCheckNs = 1'000'000'000;
// Progress passes between two reads of the clock (a pass without work is ~20 ns).
constexpr std::uint64_t kPassesPerClockRead = 256;

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<std::uint8_t> bytesOf(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::string textOf(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// What a rank publishes about its segment: "<hostKey> <pid> <fd> <address> <ratio> <cpus>".
struct PeerInfo {
  std::string host;
  int pid = 0;
  int fd = -1;
  std::uint64_t address = 0;
  double kernelCopyRatio = 0;  // kernelCopyRatio() (base/host_props.h); 0: it failed
  std::vector<int> cpus;       // its affinity mask ("-": not known, empty)
};

Result<PeerInfo> parseInfo(const std::string& text, int rank) {
  const std::vector<std::string> parts = splitString(text, ' ');
  PeerInfo info;
  if (parts.size() == 6) {
    info.host = parts[0];
    char* end = nullptr;
    info.pid = static_cast<int>(std::strtol(parts[1].c_str(), &end, 10));
    info.fd = static_cast<int>(std::strtol(parts[2].c_str(), &end, 10));
    info.address = std::strtoull(parts[3].c_str(), &end, 10);
    info.kernelCopyRatio = static_cast<double>(std::strtoul(parts[4].c_str(), &end, 10)) / 100;
    const std::optional<std::vector<int>> cpus = parseMaskField(parts[5]);
    if (cpus) info.cpus = *cpus;
    if (info.pid > 0 && info.fd >= 0 && cpus) return info;
  }
  return Status(ErrorCode::kProtocolError,
                strFormat("rank %d published a malformed shared-memory address '%s'", rank,
                          text.c_str()));
}

// The automatic rendezvous threshold where the kernel's copy is not slow: from how much it
// costs, and whether both ends can copy at once (ShmTransport::autoCmaBytes).
std::uint64_t ringsBelow(bool coreEach, bool costly) {
  if (costly) return coreEach ? 256u << 10 : 2u << 20;
  return coreEach ? 16u << 10 : 256u << 10;
}

}  // namespace

ShmTransport::ShmTransport(const Options& options)
    : rank_(options.rank), size_(options.size), options_(options) {}

ShmTransport::~ShmTransport() {
  if (!local_.empty()) {
    const WaitTimes w = waitTimes();
    TUTTI_INFO(kShm, "rank %d waited for its peers %.3f s polling (%llu waits), %.3f s "
               "yielding its core (%llu), %.3f s asleep (%llu sleeps)", rank_,
               static_cast<double>(w.polledNs) * 1e-9, static_cast<unsigned long long>(w.polls),
               static_cast<double>(w.yieldedNs) * 1e-9, static_cast<unsigned long long>(w.yields),
               static_cast<double>(w.sleptNs) * 1e-9, static_cast<unsigned long long>(w.sleeps));
  }
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
}

Result<std::unique_ptr<ShmTransport>> ShmTransport::create(Store& store,
                                                          const std::string& keyPrefix,
                                                          const Options& options) {
  TUTTI_CHECK_ARG(options.size >= 1 && options.rank >= 0 && options.rank < options.size,
                  "rank %d of %d", options.rank, options.size);
  TUTTI_CHECK_ARG(options.slotBytes == 0 || options.slotBytes >= 64, "slot of %u bytes",
                  options.slotBytes);
  std::unique_ptr<ShmTransport> transport(new ShmTransport(options));
  TUTTI_RETURN_IF_ERROR(transport->setUp(store, keyPrefix));
  return transport;
}

Status ShmTransport::setUp(Store& store, const std::string& keyPrefix) {
  const auto n = static_cast<std::size_t>(size_);
  const std::size_t perPeer = kRingBudgetBytes / std::max<std::size_t>(1, n - 1);
  const std::uint32_t slotBytes =
      options_.slotBytes != 0 ? options_.slotBytes : (size_ == 2 ? kTwoRankSlotBytes : kSlotBytes);
  const auto slots = static_cast<std::uint32_t>(
      std::clamp<std::size_t>(perPeer / slotBytes, kMinSlots, kMaxSlots));
  layout_ = Layout::make(size_, slots, slotBytes);
  TUTTI_ASSIGN_OR_RETURN(own_, Segment::create(layout_, options_.commUid, rank_));
  own_.control().writesPieces = options_.cmaShare && options_.cmaBytes > 0 ? 1 : 0;
  const std::string host = options_.host.empty() ? hostKey() : options_.host;
  // The kernel's copy against memcpy, in hundredths: the host's is the highest any of its
  // ranks measured (one rank's measurement can come out low while its neighbours copy at
  // once), and all its ranks agree on it.
  const auto ratio = static_cast<unsigned long>(std::lround(kernelCopyRatio() * 100));
  // The CPUs this rank may run on: its host's ranks decide together whether each has a core.
  const std::vector<int> cpus = allowedCpuList();
  TUTTI_RETURN_IF_ERROR(store.set(
      keyPrefix + "shm/info/" + std::to_string(rank_),
      bytesOf(strFormat("%s %d %d %llu %lu %s", host.c_str(), static_cast<int>(getpid()), own_.fd(),
                        static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(own_.base())),
                        ratio, formatMaskField(cpus).c_str()))));
  // Every rank reads every rank's record, so each pair agrees on whether it is local.
  std::vector<PeerInfo> infos(n);
  int elsewhere = -1;
  isLocal_.assign(n, false);
  std::vector<std::vector<int>> hostMasks;  // of this host's ranks, this one's included
  for (int r = 0; r < size_; ++r) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<std::uint8_t> raw,
                           store.get(keyPrefix + "shm/info/" + std::to_string(r), options_.deadline));
    TUTTI_ASSIGN_OR_RETURN(infos[static_cast<std::size_t>(r)], parseInfo(textOf(raw), r));
    const bool local = infos[static_cast<std::size_t>(r)].host == host;
    if (local) hostMasks.push_back(infos[static_cast<std::size_t>(r)].cpus);
    if (!local && elsewhere < 0) elsewhere = r;
    if (local)
      hostKernelCopyRatio_ =
          std::max(hostKernelCopyRatio_, infos[static_cast<std::size_t>(r)].kernelCopyRatio);
    if (local && r != rank_) {
      isLocal_[static_cast<std::size_t>(r)] = true;
      local_.push_back(r);
    }
  }
  if (elsewhere >= 0 && options_.requireAll)
    return Status(ErrorCode::kNotSupported,
                  strFormat("rank %d is on another host than rank %d (shared memory needs one "
                            "host)", elsewhere, rank_));
  // Map every peer's segment and learn whether their memory can be read directly.
  std::string problem;
  peers_.resize(n);
  pids_.assign(n, 0);
  for (int r = 0; r < size_; ++r) pids_[static_cast<std::size_t>(r)] = infos[static_cast<std::size_t>(r)].pid;
  for (int r : local_) {
    const PeerInfo& info = infos[static_cast<std::size_t>(r)];
    auto segment = Segment::open(layout_, info.pid, info.fd, options_.commUid, r);
    if (!segment.ok()) {
      problem = segment.status().message();
      break;
    }
    peers_[static_cast<std::size_t>(r)] = std::move(segment).value();
    std::uint64_t magic = 0;
    iovec local{&magic, sizeof(magic)};
    iovec remote{reinterpret_cast<void*>(info.address), sizeof(magic)};
    // Whether this rank may read r's memory: with process_vm_readv (heap buffers, from
    // cmaBytes) or through /proc/<pid>/fd (memAlloc buffers, from mappedBytes), which the
    // kernel allows alike. Probed once, not when neither may be used.
    const bool rendezvous = options_.cmaBytes > 0 || options_.mappedBytes > 0;
    const bool readable = rendezvous &&
                          process_vm_readv(info.pid, &local, 1, &remote, 1, 0) ==
                              static_cast<ssize_t>(sizeof(magic)) &&
                          magic == kSegmentMagic;
    own_.cma(r) = readable ? 1 : 0;
    if (!readable && rendezvous)
      TUTTI_INFO(kShm, "rank %d's memory cannot be read with process_vm_readv (%s): messages "
                 "from it are copied through the ring", r, std::strerror(errno));
  }
  TUTTI_RETURN_IF_ERROR(store.set(keyPrefix + "shm/ready/" + std::to_string(rank_),
                                  bytesOf(problem.empty() ? "ok" : "failed: " + problem)));
  // Alone on its host: nothing to share (its peers do not count it as local either).
  if (local_.empty() && size_ > 1)
    return Status(ErrorCode::kNotSupported, "no other rank shares this host");
  for (int r = 0; r < size_; ++r) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<std::uint8_t> raw,
                           store.get(keyPrefix + "shm/ready/" + std::to_string(r), options_.deadline));
    const std::string verdict = textOf(raw);
    if (verdict != "ok")
      return Status(ErrorCode::kSystemError,
                    strFormat("rank %d could not join the shared segments: %s", r, verdict.c_str()));
  }
  // Everyone has mapped this segment: the descriptor is no longer needed, and without it
  // the memory goes with the last mapping, however the processes end.
  own_.closeFd();
  if (options_.cmaBytes > 0 || options_.mappedBytes > 0)
    bounce_.assign(kBounceBytes, 0);  // touched now, not in a call
  // Ranks bound one to a core (mpirun --bind-to core, srun --cpu-bind=cores) each see a
  // mask of one CPU; that is a core each, where counting one's own mask against the ranks
  // would say the host is oversubscribed (2 ranks so bound: 8-byte all-reduce 2.1x the
  // time over shared memory, 5x over TCP, before this was exchanged).
  coreEach_ = eachRankHasCores(hostMasks, 1, quotaCores());
  twoCoresEach_ = eachRankHasCores(hostMasks, 2, quotaCores());
  applyHostRules(hostMasks);
  pidfds_.assign(n, -1);
  flatChecked_.assign(2 * n, 0);  // here, not on the first call that needs it
  links_.resize(n);
  for (int r : local_) {
    pidfds_[static_cast<std::size_t>(r)] =
        static_cast<int>(syscall(SYS_pidfd_open, pids_[static_cast<std::size_t>(r)], 0));
    links_[static_cast<std::size_t>(r)] =
        std::make_unique<ShmLink>(this, r, &own_, &peers_[static_cast<std::size_t>(r)]);
  }
  const std::string coresText = twoCoresEach_ ? std::string("two cores for each rank")
                                : coreEach_   ? std::string("a core for each rank")
                                              : "more ranks than cores (CPUs " + formatCpuList(cpus) + " here)";
  TUTTI_INFO(kShm, "rank %d: shared memory with %zu peers, %u slots of %u bytes per ring, "
             "heap rendezvous from %llu bytes (0: never%s), %s", rank_, local_.size(), slots,
             layout_.slotBytes, static_cast<unsigned long long>(cmaFrom_),
             directSlow_ ? "; only for calls that learn their way" : "",
             coresText.c_str());
  return Status::Ok();
}

Link& ShmTransport::link(int peer) {
  TUTTI_ASSERT(peer >= 0 && peer < size_ && isLocal(peer));
  return *links_[static_cast<std::size_t>(peer)];
}

void ShmTransport::onProgress() {
  progress_.notify();
  own_.ring();
}

void ShmTransport::applyHostRules(const std::vector<std::vector<int>>& hostMasks) {
  std::vector<int> cpus;  // every local rank's, so that they all read the same caches
  for (const std::vector<int>& mask : hostMasks) cpus.insert(cpus.end(), mask.begin(), mask.end());
  const CacheProps caches = cachePropsOf(hostCpuCaches(), cpus);
  const DirectMoves direct = directMoves(options_, coreEach_, hostKernelCopyRatio_);
  cmaFrom_ = direct.from;
  directSlow_ = direct.slow;
  exchangeMaxBytes_ = options_.exchangeMaxBytes.value_or(
      autoExchangeBytes(hostKernelCopyRatio_, caches.l2Bytes));
  const double ratio = hostKernelCopyRatio_;
  const bool costly = kernelCopyCostly(ratio);
  const bool slow = ratio > kSlowKernelCopyRatio;
  const std::uint64_t exchange = autoExchangeBytes(ratio, caches.l2Bytes);
  auto known = [](std::uint64_t b) { return b != 0 ? humanBytes(b) : std::string("not known"); };
  const std::string verdict = slow     ? strFormat("slow, over %g", kSlowKernelCopyRatio)
                              : costly ? strFormat("costly, over %g", kCostlyKernelCopyRatio)
                                       : strFormat("cheap, at most %g", kCostlyKernelCopyRatio);
  TUTTI_INFO(kShm, "rank %d: host: the kernel's copy takes %.2f times memcpy's time (%.2f here): "
             "%s; L2 %s, L3 %s, %s the ranks' CPUs. Rules (docs/host-rules.md): heap messages "
             "by rendezvous %sfrom %s with a core each, %s without; two-way exchanges written "
             "by their senders %s%s; one-host ring segments 1/%llu of a ring", rank_, ratio,
             kernelCopyRatio(), verdict.c_str(),
             known(caches.l2Bytes).c_str(), known(caches.l3Bytes).c_str(),
             caches.l3Shared ? "one for all" : "not one for all",
             slow ? "only for calls that learn their way, " : "",
             humanBytes(ringsBelow(true, costly)).c_str(),
             humanBytes(ringsBelow(false, costly)).c_str(),
             exchange == UINT64_MAX ? "at any size" : "up to ",
             exchange == UINT64_MAX ? "" : humanBytes(exchange).c_str(),
             static_cast<unsigned long long>(oneHostRingShare(ratio)));
}

ShmTransport::DirectMoves ShmTransport::directMoves(const Options& o, bool coreEach,
                                                    double hostRatio) {
  if (o.cmaBytes == 0) return DirectMoves{0, false};
  if (!o.cmaAuto)
    return DirectMoves{coreEach ? std::max<std::uint64_t>(1, o.cmaBytesWithCores) : o.cmaBytes,
                       false};
  // A slow kernel's copy turns rendezvous off for heap buffers, unless the calls learn
  // their way: in some minutes it wins even so (docs/host-rules.md).
  if (hostRatio > kSlowKernelCopyRatio && o.learnsPath)
    return DirectMoves{ringsBelow(coreEach, true), true};  // a slow kernel's copy is costly
  return DirectMoves{autoCmaBytes(coreEach, hostRatio), false};
}

std::uint64_t ShmTransport::autoCmaBytes(bool coreEach, double hostRatio) {
  if (hostRatio > kSlowKernelCopyRatio) return 0;
  return ringsBelow(coreEach, kernelCopyCostly(hostRatio));
}

std::uint64_t ShmTransport::autoExchangeBytes(double hostRatio, std::uint64_t l2Bytes) {
  if (kernelCopyCostly(hostRatio)) return UINT64_MAX;
  return l2Bytes != 0 ? l2Bytes / 4 : 512u << 10;
}

bool ShmTransport::rendezvousTo(int peer) const {
  return peers_[static_cast<std::size_t>(peer)].cma(rank_) != 0;
}

bool ShmTransport::helpsWrite(int peer) const {
  return options_.cmaShare && options_.cmaBytes > 0 && own_.cma(peer) != 0;
}

bool ShmTransport::leavesExchangeToSender(int peer, std::uint64_t bytes) const {
  const Segment& theirs = peers_[static_cast<std::size_t>(peer)];
  return coreEach_ && bytes <= exchangeMaxBytes_ && theirs.control().writesPieces != 0 &&
         theirs.cma(rank_) != 0;
}

Status ShmTransport::health() const {
  // Asked on every turn of the executor's loop: healthy is answered without the mutex.
  // failed_ is set (under the mutex) before health_, so a reader that sees it unset has
  // nothing to read, and one that sees it set reads health_ under the mutex.
  if (!failed_.load(std::memory_order_acquire) &&
      own_.control().abortState.load(std::memory_order_acquire) != 2)
    return Status();
  std::lock_guard<SpinLock> lock(mutex_);
  // A peer's abort counts before this rank's next progress pass adopts it.
  if (!failed_ && own_.control().abortState.load(std::memory_order_acquire) == 2)
    return abortRecord();
  return health_;
}

Status ShmTransport::abortRecord() const {
  const Control& c = own_.control();
  const int blamed = c.abortPeer >= 0 && c.abortPeer < size_ ? c.abortPeer : Status::kNoRank;
  return Status(static_cast<ErrorCode>(c.abortCode),
                std::string(c.abortText, strnlen(c.abortText, kAbortTextBytes)), blamed);
}

void ShmTransport::finish(DoneList& done) {
  if (!done.empty()) progress_.notify();
  done.clear();
}

std::uint64_t ShmTransport::unexpectedBytes() const {
  std::lock_guard<SpinLock> lock(mutex_);
  std::uint64_t bytes = 0;
  for (const auto& link : links_)
    if (link != nullptr) bytes += link->unexpectedBytesLocked();
  return bytes;
}

std::size_t ShmTransport::unexpectedMessages() const {
  std::lock_guard<SpinLock> lock(mutex_);
  std::size_t messages = 0;
  for (const auto& link : links_)
    if (link != nullptr) messages += link->unexpectedMessagesLocked();
  return messages;
}

bool ShmTransport::progressLocked(DoneList& done) {
  checkAbortLocked(done);
  if (failed_) return false;
  bool moved = false;
  for (int r : local_) {
    if (failed_) break;
    ShmLink& l = *links_[static_cast<std::size_t>(r)];
    moved = l.drainLocked(done) || moved;
    moved = l.startDeferredLocked(done) || moved;
    moved = l.pumpSendsLocked(done) || moved;
    moved = l.checkAcksLocked(done) || moved;
    moved = l.checkHelpedLocked(done) || moved;
    // A peer that left sends nothing more: whatever this rank still expects of it is lost.
    // Not while a peer is writing an abort record here (state 1): the leaver may have left
    // because of it, and the record, once written, names the cause (a writer that dies
    // halfway is found dead by checkPeersLocked).
    if (!failed_ && peers_[static_cast<std::size_t>(r)].base() != nullptr &&
        own_.left(r).load(std::memory_order_acquire) != 0 && l.needsPeerLocked() &&
        own_.control().abortState.load(std::memory_order_acquire) != 1) {
      // Drain once more: its last messages were published before it left.
      moved = l.drainLocked(done) || moved;
      if (l.needsPeerLocked())
        failLocked(Status(ErrorCode::kPeerFailure,
                          strFormat("rank %d left the communicator (destroyed it) while rank %d "
                                    "still needed it", r, rank_),
                          r),
                   done);
    }
  }
  if (!failed_) checkFlatArrivalsLocked(done);
  // Looking for dead peers costs a system call; the clock is read every few hundred passes.
  if (++passes_ % kPassesPerClockRead == 0) checkPeersIfDueLocked(done);
  return moved;
}

void ShmTransport::checkPeersIfDueLocked(DoneList& done) {
  const std::int64_t now = nowNs();
  if (now - lastPeerCheckNs_ < kPeerCheckNs) return;
  lastPeerCheckNs_ = now;
  checkPeersLocked(done);
  // Peers' buffers they freed since: their memory goes once nobody maps it.
  if (peerBuffers_.size() > 0 && now - lastFreedCheckNs_ >= kFreedCheckNs) {
    lastFreedCheckNs_ = now;
    peerBuffers_.dropFreed();
  }
}

void ShmTransport::checkAbortLocked(DoneList& done) {
  Control& c = own_.control();
  if (failed_ || c.abortState.load(std::memory_order_acquire) != 2) return;
  TUTTI_INFO(kShm, "rank %d aborted the communicator", c.abortFrom);
  // failLocked adopts the record: the root cause as the first rank to see it worded it.
  failLocked(Status(ErrorCode::kAborted, "aborted by a peer"), done);
}

void ShmTransport::checkFlatArrivalsLocked(DoneList& done) {
  CallChecker* checker = callChecker();
  if (checker == nullptr) return;
  for (int r : local_) {
    for (std::uint64_t parity = 0; parity < 2; ++parity) {
      const FlatSlot& slot = peers_[static_cast<std::size_t>(r)].flat(parity);
      std::uint64_t& checked = flatChecked_[2 * static_cast<std::size_t>(r) + parity];
      const std::uint64_t seq = slot.seq.load(std::memory_order_acquire);
      if (seq == 0 || seq == checked) continue;
      const CallStamp stamp = slot.stamp();
      // The owner may be rewriting the slot for a later call (it zeroes seq first): then
      // the stamp read may be the later call's, and the slot is looked at on a later pass.
      if (slot.seq.load(std::memory_order_relaxed) != seq) continue;  // stamp() acquires
      checked = seq;
      Status conflict = checker->onArrival(r, collectiveTagBase(0, seq - 1), stamp);
      if (!conflict.ok()) {
        failLocked(conflict, done);
        return;
      }
    }
  }
}

bool ShmTransport::peerDead(int peer) const {
  const int pidfd = pidfds_[static_cast<std::size_t>(peer)];
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;  // readable once the process has exited
  }
  return kill(pids_[static_cast<std::size_t>(peer)], 0) != 0 && errno == ESRCH;
}

Status ShmTransport::deathOf(int peer) const {
  return Status(ErrorCode::kPeerFailure,
                strFormat("rank %d (pid %d) died", peer, pids_[static_cast<std::size_t>(peer)]),
                peer);
}

void ShmTransport::checkPeersLocked(DoneList& done) {
  for (int r : local_) {
    if (failed_ || own_.left(r).load(std::memory_order_acquire) != 0) continue;
    // It may have left properly just now: its flag is set before it exits.
    if (peerDead(r) && own_.left(r).load(std::memory_order_acquire) == 0)
      failLocked(deathOf(r), done);
  }
}

void ShmTransport::writeAbortTo(int peer, const Status& status) {
  const Segment& segment = peers_[static_cast<std::size_t>(peer)];
  if (segment.base() == nullptr) return;
  Control& c = segment.control();
  std::uint32_t expected = 0;
  if (!c.abortState.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  c.abortCode = static_cast<std::int32_t>(status.code());
  c.abortPeer = status.peerRank();
  c.abortFrom = rank_;
  const std::string& text = status.message();
  const std::size_t len = std::min(text.size(), kAbortTextBytes - 1);
  std::memcpy(c.abortText, text.data(), len);
  c.abortText[len] = '\0';
  c.abortState.store(2, std::memory_order_release);
  segment.ring();
}

void ShmTransport::failLocked(const Status& status, DoneList& done) {
  if (failed_) return;
  failed_.store(true, std::memory_order_release);
  health_ = status;
  // A peer's abort that arrived first is the root cause; this failure may be its symptom
  // (a read from a rank that already left because of it).
  if (own_.control().abortState.load(std::memory_order_acquire) == 2) health_ = abortRecord();
  TUTTI_WARN(kShm, "rank %d: shared-memory transport failed: %s", rank_, health_.toString().c_str());
  for (int r : local_) {
    writeAbortTo(r, health_);
    links_[static_cast<std::size_t>(r)]->failAllLocked(health_, done);
  }
  progress_.notify();  // waiters re-check health even when no request was pending
}

void ShmTransport::fail(const Status& status) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    failLocked(status, done);
  }
  finish(done);
}

void ShmTransport::mark(Marks& marks) const {
  // Sequentially consistent: ordered after the sleeping flag's store before a sleep.
  marks.bell = own_.control().doorbell.load(std::memory_order_seq_cst);
  marks.arrived = 0;
  marks.tails = 0;
  marks.flat = 0;
  for (int r : local_) {
    const ShmLink& l = *links_[static_cast<std::size_t>(r)];
    marks.arrived += l.arrivals();
    if (marks.sending) marks.tails += l.outTail();
    if (flatWatch_ >= 0)
      marks.flat += peers_[static_cast<std::size_t>(r)].flat(static_cast<std::uint64_t>(flatWatch_))
                        .seq.load(std::memory_order_seq_cst);
  }
}

bool ShmTransport::changedSince(const Marks& marks, std::uint32_t seen) const {
  if (own_.control().doorbell.load(std::memory_order_acquire) != marks.bell ||
      progress_.snapshot() != seen)
    return true;
  Marks now;
  now.sending = marks.sending;
  mark(now);
  return now.arrived != marks.arrived || (marks.sending && now.tails != marks.tails) ||
         now.flat != marks.flat;
}

bool ShmTransport::markAndPass(Marks& marks, DoneList& done) {
  // The tails are read only when the last pass left sends waiting for room. A send that
  // starts waiting in this pass makes the next changedSince() differ (no tails in these
  // marks) and the pass after it reads them.
  mark(marks);
  bool moved;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    moved = progressLocked(done);
    marks.sending = false;
    for (int r : local_)
      marks.sending = marks.sending || links_[static_cast<std::size_t>(r)]->sendsPendingLocked();
  }
  finish(done);
  return moved;
}

ShmTransport::WaitTimes ShmTransport::waitTimes() const {
  WaitTimes w;
  w.polls = waitsPolled_.load(std::memory_order_relaxed);
  w.yields = waitsYielded_.load(std::memory_order_relaxed);
  w.sleeps = waitSleeps_.load(std::memory_order_relaxed);
  w.polledNs = waitPolledNs_.load(std::memory_order_relaxed);
  w.yieldedNs = waitYieldedNs_.load(std::memory_order_relaxed);
  w.sleptNs = waitSleptNs_.load(std::memory_order_relaxed);
  return w;
}

bool ShmTransport::waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) {
  // After the spin the rank keeps its core for options_.pollNs before it sleeps: where every
  // rank of the host has a core the window simply extends the spin; else it yields, since
  // the rank this one waits for is often runnable on this very core, and yielding hands it
  // the core at once, where a futex sleep costs two context switches and a wake-up. A rank
  // that polls is not preempted by other work when its message lands, and a vCPU that keeps
  // running is not a halted one that the hypervisor must wake. Bounded, so an idle rank
  // still ends up asleep (when nothing else is runnable, sched_yield returns at once).
  const std::int64_t spinBudget = std::max<std::int64_t>(spinNs, 0) + (coreEach_ ? options_.pollNs : 0);
  const std::int64_t yieldBudget = coreEach_ ? 0 : options_.pollNs;
  // The clock is first read once the wait has lasted a while (64 turns of the spin, or the
  // first yield): most waits for a small message end before that, and a read costs 20-100 ns
  // here. The budgets count from that first read.
  std::int64_t spinUntil = 0, yieldUntil = 0;
  bool clockStarted = false;
  // What the wait has done since the clock started, for waitTimes(): polling, then
  // yielding, from phaseAt on. A wait that ends before the clock starts counts nothing.
  enum class Phase { kNone, kPoll, kYield } phase = Phase::kNone;
  std::int64_t phaseAt = 0;
  auto closePhase = [&](std::int64_t now) {
    if (phase == Phase::kPoll) waitPolledNs_.fetch_add(now - phaseAt, std::memory_order_relaxed);
    if (phase == Phase::kYield) waitYieldedNs_.fetch_add(now - phaseAt, std::memory_order_relaxed);
    phase = Phase::kNone;
  };
  auto enterPhase = [&](Phase next, std::int64_t now) {
    if (phase == next) return;
    closePhase(now);
    phase = next;
    phaseAt = now;
    if (next == Phase::kPoll) waitsPolled_.fetch_add(1, std::memory_order_relaxed);
    if (next == Phase::kYield) waitsYielded_.fetch_add(1, std::memory_order_relaxed);
  };
  auto startClock = [&] {
    if (clockStarted) return;
    clockStarted = true;
    const std::int64_t now = nowNs();
    spinUntil = now + spinBudget;
    yieldUntil = spinUntil + yieldBudget;
    if (spinBudget > 0) enterPhase(Phase::kPoll, now);
  };
  auto endPhase = [&] {
    if (phase != Phase::kNone) closePhase(nowNs());
  };
  std::uint64_t spins = 0;
  std::uint64_t yields = 0;
  Control& c = own_.control();
  DoneList done;
  Marks marks;
  auto pass = [&] { return markAndPass(marks, done); };
  auto changed = [&] { return changedSince(marks, seen); };
  // A flat exchange waits for peers' slots rather than for completions (flat.cc).
  auto ended = [&] {
    return progress_.snapshot() != seen || (flatWatch_ >= 0 && marks.flat != flatSeen_);
  };
  bool look = true;  // a pass is due
  while (true) {
    if (look) {
      const bool moved = pass();
      if (ended()) {
        endPhase();
        return true;
      }
      if (moved) {
        // Bytes are flowing (a long message streams through the ring): the budgets count
        // time with nothing to do, so they start again. Sleeping now would cost the peer a
        // wake-up per batch of slots and this rank a scheduler round trip.
        endPhase();
        clockStarted = false;
        spins = 0;
        yields = 0;
        continue;
      }
    }
    // Every 64th turn of the spin reads the clock, passes (it finds dead peers) and looks at
    // the deadline (the sleep below reports it).
    if (spinBudget > 0 && ++spins % 64 == 0) startClock();
    if (spinBudget > 0 && (spins % 64 != 0 || nowNs() < spinUntil)) {
      cpuRelax();
      if (spins % 64 == 0) {
        look = true;
        if (deadline.expired()) spinUntil = yieldUntil = 0;
      } else {
        look = changed();
      }
      continue;
    }
    startClock();
    if (yieldBudget > 0 && nowNs() < yieldUntil) {
      if (phase != Phase::kYield) enterPhase(Phase::kYield, nowNs());
      sched_yield();
      if (++yields % 64 == 0) {
        if (deadline.expired()) yieldUntil = 0;
        look = true;
      } else {
        look = changed();
      }
      continue;
    }
    look = true;
    endPhase();
    // Sleep on the doorbell. A peer publishes, then rings; reading the bell before the
    // last look means a ring after that look changes it and the wait returns at once.
    c.sleeping.store(1, std::memory_order_seq_cst);
    const bool movedLate = pass();
    if (movedLate || ended()) {
      c.sleeping.store(0, std::memory_order_relaxed);
      if (ended()) return true;
      continue;
    }
    if (deadline.expired()) {
      c.sleeping.store(0, std::memory_order_relaxed);
      return false;
    }
    const std::int64_t remaining =
        deadline.isNever() ? kPeerCheckNs
                           : std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.remaining()).count();
    waitSleeps_.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t asleepAt = nowNs();
    sharedFutexWait(&c.doorbell, marks.bell, std::clamp<std::int64_t>(remaining, 0, kPeerCheckNs));
    waitSleptNs_.fetch_add(nowNs() - asleepAt, std::memory_order_relaxed);
    c.sleeping.store(0, std::memory_order_relaxed);
    {
      std::lock_guard<SpinLock> lock(mutex_);
      checkPeersIfDueLocked(done);
    }
    finish(done);
  }
}

void ShmTransport::readStrays(std::uint64_t seq) {
  const Tag call = collectiveTagBase(0, seq);
  for (int r : local_) {
    if (!links_[static_cast<std::size_t>(r)]->holdsEarlierCall(call)) continue;
    DoneList done;
    {
      std::lock_guard<SpinLock> lock(mutex_);
      progressLocked(done);
    }
    finish(done);
    return;
  }
}

void ShmTransport::shutdown(Deadline deadline) {
  {
    std::lock_guard<SpinLock> lock(mutex_);
    if (shutDown_) return;
  }
  // Sends still queued (a peer has not made room yet) are flushed, within the deadline.
  while (true) {
    const std::uint32_t seen = progress_.snapshot();
    {
      std::lock_guard<SpinLock> lock(mutex_);
      bool pending = false;
      for (const auto& l : links_) pending = pending || (l && l->sendsPendingLocked());
      if (!pending || failed_ || deadline.expired()) break;
    }
    waitForProgress(seen, deadline, 0);
  }
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    shutDown_ = true;
    // A failed communicator says why it leaves. A peer's abort that this rank only read
    // (health() reports it before a progress pass adopts it, and a call refused on it
    // never made one) is adopted now, which passes it on to every peer: the peer that
    // wrote it may not have reached them yet, and a peer that saw this rank leave first
    // would blame it instead of the culprit.
    checkAbortLocked(done);
    for (int r : local_) {
      const Segment& peer = peers_[static_cast<std::size_t>(r)];
      peer.left(rank_).store(1, std::memory_order_release);
      peer.ring();
    }
  }
  finish(done);
}

}  // namespace tutti::shm
