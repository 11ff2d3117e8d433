#include "transport/hybrid/hybrid_transport.h"

#include "base/assert.h"

namespace tutti {

HybridTransport::HybridTransport(std::unique_ptr<shm::ShmTransport> shm,
                                 std::unique_ptr<tcp::TcpTransport> tcp)
    : shm_(std::move(shm)), tcp_(std::move(tcp)) {
  TUTTI_ASSERT_CMP(shm_->rank(), ==, tcp_->rank());
  TUTTI_ASSERT_CMP(shm_->size(), ==, tcp_->size());
  tcp_->setProgressHook(&tcpHook_);
  shm_->setWaitPartner(&tcpPartner_);
}

void HybridTransport::TcpHook::onProgress() {
  HybridTransport& h = *owner_;
  if (!h.tcpFailurePassedOn_.load(std::memory_order_acquire)) {
    Status failure = h.tcp_->health();
    if (!failure.ok() && !h.tcpFailurePassedOn_.exchange(true)) h.shm_->fail(failure);
  }
  h.shm_->onProgress();
}

HybridTransport::~HybridTransport() {
  // The TCP loop thread may be inside the hook, which reads both sides: stop it (shutdown
  // joins it) while both are whole. Clearing the hook alone would not wait for a call
  // already in it.
  shm_->setWaitPartner(nullptr);
  tcp_->shutdown(Deadline::afterSeconds(5));
  tcp_->setProgressHook(nullptr);
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
  // When one side has failed already, that failure is the root cause and `status` is
  // likely its symptom (a receive from a rank that left because of it): pass the root on,
  // or health(), which asks the shared side first, would report the symptom.
  Status root = tcp_->health();
  if (root.ok()) root = shm_->health();
  if (root.ok()) root = status;
  shm_->fail(root);
  tcp_->fail(root);
}

void HybridTransport::shutdown(Deadline deadline) {
  // A failed side leaves with its first failure on both (never a plain "left").
  Status failure = health();
  if (!failure.ok()) fail(failure);
  shm_->shutdown(deadline);
  tcp_->shutdown(deadline);
}

TransportExtension* HybridTransport::extension(std::string_view name) {
  if (name == DirectCopy::kName) return static_cast<DirectCopy*>(this);
  if (name == MappedBuffers::kName) return shm_->extension(name);
  return nullptr;
}

}  // namespace tutti
