#pragma once
// Levelled, subsystem-masked logging (STYLE.md 3.6). Configured from TUTTI_DEBUG,
// TUTTI_DEBUG_SUBSYS and TUTTI_LOG_FILE on first use. Every line is prefixed with
//   host:pid:tid [rank r] LEVEL SUBSYS file:line:
// The level/mask check is one relaxed atomic load, so disabled logs cost nothing.

#include <atomic>
#include <cstdint>
#include <string>

#include "tutti/build_config.h"

namespace tutti::log {

enum class Level : int { kNone = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4, kTrace = 5 };

enum Subsys : std::uint32_t {
  kInit = 1u << 0,
  kBootstrap = 1u << 1,
  kTcp = 1u << 2,
  kShm = 1u << 3,
  kColl = 1u << 4,
  kTune = 1u << 5,
  kTopo = 1u << 6,
  kEnv = 1u << 7,
  kExec = 1u << 8,
  kRun = 1u << 9,
  kAll = 0xffffffffu,
};

namespace detail {
extern std::atomic<int> gLevel;
extern std::atomic<std::uint32_t> gMask;
extern std::atomic<bool> gConfigured;
void configureFromEnvironment();
}  // namespace detail

inline bool enabled(Level level, std::uint32_t subsys) {
  if (!detail::gConfigured.load(std::memory_order_acquire)) detail::configureFromEnvironment();
  return static_cast<int>(level) <= detail::gLevel.load(std::memory_order_relaxed) &&
         (subsys & detail::gMask.load(std::memory_order_relaxed)) != 0;
}

void write(Level level, std::uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

/// Sets the rank shown in the prefix (the first communicator created sets it).
void setRank(int rank);

/// Applies an explicit configuration (tests, tools). Returns false on an unknown level.
bool configure(const std::string& level, const std::string& subsys, const std::string& file);

/// Parses "INIT,TCP" / "ALL" / "^TCP" into a mask; nullopt-like: returns false on junk.
bool parseSubsysMask(const std::string& text, std::uint32_t* mask);

}  // namespace tutti::log

#define TUTTI_LOG(level, subsys, ...)                                                   \
  do {                                                                                  \
    if (::tutti::log::enabled(::tutti::log::Level::level, ::tutti::log::subsys))        \
      ::tutti::log::write(::tutti::log::Level::level, ::tutti::log::subsys, __FILE__,    \
                          __LINE__, __VA_ARGS__);                                       \
  } while (0)

#define TUTTI_ERROR(subsys, ...) TUTTI_LOG(kError, subsys, __VA_ARGS__)
#define TUTTI_WARN(subsys, ...) TUTTI_LOG(kWarn, subsys, __VA_ARGS__)
#define TUTTI_INFO(subsys, ...) TUTTI_LOG(kInfo, subsys, __VA_ARGS__)
#define TUTTI_DEBUG(subsys, ...) TUTTI_LOG(kDebug, subsys, __VA_ARGS__)
#if TUTTI_ENABLE_TRACE
#define TUTTI_TRACE(subsys, ...) TUTTI_LOG(kTrace, subsys, __VA_ARGS__)
#else
#define TUTTI_TRACE(subsys, ...) \
  do {                           \
  } while (0)
#endif
