#include "transport/hybrid/hybrid_transport.h"

#include "base/assert.h"

namespace tutti {

HybridTransport::HybridTransport(std::unique_ptr<shm::ShmTransport> shm,
                                 std::unique_ptr<tcp::TcpTransport> tcp)
    : shm_(std::move(shm)), tcp_(std::move(tcp)) {
  TUTTI_ASSERT_CMP(shm_->rank(), ==, tcp_->rank());
  TUTTI_ASSERT_CMP(shm_->size(), ==, tcp_->size());
  tcp_->setProgressHook(shm_.get());
}

HybridTransport::~HybridTransport() {
  // The TCP loop thread must not reach the hook once the shared side is gone.
  tcp_->setProgressHook(nullptr);
  tcp_.reset();
}

Link& HybridTransport::link(int peer) {
  return shm_->isLocal(peer) ? shm_->link(peer) : tcp_->link(peer);
}

bool HybridTransport::waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) {
  // A TCP failure rings the doorbell too, so this wakes for either side.
  if (!tcp_->health().ok()) return true;
  return shm_->waitForProgress(seen, deadline, spinNs);
}

Status HybridTransport::health() const {
  Status local = shm_->health();
  return local.ok() ? tcp_->health() : local;
}

void HybridTransport::fail(const Status& status) {
  shm_->fail(status);
  tcp_->fail(status);
}

void HybridTransport::shutdown(Deadline deadline) {
  shm_->shutdown(deadline);
  tcp_->shutdown(deadline);
}

}  // namespace tutti
