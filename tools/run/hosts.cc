#include "run/hosts.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <set>

#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"

namespace tutti::run {
namespace {

bool validHostName(const std::string& name) {
  if (name.empty() || name[0] == '-') return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '\'' || c == '"' || c == '\\' || c == '{' || c == '}' ||
        c == ',')
      return false;
  }
  return true;
}

// Characters a POSIX shell takes literally in an unquoted word.
bool shellSafe(const std::string& word) {
  if (word.empty()) return false;
  for (char c : word) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ',' ||
                    c == ':' || c == '@' || c == '%';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<std::vector<HostSlots>> parseHosts(const std::string& text, int maxRanks) {
  TUTTI_CHECK_ARG(!text.empty(), "--hosts is empty");
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  long total = 0;
  for (const std::string& entry : splitString(text, ',')) {
    HostSlots host;
    const auto colon = entry.rfind(':');
    host.name = entry.substr(0, colon);
    if (colon != std::string::npos) {
      const auto slots = parseInt(entry.substr(colon + 1));
      TUTTI_CHECK_ARG(slots.has_value() && *slots >= 1 && *slots <= maxRanks,
                      "--hosts %s: '%s' must give the ranks of the host as 1 to %d after ':'",
                      text.c_str(), entry.c_str(), maxRanks);
      host.slots = static_cast<int>(*slots);
    }
    TUTTI_CHECK_ARG(validHostName(host.name),
                    "--hosts %s: '%s' is not a host name (empty, starting with '-', or holding "
                    "blanks, quotes, braces or control characters)",
                    text.c_str(), host.name.c_str());
    TUTTI_CHECK_ARG(seen.insert(host.name).second,
                    "--hosts %s: host '%s' appears twice (give it all its ranks in one entry)",
                    text.c_str(), host.name.c_str());
    total += host.slots;
    TUTTI_CHECK_ARG(total <= maxRanks, "--hosts %s: more than %d ranks in all", text.c_str(),
                    maxRanks);
    hosts.push_back(std::move(host));
  }
  return hosts;
}

int totalSlots(const std::vector<HostSlots>& hosts) {
  int total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  return total;
}

Result<std::vector<std::string>> splitTemplate(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) words.push_back(std::move(word));
      word.clear();
      inWord = false;
    } else if (c == '\'') {
      const auto end = text.find('\'', i + 1);
      TUTTI_CHECK_ARG(end != std::string::npos, "--launcher '%s': unterminated ' quote",
                      text.c_str());
      word.append(text, i + 1, end - i - 1);
      inWord = true;
      i = end;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[j + 1]) != std::string_view::npos) {
          ++j;
        }
        word.push_back(text[j]);
      }
      TUTTI_CHECK_ARG(j < text.size(), "--launcher '%s': unterminated \" quote", text.c_str());
      inWord = true;
      i = j;
    } else if (c == '\\') {
      TUTTI_CHECK_ARG(i + 1 < text.size(), "--launcher '%s': ends in a backslash", text.c_str());
      word.push_back(text[++i]);
      inWord = true;
    } else {
      TUTTI_CHECK_ARG(std::string_view(";|&<>()").find(c) == std::string_view::npos,
                      "--launcher '%s': '%c' outside quotes needs a shell, which tutti-run "
                      "does not run (quote it, or wrap the command in a script)",
                      text.c_str(), c);
      word.push_back(c);
      inWord = true;
    }
  }
  if (inWord) words.push_back(std::move(word));
  TUTTI_CHECK_ARG(!words.empty(), "--launcher '%s' has no command", text.c_str());
  return words;
}

Result<std::vector<std::string>> launchCommand(const std::vector<std::string>& templateWords,
                                               const std::string& host,
                                               const std::string& tuttiRun) {
  TUTTI_CHECK_ARG(shellSafe(tuttiRun),
                  "tutti-run's path '%s' holds characters a remote shell would interpret; "
                  "install it under a plain path",
                  tuttiRun.c_str());
  std::vector<std::string> argv;
  for (std::string word : templateWords) {
    for (std::size_t at = word.find("{host}"); at != std::string::npos;
         at = word.find("{host}", at + host.size())) {
      word.replace(at, 6, host);
    }
    argv.push_back(std::move(word));
  }
  argv.push_back(tuttiRun);
  argv.push_back("--agent");
  return argv;
}

Result<std::string> pickStoreHost() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return systemError("getifaddrs", errno);
  std::string found;
  for (const ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    const in_addr addr = reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr;
    const std::uint32_t host = ntohl(addr.s_addr);
    if ((host >> 24) == 127 || (host >> 16) == 0xa9fe) continue;  // loopback, link-local
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &addr, text, sizeof(text)) != nullptr) found = text;
  }
  ::freeifaddrs(list);
  TUTTI_CHECK_ARG(!found.empty(),
                  "--hosts: this machine has no IPv4 address other hosts could reach the "
                  "store on (no interface up besides loopback); give one with --bind");
  return found;
}

}  // namespace tutti::run
