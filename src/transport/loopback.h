#pragma once
// LoopbackLink: the link from a rank to itself (a point-to-point send to self, as NCCL and
// MPI allow). Every transport has one (Transport::linkTo), so none needs code of its own.
//
// A send whose receive is posted is copied straight into it and both complete. A send that
// comes first is copied into a buffer of the link's and completes at once (MPI's buffered
// mode, whatever its size), so that a blocking send to self followed by its receive works
// and no order of the pair can wait on itself; the receive then copies it out. Matching is
// the other links': the oldest message with the receive's tag, of exactly its length (else
// both fail with kMismatch naming the sizes). Everything happens inside the posting calls,
// on the thread that posts; completion notifies the transport's progress signal.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/ring_queue.h"
#include "base/wait.h"
#include "transport/link.h"
#include "transport/spare_pool.h"

namespace tutti {

class LoopbackLink final : public Link {
 public:
  /// `rank`: this rank; `progress`: the transport's progress signal, which must outlive it.
  LoopbackLink(int rank, WaitSignal* progress);
  ~LoopbackLink() override;

  int peer() const override { return rank_; }
  void postSend(TransferRequest* request, Tag tag, const void* data, std::size_t bytes) override;
  void postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) override;
  void cancel(TransferRequest* request) override;

  /// Messages sent and not yet received (tests, diagnostics).
  std::size_t bufferedMessages();

 private:
  struct Buffered {
    Tag tag = 0;
    std::vector<char> data;  // its first `bytes` bytes (SparePool keeps it larger)
    std::size_t bytes = 0;
  };

  /// The error of a receive of `want` bytes matched with a message of `sent` bytes.
  Status sizeMismatch(Tag tag, std::size_t sent, std::size_t want) const;
  /// Marks `request` done with `status` (the caller notifies once unlocked).
  static void complete(TransferRequest* request, Status status);

  const int rank_;
  WaitSignal* const progress_;
  std::mutex mutex_;
  RingQueue<TransferRequest*> posted_;  // receives waiting for their message
  RingQueue<std::unique_ptr<Buffered>> buffered_;  // messages waiting for their receive
  SparePool<Buffered> spare_;
};

}  // namespace tutti
