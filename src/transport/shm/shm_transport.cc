// The shared-memory transport's set-up: the ring layout, this rank's segment and what it
// publishes about it, the peers' segments attached (and whether their memory can be read
// directly), the host's rules (who has a core, the rendezvous thresholds), the links.
// Progress and waiting are shm_progress.cc's, failures shm_failure.cc's, flat exchanges
// flat.cc's.

#include "transport/shm/shm_transport.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/assert.h"
#include "base/cpus.h"
#include "base/host_props.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/bounded_store.h"
#include "topology/host_identity.h"
#include "transport/shm/shm_link.h"
#include "transport/tag.h"

namespace tutti::shm {
namespace {

// The ring space one segment offers all its peers together, and the bounds on slots per
// ring: enough to pipeline a message through, few enough that 64 ranks fit in memory.
constexpr std::size_t kRingBudgetBytes = 16u << 20;
constexpr std::uint32_t kMinSlots = 2;
constexpr std::uint32_t kMaxSlots = 16;

std::vector<std::uint8_t> bytesOf(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::string textOf(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// The automatic rendezvous threshold where the kernel's copy is not slow: from how much it
// costs, and whether both ends can copy at once (ShmTransport::autoCmaBytes).
std::uint64_t ringsBelow(bool coreEach, bool costly) {
  if (costly) return coreEach ? 256u << 10 : 2u << 20;
  return coreEach ? 16u << 10 : 256u << 10;
}

}  // namespace

// What a rank publishes about its segment: "<host identity> <pid> <fd> <address> <ratio> <cpus>".
struct ShmTransport::PeerInfo {
  std::string host;
  std::string machine;  // topo::machineIdentity(): whose CPUs it shares
  int pid = 0;
  int fd = -1;
  std::uint64_t address = 0;
  double kernelCopyRatio = 0;  // kernelCopyRatio() (base/host_props.h); 0: it failed
  std::vector<int> cpus;       // its affinity mask ("-": not known, empty)
};

Result<ShmTransport::PeerInfo> ShmTransport::parseInfo(const std::string& text, int rank) {
  // The host first (TUTTI_SHM_HOST is any text, spaces included), then six fields.
  constexpr std::size_t kFields = 6;
  std::vector<std::string> parts = splitString(text, ' ');
  PeerInfo info;
  if (parts.size() > kFields) {
    const std::size_t hostWords = parts.size() - kFields;
    for (std::size_t i = 0; i < hostWords; ++i) info.host += (i > 0 ? " " : "") + parts[i];
    parts.erase(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(hostWords - 1));
    info.machine = parts[6];
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
  TUTTI_RETURN_IF_ERROR(createSegment());
  const std::string host = options_.host.empty() ? topo::hostIdentity() : options_.host;
  // The kernel's copy against memcpy, in hundredths: the host's is the highest any of its
  // ranks measured (one rank's measurement can come out low while its neighbours copy at
  // once), and all its ranks agree on it.
  const auto ratio = static_cast<unsigned long>(std::lround(kernelCopyRatio() * 100));
  // The CPUs this rank may run on: the ranks of its machine decide together whether each has
  // a core (those of other network namespaces or TUTTI_SHM_HOSTs on it included).
  const std::vector<int> cpus = allowedCpuList();
  TUTTI_RETURN_IF_ERROR(detail::setBefore(
      store, keyPrefix + "shm/info/" + std::to_string(rank_),
      bytesOf(strFormat("%s %d %d %llu %lu %s %s", host.c_str(), static_cast<int>(getpid()),
                        own_.fd(),
                        static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(own_.base())),
                        ratio, formatMaskField(cpus).c_str(), topo::machineIdentity().c_str())),
      options_.deadline));
  std::vector<std::vector<int>> hostMasks;     // of this host's ranks, this one's included
  std::vector<std::vector<int>> machineMasks;  // of this machine's, whatever their host
  TUTTI_ASSIGN_OR_RETURN(const std::vector<PeerInfo> infos,
                         readInfos(store, keyPrefix, host, &hostMasks, &machineMasks));
  TUTTI_RETURN_IF_ERROR(agreeAttached(store, keyPrefix, attachPeers(infos)));
  makeLinks(hostMasks, machineMasks);
  // The looks for dead peers and for peers' freed buffers run every so often during calls,
  // the first at a moment timing decides: made once here, their code is faulted in outside
  // any call (issue 4).
  {
    DoneList done;  // no request yet: a dead peer fails the transport and nothing else
    std::lock_guard<SpinLock> lock(mutex_);
    checkPeersIfDueLocked(done);
    peerBuffers_.dropFreed();
  }
  logSetUp(cpus);
  return Status::Ok();
}

Status ShmTransport::createSegment() {
  const auto n = static_cast<std::size_t>(size_);
  const std::size_t perPeer = kRingBudgetBytes / std::max<std::size_t>(1, n - 1);
  const std::uint32_t slotBytes =
      options_.slotBytes != 0 ? options_.slotBytes : (size_ == 2 ? kTwoRankSlotBytes : kSlotBytes);
  const auto slots = static_cast<std::uint32_t>(
      std::clamp<std::size_t>(perPeer / slotBytes, kMinSlots, kMaxSlots));
  layout_ = Layout::make(size_, slots, slotBytes);
  TUTTI_ASSIGN_OR_RETURN(own_, Segment::create(layout_, options_.commUid, rank_));
  own_.control().writesPieces = options_.cmaShare && options_.cmaBytes > 0 ? 1 : 0;
  return Status::Ok();
}

Result<std::vector<ShmTransport::PeerInfo>> ShmTransport::readInfos(
    Store& store, const std::string& keyPrefix, const std::string& host,
    std::vector<std::vector<int>>* hostMasks, std::vector<std::vector<int>>* machineMasks) {
  const std::string machine = topo::machineIdentity();
  // Every rank reads every rank's record, so each pair agrees on whether it is local.
  std::vector<PeerInfo> infos(static_cast<std::size_t>(size_));
  int elsewhere = -1;
  isLocal_.assign(infos.size(), false);
  pids_.assign(infos.size(), 0);
  for (int r = 0; r < size_; ++r) {
    PeerInfo& info = infos[static_cast<std::size_t>(r)];
    auto raw = store.get(keyPrefix + "shm/info/" + std::to_string(r), options_.deadline);
    if (!raw.ok())
      return raw.status().withContext(strFormat("waiting for rank %d to join (did it start?)", r));
    TUTTI_ASSIGN_OR_RETURN(info, parseInfo(textOf(*raw), r));
    pids_[static_cast<std::size_t>(r)] = info.pid;
    if (info.machine == machine) machineMasks->push_back(info.cpus);
    const bool local = info.host == host;
    if (!local && elsewhere < 0) elsewhere = r;
    if (!local) continue;
    hostMasks->push_back(info.cpus);
    hostKernelCopyRatio_ = std::max(hostKernelCopyRatio_, info.kernelCopyRatio);
    if (r != rank_) {
      isLocal_[static_cast<std::size_t>(r)] = true;
      local_.push_back(r);
    }
  }
  if (elsewhere >= 0 && options_.requireAll)
    return Status(ErrorCode::kNotSupported,
                  strFormat("rank %d is on another host than rank %d (shared memory needs one "
                            "host)", elsewhere, rank_));
  return infos;
}

std::string ShmTransport::attachPeers(const std::vector<PeerInfo>& infos) {
  peers_.resize(infos.size());
  for (int r : local_) {
    const PeerInfo& info = infos[static_cast<std::size_t>(r)];
    auto segment = Segment::open(layout_, info.pid, info.fd, options_.commUid, r);
    if (!segment.ok()) return segment.status().message();
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
  return std::string();
}

Status ShmTransport::agreeAttached(Store& store, const std::string& keyPrefix,
                                   const std::string& problem) {
  TUTTI_RETURN_IF_ERROR(detail::setBefore(store, keyPrefix + "shm/ready/" + std::to_string(rank_),
                                          bytesOf(problem.empty() ? "ok" : "failed: " + problem),
                                          options_.deadline));
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
  return Status::Ok();
}

void ShmTransport::makeLinks(const std::vector<std::vector<int>>& hostMasks,
                             const std::vector<std::vector<int>>& machineMasks) {
  const auto n = static_cast<std::size_t>(size_);
  // Everyone has mapped this segment: the descriptor is no longer needed, and without it
  // the memory goes with the last mapping, however the processes end.
  own_.closeFd();
  // Ranks bound one to a core (mpirun --bind-to core, srun --cpu-bind=cores) each see a
  // mask of one CPU; that is a core each, where counting one's own mask against the ranks
  // would say the host is oversubscribed (2 ranks so bound: 8-byte all-reduce 2.1x the
  // time over shared memory, 5x over TCP, before this was exchanged). The count is the
  // machine's: two pretend hosts of 2 ranks each on 2 CPUs, each thinking it had a core
  // per rank, spun against each other (8-byte all-reduce 4.3 ms against 0.06 bound apart).
  coreEach_ = eachRankHasCores(machineMasks, 1, quotaCores());
  twoCoresEach_ = eachRankHasCores(machineMasks, 2, quotaCores());
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
}

void ShmTransport::logSetUp(const std::vector<int>& cpus) const {
  const std::string coresText = twoCoresEach_ ? std::string("two cores for each rank")
                                : coreEach_   ? std::string("a core for each rank")
                                              : "more ranks than cores (CPUs " + formatCpuList(cpus) + " here)";
  TUTTI_INFO(kShm, "rank %d: shared memory with %zu peers, %u slots of %u bytes per ring, "
             "heap rendezvous from %llu bytes (0: never%s), %s", rank_, local_.size(),
             layout_.slots, layout_.slotBytes, static_cast<unsigned long long>(cmaFrom_),
             directSlow_ ? "; only for calls that learn their way" : "",
             coresText.c_str());
}

Link& ShmTransport::link(int peer) {
  TUTTI_ASSERT(peer >= 0 && peer < size_ && isLocal(peer));
  return *links_[static_cast<std::size_t>(peer)];
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
  if (options_.cmaBytes > 0 || options_.mappedBytes > 0)
    bounce_.assign(autoBounceBytes(caches.l2Bytes), 0);  // touched now, not in a call
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
             "by their senders %s%s; one-host ring segments 1/%llu of a ring; rendezvous "
             "reductions through %s at a time", rank_, ratio,
             kernelCopyRatio(), verdict.c_str(),
             known(caches.l2Bytes).c_str(), known(caches.l3Bytes).c_str(),
             caches.l3Shared ? "one for all" : "not one for all",
             slow ? "only for calls that learn their way, " : "",
             humanBytes(ringsBelow(true, costly)).c_str(),
             humanBytes(ringsBelow(false, costly)).c_str(),
             exchange == UINT64_MAX ? "at any size" : "up to ",
             exchange == UINT64_MAX ? "" : humanBytes(exchange).c_str(),
             static_cast<unsigned long long>(oneHostRingShare(ratio)),
             humanBytes(autoBounceBytes(caches.l2Bytes)).c_str());
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

std::size_t ShmTransport::autoBounceBytes(std::uint64_t l2Bytes) {
  if (l2Bytes == 0) return kBounceBytesUnknownL2;
  const std::uint64_t eighth = std::bit_floor(l2Bytes / 8);
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(eighth, 32u << 10, 1u << 20));
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

}  // namespace tutti::shm
