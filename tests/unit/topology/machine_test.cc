#include "topology/machine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <filesystem>

#include "base/cpus.h"
#include "topology/host_identity.h"
#include "topology/nics.h"

namespace tutti::topo {
namespace {

TEST(Machine, ThisHostIsDetectedSanely) {
  const Machine& m = localMachine();
  ASSERT_TRUE(m.error.empty()) << m.error;
  EXPECT_GE(m.packages.size(), 1u);
  EXPECT_GE(m.numaNodes.size(), 1u);
  EXPECT_GE(m.cores, 1);
  EXPECT_GE(m.pus, m.cores);
  std::size_t inPackages = 0;
  for (const auto& p : m.packages) inPackages += p.size();
  EXPECT_EQ(inPackages, static_cast<std::size_t>(m.pus));
  EXPECT_EQ(&localMachine(), &m);  // loaded once
}

TEST(Machine, ThisProcessBindingIsInRange) {
  const Machine& m = localMachine();
  const std::vector<int> cpus = allowedCpuList();
  ASSERT_FALSE(cpus.empty());
  const Binding whole = bindingOf(m, cpus);
  EXPECT_GE(whole.package, -1);
  EXPECT_LT(whole.package, static_cast<int>(m.packages.size()));
  // One CPU lies in exactly one package and one NUMA node.
  const Binding one = bindingOf(m, {cpus.front()});
  EXPECT_GE(one.package, 0);
  EXPECT_LT(one.package, static_cast<int>(m.packages.size()));
  EXPECT_GE(one.numaNode, 0);
  EXPECT_LT(one.numaNode, static_cast<int>(m.numaNodes.size()));
}

TEST(Machine, BindingOfTwoSockets) {
  Machine m;
  m.packages = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  m.numaNodes = m.packages;
  m.l3Groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  Binding b = bindingOf(m, {5, 4});
  EXPECT_EQ(b.package, 1);
  EXPECT_EQ(b.numaNode, 1);
  EXPECT_EQ(b.l3Group, 2);
  b = bindingOf(m, {1, 2});
  EXPECT_EQ(b.package, 0);
  EXPECT_EQ(b.l3Group, -1);  // spans two L3 groups
  b = bindingOf(m, {3, 4});
  EXPECT_EQ(b.package, -1);
  EXPECT_EQ(bindingOf(m, {}).package, -1);
}

TEST(HostIdentity, IsBootIdAndNetworkNamespace) {
  const std::string id = hostIdentity();
  EXPECT_NE(id.find("/net:["), std::string::npos) << id;
  EXPECT_EQ(id, hostIdentity());
  EXPECT_FALSE(hostName().empty());
}

TEST(Nics, FromAddressesAndSysfs) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("tutti_nics_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "eth0" / "device");
  std::ofstream(root / "eth0" / "speed") << "10000\n";
  std::ofstream(root / "eth0" / "device" / "numa_node") << "1\n";
  std::filesystem::create_directories(root / "veth1");
  std::ofstream(root / "veth1" / "speed") << "-1\n";
  const std::vector<InterfaceAddress> addresses = {
      {"lo", "127.0.0.1", false, false, true},
      {"eth0", "", false, false, false},
      {"eth0", "fe80::1", true, true, false},
      {"eth0", "10.0.0.2", false, false, false},
      {"eth0", "2001:db8::2", true, false, false},
      {"veth1", "10.1.0.2", false, false, false},
      {"ifb0", "", false, false, false},
  };
  const std::vector<Nic> nics = nicsFrom(addresses, root.string());
  ASSERT_EQ(nics.size(), 2u);  // no loopback, no interface without an address
  EXPECT_EQ(nics[0].name, "eth0");
  EXPECT_EQ(nics[0].ipv4, "10.0.0.2");
  EXPECT_EQ(nics[0].ipv6, "2001:db8::2");
  EXPECT_EQ(nics[0].speedMbps, 10000);
  EXPECT_EQ(nics[0].numaNode, 1);
  EXPECT_EQ(nics[1].name, "veth1");
  EXPECT_EQ(nics[1].speedMbps, -1);
  EXPECT_EQ(nics[1].numaNode, -1);
  // Loopback alone is kept.
  const std::vector<Nic> alone = nicsFrom({addresses[0]}, root.string());
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].name, "lo");
  EXPECT_EQ(interfaceOf(addresses, "10.1.0.2"), "veth1");
  EXPECT_EQ(interfaceOf(addresses, "127.0.0.1"), "lo");
  EXPECT_EQ(interfaceOf(addresses, "10.9.9.9"), "");
  EXPECT_EQ(interfaceOf(addresses, "0.0.0.0"), "");
  std::filesystem::remove_all(root);
}

TEST(Nics, ThisHostListsItsLoopbackAddress) {
  EXPECT_EQ(interfaceOf(interfaceAddresses(), "127.0.0.1"), "lo");
  EXPECT_FALSE(hostNics().empty());
}

}  // namespace
}  // namespace tutti::topo
