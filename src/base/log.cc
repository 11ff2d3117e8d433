#include "base/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/config.h"
#include "base/strings.h"

namespace tutti::log {
namespace detail {
std::atomic<int> gLevel{static_cast<int>(Level::kWarn)};
std::atomic<std::uint32_t> gMask{kAll};
std::atomic<bool> gConfigured{false};
}  // namespace detail

namespace {

// The logger's own state: the sink and the prefix pieces. Set at configuration time.
std::mutex gSinkMutex;
FILE* gSink = nullptr;  // nullptr means stderr
std::string gFilePattern;
std::atomic<int> gRank{-1};
char gHost[64] = "?";

struct SubsysName {
  const char* name;
  std::uint32_t bit;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", kInit}, {"BOOTSTRAP", kBootstrap}, {"TCP", kTcp},   {"SHM", kShm},
    {"COLL", kColl}, {"TUNE", kTune},           {"TOPO", kTopo}, {"ENV", kEnv},
    {"EXEC", kExec}, {"RUN", kRun},
};

const char* subsysName(std::uint32_t subsys) {
  for (const auto& s : kSubsysNames) {
    if (s.bit == subsys) return s.name;
  }
  return "MISC";
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kError: return "ERROR";
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kDebug: return "DEBUG";
    case Level::kTrace: return "TRACE";
    case Level::kNone: break;
  }
  return "?";
}

bool parseLevel(const std::string& text, Level* level) {
  std::string up = toUpper(trim(text));
  if (up.empty() || up == "WARN" || up == "WARNING") *level = Level::kWarn;
  else if (up == "NONE" || up == "OFF") *level = Level::kNone;
  else if (up == "ERROR") *level = Level::kError;
  else if (up == "INFO") *level = Level::kInfo;
  else if (up == "DEBUG") *level = Level::kDebug;
  else if (up == "TRACE") *level = Level::kTrace;
  else return false;
  return true;
}

std::string expandPattern(const std::string& pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    if (c == 'h') out += gHost;
    else if (c == 'p') out += std::to_string(getpid());
    else if (c == 'r') out += std::to_string(gRank.load());
    else if (c == '%') out += '%';
    else {
      out += '%';
      out += c;
    }
  }
  return out;
}

void openSinkLocked() {
  if (gSink != nullptr) {
    std::fclose(gSink);
    gSink = nullptr;
  }
  if (gFilePattern.empty()) return;
  gSink = std::fopen(expandPattern(gFilePattern).c_str(), "a");
  // If the file cannot be opened we fall back to stderr rather than losing errors.
}

}  // namespace

bool parseSubsysMask(const std::string& text, std::uint32_t* mask) {
  std::string up = toUpper(trim(text));
  if (up.empty() || up == "ALL") {
    *mask = kAll;
    return true;
  }
  bool exclude = up[0] == '^';
  if (exclude) up.erase(0, 1);
  std::uint32_t bits = 0;
  for (const std::string& part : splitString(up, ',')) {
    std::string_view name = trim(part);
    if (name == "ALL") {
      bits = kAll;
      continue;
    }
    bool found = false;
    for (const auto& s : kSubsysNames) {
      if (name == s.name) {
        bits |= s.bit;
        found = true;
      }
    }
    if (!found) return false;
  }
  *mask = exclude ? ~bits : bits;
  return true;
}

bool configure(const std::string& level, const std::string& subsys, const std::string& file) {
  Level parsed;
  std::uint32_t mask;
  bool ok = parseLevel(level, &parsed) && parseSubsysMask(subsys, &mask);
  if (!ok) {
    parsed = Level::kWarn;
    mask = kAll;
  }
  {
    // write() reads both under the same lock.
    std::lock_guard<std::mutex> lock(gSinkMutex);
    if (gethostname(gHost, sizeof(gHost) - 1) != 0) std::strcpy(gHost, "?");
    gFilePattern = file;
    openSinkLocked();
  }
  detail::gLevel.store(static_cast<int>(parsed), std::memory_order_relaxed);
  detail::gMask.store(mask, std::memory_order_relaxed);
  detail::gConfigured.store(true, std::memory_order_release);
  return ok;
}

void detail::configureFromEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] {
    const Result<Config>& config = Config::fromProcessEnvironment();
    if (!config.ok()) {
      configure("WARN", "ALL", "");
      write(Level::kWarn, kEnv, __FILE__, __LINE__, "%s", config.status().message().c_str());
      return;
    }
    bool ok = configure(config->debugLevel, config->debugSubsys, config->logFile);
    if (!ok) {
      write(Level::kWarn, kEnv, __FILE__, __LINE__,
            "TUTTI_DEBUG='%s' or TUTTI_DEBUG_SUBSYS='%s' not understood; using WARN, ALL",
            config->debugLevel.c_str(), config->debugSubsys.c_str());
    }
    for (const std::string& w : config->warnings()) {
      write(Level::kWarn, kEnv, __FILE__, __LINE__, "%s", w.c_str());
    }
  });
}

void setRank(int rank) {
  int previous = gRank.exchange(rank);
  if (previous == rank) return;
  // The pattern under the lock: configure() may be writing it on another thread (the
  // first log call of another rank's thread configures from the environment).
  std::lock_guard<std::mutex> lock(gSinkMutex);
  if (gFilePattern.find("%r") != std::string::npos) openSinkLocked();
}

void write(Level level, std::uint32_t subsys, const char* file, int line, const char* fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  char rankText[24] = "";
  int rank = gRank.load(std::memory_order_relaxed);
  if (rank >= 0) std::snprintf(rankText, sizeof(rankText), " [rank %d]", rank);
  long tid = static_cast<long>(syscall(SYS_gettid));
  std::lock_guard<std::mutex> lock(gSinkMutex);
  FILE* out = gSink ? gSink : stderr;
  std::fprintf(out, "%s:%d:%ld%s tutti %s %s %s:%d: %s\n", gHost, static_cast<int>(getpid()), tid,
               rankText, levelName(level), subsysName(subsys), base, line, message);
  std::fflush(out);
}

}  // namespace tutti::log
