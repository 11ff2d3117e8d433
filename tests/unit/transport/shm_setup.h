#pragma once
// Shared-memory transports connected as threads of this process (the segments, rings,
// doorbells and process_vm_readv are the real ones: a process can map its own memfds and
// read its own memory), for the shm transport's tests.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "transport/shm/shm_transport.h"

namespace tutti::shm {

inline constexpr std::uint64_t kUid = 0x5eed;

struct ShmSetup {
  std::uint64_t cmaBytes = 256 << 10;
  std::uint64_t maxUnexpected = 64u << 20;
  std::uint64_t runAhead = ShmTransport::Options{}.runAheadBytes;
  std::uint64_t runAheadMessages = ShmTransport::Options{}.runAheadMessages;
  bool cmaShare = true;
  bool cmaAuto = false;  // the host's automatic threshold instead of cmaBytes
  std::optional<std::uint64_t> exchangeMaxBytes;  // unset: the transport's automatic limit
  decltype(ShmTransport::Options::copy) copy = &ShmTransport::plainCopy;
  decltype(ShmTransport::Options::copyTwo) copyTwo = &ShmTransport::plainCopyTwo;
  std::uint32_t slotBytes = 4096;  // small slots: messages span many of them, the ring wraps
  std::int64_t pollNs = ShmTransport::Options{}.pollNs;
  /// Which host each rank is on ("" for all: one host). Ranks on a host of their own get no
  /// shared-memory transport (connectAll leaves them null); the hybrid tests give the
  /// others on each host one and reach the rest over TCP.
  std::string (*hostOf)(int rank) = nullptr;
};

/// The options of rank `rank` of `size` for `setup`.
inline ShmTransport::Options shmOptions(const ShmSetup& setup, int rank, int size) {
  ShmTransport::Options o;
  o.rank = rank;
  o.size = size;
  o.commUid = kUid;
  o.cmaBytes = setup.cmaBytes;
  o.cmaBytesWithCores = setup.cmaBytes;  // one threshold, whatever the host
  o.cmaShare = setup.cmaShare;
  o.cmaAuto = setup.cmaAuto;
  o.exchangeMaxBytes = setup.exchangeMaxBytes;
  o.copy = setup.copy;
  o.copyTwo = setup.copyTwo;
  o.slotBytes = setup.slotBytes;
  o.maxUnexpectedBytes = setup.maxUnexpected;
  o.runAheadBytes = setup.runAhead;
  o.runAheadMessages = setup.runAheadMessages;
  o.pollNs = setup.pollNs;
  o.deadline = Deadline::afterSeconds(30);
  if (setup.hostOf != nullptr) {
    o.host = setup.hostOf(rank);
    o.requireAll = false;
  }
  return o;
}

// Two ranks' threads exchanging messages with both offers out before either receive is
// posted (then each message finds its receiver sending too: an exchange). Each thread posts
// its send of its k-th such exchange (k from 1), then calls sent(k), which returns once the
// other thread's send of that exchange is out too; false after 30 s without it.
class BothOffersOut {
 public:
  bool sent(int k) {
    offered_.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (offered_.load() < 2 * k) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
    return true;
  }

 private:
  std::atomic<int> offered_{0};  // sends posted so far, both threads together
};

/// Every rank's transport, made by one thread per rank through one in-memory store. A rank
/// alone on its host (ShmSetup::hostOf) gets none: null.
inline std::vector<std::unique_ptr<ShmTransport>> connectAll(int size, const ShmSetup& setup,
                                                            std::shared_ptr<Store> store = nullptr) {
  if (!store) store = makeMemoryStore();
  std::vector<std::unique_ptr<ShmTransport>> out(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  std::vector<Status> errors(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto t = ShmTransport::create(*store, "t/", shmOptions(setup, r, size));
      if (t.ok()) out[static_cast<std::size_t>(r)] = std::move(t).value();
      else errors[static_cast<std::size_t>(r)] = t.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    const bool alone = setup.hostOf != nullptr && e.code() == ErrorCode::kNotSupported;
    EXPECT_TRUE(e.ok() || alone) << e.toString();
  }
  return out;
}

}  // namespace tutti::shm
