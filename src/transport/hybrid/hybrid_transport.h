#pragma once
// HybridTransport: shared memory to the ranks on this host, TCP to the others (DESIGN.md 5).
//
// Both transports stay whole: the TCP mesh reaches every rank (so a death anywhere still
// breaks a socket everywhere), the shared-memory one only this host's ranks; link(peer)
// picks. Waiting happens on the shared-memory side, which has no thread of its own: the
// waiter polls its rings and, where a call drives the transport (setDriving), the TCP
// sockets too (WaitPartner), so that a message from another host is read by the thread
// that waits for it, as over TCP alone, rather than handed over by a second thread (a
// wake-up and a context switch per message, on a core the ranks share). Between calls,
// and while the waiter sleeps on its doorbell, the TCP transport's loop thread moves TCP
// bytes by itself and rings that doorbell whenever it completes something or fails
// (ProgressHook). One progress signal, the shared-memory transport's, is what callers
// watch.
//
// Failure: the first failure of either side is the transport's health; fail() fails both,
// so local peers learn through their abort records and remote ones through ABORT frames. A
// failure the TCP side finds on its own (a remote rank died) is passed to the shared side
// at once by the TCP loop thread, so local peers learn the root cause, not this rank's
// later departure.

#include <atomic>
#include <memory>

#include "transport/link.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti {

class HybridTransport final : public Transport, public DirectCopy {
 public:
  /// Takes both transports, built for the same communicator (same rank and size).
  HybridTransport(std::unique_ptr<shm::ShmTransport> shm, std::unique_ptr<tcp::TcpTransport> tcp);
  ~HybridTransport() override;

  int rank() const override { return shm_->rank(); }
  int size() const override { return shm_->size(); }
  /// The shared-memory side's direct moves (without streaming: no flat exchange to learn
  /// by) and its mapped buffers; no flat exchange, which needs every rank on one host.
  TransportExtension* extension(std::string_view name) override;
  std::uint64_t directFrom() const override { return shm_->directFrom(); }
  bool directSlow() const override { return shm_->directSlow(); }
  std::uint64_t streamedFrom() const override { return 0; }
  Link& link(int peer) override;
  WaitSignal& progressSignal() override { return shm_->progressSignal(); }
  /// The shared-memory side needs no driving; the TCP side's loop thread stands aside
  /// while a call drives, its waiter polling the sockets.
  void setDriving(bool driving) override { tcp_->setDriving(driving); }
  bool waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) override;
  void interruptWait() override { shm_->interruptWait(); }  // its waits are the shm side's
  Status health() const override;
  void setCallChecker(CallChecker* checker) override {
    Transport::setCallChecker(checker);
    shm_->setCallChecker(checker);
    tcp_->setCallChecker(checker);
  }
  void fail(const Status& status) override;
  void shutdown(Deadline deadline) override;

 private:
  // The TCP side's progress hook: passes a TCP failure on to the shared side, then wakes
  // the shared side's waiter.
  class TcpHook final : public ProgressHook {
   public:
    explicit TcpHook(HybridTransport* owner) : owner_(owner) {}
    void onProgress() override;

   private:
    HybridTransport* owner_;
  };

  // The TCP side as the shared-memory waiter's partner: polled while it polls, handed to
  // the loop thread while it sleeps.
  class TcpPartner final : public WaitPartner {
   public:
    explicit TcpPartner(tcp::TcpTransport* tcp) : tcp_(tcp) {}
    void poll() override { tcp_->pollNow(); }
    bool beforeSleep() override { return tcp_->handToLoop(); }
    void afterSleep(bool handedOver) override {
      if (handedOver) tcp_->setDriving(true);
    }

   private:
    tcp::TcpTransport* tcp_;
  };

  std::unique_ptr<shm::ShmTransport> shm_;
  std::unique_ptr<tcp::TcpTransport> tcp_;
  TcpHook tcpHook_{this};
  TcpPartner tcpPartner_{tcp_.get()};
  std::atomic<bool> tcpFailurePassedOn_{false};
};

}  // namespace tutti
