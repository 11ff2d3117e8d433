// What the shared-memory transport takes from the configuration (ShmTransport::optionsFrom)
// and the extensions it offers core (ShmTransport::extension, extensions.h).

#include <optional>

#include "base/strings.h"
#include "transport/shm/shm_transport.h"
#include "transport/shm/user_buffers.h"

namespace tutti::shm {

ShmTransport::Options ShmTransport::optionsFrom(const Config& config) {
  // The registry has checked every value against its row (config_vars.def): "auto or a
  // byte count" parses, and the numbers are within their ranges.
  Options o;
  o.cmaAuto = config.shmCmaBytes == "auto";
  if (!o.cmaAuto) {
    o.cmaBytes = parseBytes(config.shmCmaBytes).value_or(0);
    o.cmaBytesWithCores = o.cmaBytes;
  }
  if (config.shmExchangeBytes != "auto") o.exchangeMaxBytes = parseBytes(config.shmExchangeBytes);
  o.mappedBytes = config.shmMappedBytes;
  o.streamedBytes = config.shmStreamedBytes;
  o.cmaShare = config.shmCmaShare;
  o.slotBytes = static_cast<std::uint32_t>(config.shmSlotBytes);
  o.pollNs = config.shmPollUs * 1000;
  o.maxUnexpectedBytes = config.tcpMaxUnexpected;
  o.runAheadBytes = config.shmRunAheadBytes;
  o.runAheadMessages = static_cast<std::uint64_t>(config.shmRunAheadMessages);
  o.host = config.shmHost;
  return o;
}

TransportExtension* ShmTransport::extension(std::string_view name) {
  if (name == FlatExchange::kName)
    return flatBytes() > 0 ? static_cast<FlatExchange*>(this) : nullptr;
  if (name == DirectCopy::kName) return static_cast<DirectCopy*>(this);
  if (name == MappedBuffers::kName) return static_cast<MappedBuffers*>(this);
  return nullptr;
}

bool ShmTransport::mapped(const void* data, std::size_t bytes) const {
  return findUserBuffer(data, bytes).valid();
}

}  // namespace tutti::shm
