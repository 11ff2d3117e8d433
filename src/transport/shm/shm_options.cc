// What the shared-memory transport takes from the configuration (ShmTransport::optionsFrom)
// and the extensions it offers core (ShmTransport::extension, extensions.h).

#include <optional>

#include "base/macros.h"
#include "base/strings.h"
#include "transport/shm/shm_transport.h"
#include "transport/shm/user_buffers.h"

namespace tutti::shm {

Result<ShmTransport::Options> ShmTransport::optionsFrom(const Config& config) {
  Options o;
  if (config.shmCmaBytes != "auto") {
    const std::optional<std::uint64_t> cma = parseBytes(config.shmCmaBytes);
    TUTTI_CHECK_ARG(cma.has_value(),
                    "TUTTI_SHM_CMA_BYTES must be auto or a byte count such as 4096, 64K or "
                    "16M, got '%s'", config.shmCmaBytes.c_str());
    o.cmaBytes = *cma;
    o.cmaBytesWithCores = *cma;
  } else {
    o.cmaAuto = true;
  }
  if (config.shmExchangeBytes != "auto") {
    const std::optional<std::uint64_t> most = parseBytes(config.shmExchangeBytes);
    TUTTI_CHECK_ARG(most.has_value(),
                    "TUTTI_SHM_EXCHANGE_BYTES must be auto or a byte count such as 0, 512K "
                    "or 16M, got '%s'", config.shmExchangeBytes.c_str());
    o.exchangeMaxBytes = *most;
  }
  o.mappedBytes = config.shmMappedBytes;
  o.streamedBytes = config.shmStreamedBytes;
  o.cmaShare = config.shmCmaShare;
  TUTTI_CHECK_ARG(config.shmSlotBytes == 0 ||
                      (config.shmSlotBytes >= 64 && config.shmSlotBytes <= (64u << 20)),
                  "TUTTI_SHM_SLOT_BYTES must be 0 (automatic) or between 64 and 64M, got %llu",
                  static_cast<unsigned long long>(config.shmSlotBytes));
  o.slotBytes = static_cast<std::uint32_t>(config.shmSlotBytes);
  TUTTI_CHECK_ARG(config.shmPollUs >= 0 && config.shmPollUs <= 10'000'000,
                  "TUTTI_SHM_POLL_US must be between 0 and 10000000 microseconds, got %lld",
                  static_cast<long long>(config.shmPollUs));
  o.pollNs = config.shmPollUs * 1000;
  o.maxUnexpectedBytes = config.tcpMaxUnexpected;
  o.runAheadBytes = config.shmRunAheadBytes;
  TUTTI_CHECK_ARG(config.shmRunAheadMessages >= 0,
                  "TUTTI_SHM_RUN_AHEAD_MESSAGES must be 0 or more, got %lld",
                  static_cast<long long>(config.shmRunAheadMessages));
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
