#include "topology/nics.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>

namespace tutti::topo {
namespace {

// An integer from a one-line sysfs file, or `fallback` where it is absent or unreadable
// (a virtual link's speed read fails with EINVAL).
int readIntFile(const std::string& path, int fallback) {
  std::ifstream in(path);
  long long value = 0;
  if (!(in >> value)) return fallback;
  return static_cast<int>(value);
}

// The numeric form of `address`, resolving a host name; empty where it resolves to nothing.
std::vector<std::string> numericForms(const std::string& address) {
  std::vector<std::string> forms;
  addrinfo hints{};
  hints.ai_flags = AI_ADDRCONFIG;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0) return forms;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) == 0)
      forms.emplace_back(text);
  }
  freeaddrinfo(found);
  return forms;
}

}  // namespace

std::vector<Nic> nicsFrom(const std::vector<InterfaceAddress>& addresses,
                          const std::string& sysClassNet) {
  std::vector<Nic> all;
  for (const InterfaceAddress& a : addresses) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Nic& n) { return n.name == a.name; });
    if (it == all.end()) {
      Nic nic;
      nic.name = a.name;
      nic.loopback = a.loopback;
      const std::string dir = sysClassNet + "/" + a.name;
      nic.speedMbps = std::max(readIntFile(dir + "/speed", -1), -1);
      nic.numaNode = std::max(readIntFile(dir + "/device/numa_node", -1), -1);
      all.push_back(nic);
      it = all.end() - 1;
    }
    if (a.address.empty()) continue;
    if (!a.ipv6 && it->ipv4.empty()) it->ipv4 = a.address;
    // A global IPv6 address is the one peers reach; a link-local one only where none is.
    if (a.ipv6 && (it->ipv6.empty() || (!a.linkLocal && it->ipv6.rfind("fe80", 0) == 0)))
      it->ipv6 = a.address;
  }
  // An interface without an address carries none of our traffic (ifb, a bridge's ports).
  all.erase(std::remove_if(all.begin(), all.end(),
                           [](const Nic& n) { return n.ipv4.empty() && n.ipv6.empty(); }),
            all.end());
  const bool onlyLoopback =
      std::all_of(all.begin(), all.end(), [](const Nic& n) { return n.loopback; });
  if (!onlyLoopback)
    all.erase(std::remove_if(all.begin(), all.end(), [](const Nic& n) { return n.loopback; }),
              all.end());
  return all;
}

std::vector<InterfaceAddress> interfaceAddresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_name == nullptr) continue;
    InterfaceAddress a;
    a.name = i->ifa_name;
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    const sockaddr* sa = i->ifa_addr;
    if (sa != nullptr && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)) {
      char text[INET6_ADDRSTRLEN] = {};
      const socklen_t len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      if (getnameinfo(sa, len, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) == 0) {
        a.address = text;
        // A link-local address carries its scope ("fe80::1%eth0"); the bare address is kept.
        if (const auto pct = a.address.find('%'); pct != std::string::npos) a.address.resize(pct);
      }
      a.ipv6 = sa->sa_family == AF_INET6;
      a.linkLocal = a.ipv6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
    }
    out.push_back(std::move(a));
  }
  freeifaddrs(list);
  return out;
}

std::vector<Nic> hostNics() { return nicsFrom(interfaceAddresses(), "/sys/class/net"); }

std::string interfaceOf(const std::vector<InterfaceAddress>& addresses, const std::string& address) {
  if (address.empty() || address == "0.0.0.0" || address == "::" || address == "*") return {};
  std::vector<std::string> forms = {address};
  // Numeric addresses match as they are; anything else is a host name to resolve.
  in6_addr probe{};
  if (inet_pton(AF_INET, address.c_str(), &probe) != 1 &&
      inet_pton(AF_INET6, address.c_str(), &probe) != 1)
    forms = numericForms(address);
  for (const std::string& form : forms) {
    for (const InterfaceAddress& a : addresses)
      if (!a.address.empty() && a.address == form) return a.name;
  }
  return {};
}

}  // namespace tutti::topo
