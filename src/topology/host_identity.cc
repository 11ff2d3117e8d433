#include "topology/host_identity.h"

#include <unistd.h>

#include <fstream>

namespace tutti::topo {

std::string machineIdentity() {
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return boot.empty() ? std::string("?") : boot;
}

std::string hostIdentity() {
  const std::string boot = machineIdentity();
  char netns[128] = {};
  const ssize_t n = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
  return boot + "/" + (n > 0 ? std::string(netns, static_cast<std::size_t>(n)) : std::string("?"));
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "?";
  return name;
}

}  // namespace tutti::topo
