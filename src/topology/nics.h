#pragma once
// The host's network interfaces, as the system lists them (getifaddrs and /sys/class/net),
// and which of them holds a given address: the NIC a rank's traffic leaves through.

#include <string>
#include <vector>

namespace tutti::topo {

struct Nic {
  std::string name;
  std::string ipv4;        // the first IPv4 address; empty: none
  std::string ipv6;        // the first IPv6 address (global before link-local); empty: none
  int speedMbps = -1;      // /sys/class/net/NAME/speed; -1: not known (virtual links)
  int numaNode = -1;       // /sys/class/net/NAME/device/numa_node; -1: not known
  bool loopback = false;
};

/// One address of an interface, as getifaddrs lists it.
struct InterfaceAddress {
  std::string name;
  std::string address;  // numeric; empty: an interface without an address
  bool ipv6 = false;
  bool linkLocal = false;
  bool loopback = false;
};

/// The interfaces named in `addresses`, in order of first appearance, with speed and NUMA
/// node read under `sysClassNet`; interfaces without an address are left out, and loopback
/// ones unless they are all there is.
std::vector<Nic> nicsFrom(const std::vector<InterfaceAddress>& addresses,
                          const std::string& sysClassNet);

/// This host's interface addresses (getifaddrs), and its NICs (nicsFrom under
/// /sys/class/net), read on every call: addresses come and go.
std::vector<InterfaceAddress> interfaceAddresses();
std::vector<Nic> hostNics();

/// The name of the interface holding `address` (numeric, or a host name resolved to one),
/// or empty where none does. A wildcard address ("", "0.0.0.0", "::") holds no NIC.
std::string interfaceOf(const std::vector<InterfaceAddress>& addresses, const std::string& address);

}  // namespace tutti::topo
