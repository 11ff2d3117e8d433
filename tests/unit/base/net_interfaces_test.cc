// TUTTI_SOCKET_IFNAME: NCCL_SOCKET_IFNAME's syntax over fixed interface lists.

#include <gtest/gtest.h>

#include <vector>

#include "base/net.h"

namespace tutti {
namespace {

const std::vector<NetInterface> kHost = {
    {"lo", "127.0.0.1"},       {"docker0", "172.17.0.1"}, {"eth0", "10.0.0.2"},
    {"eth1", "10.1.0.2"},      {"ib0", "fd00::2"},        {"ib0", "192.168.5.2"},
    {"enp3s0", "10.2.0.2"},
};

std::string choose(const char* spec) {
  auto address = chooseInterfaceAddress(spec, kHost);
  return address.ok() ? *address : "error: " + address.status().message();
}

TEST(SocketIfname, PrefixesPickTheFirstMatchingInterface) {
  EXPECT_EQ(choose("eth"), "10.0.0.2");
  EXPECT_EQ(choose("eth1"), "10.1.0.2");
  EXPECT_EQ(choose("ib,eth"), "10.0.0.2");  // the host's order, not the list's
  EXPECT_EQ(choose("en"), "10.2.0.2");
}

TEST(SocketIfname, AnIpv4AddressComesBeforeAnIpv6One) { EXPECT_EQ(choose("ib"), "192.168.5.2"); }

TEST(SocketIfname, CaretExcludes) {
  EXPECT_EQ(choose("^docker,lo"), "10.0.0.2");
  EXPECT_EQ(choose("^lo,docker,eth"), "192.168.5.2");
}

TEST(SocketIfname, EqualsMatchesWholeNames) {
  EXPECT_EQ(choose("=eth1"), "10.1.0.2");
  EXPECT_EQ(choose("=eth").rfind("error: ", 0), 0u);  // no interface is named exactly eth
  EXPECT_EQ(choose("^=docker0,lo"), "10.0.0.2");      // lo exact: only "lo" is excluded
  EXPECT_EQ(choose("^=lo"), "172.17.0.1");
}

TEST(SocketIfname, NoMatchIsAnErrorListingTheInterfaces) {
  auto address = chooseInterfaceAddress("wlan", kHost);
  ASSERT_FALSE(address.ok());
  EXPECT_EQ(address.status().code(), ErrorCode::kInvalidArgument);
  const std::string& text = address.status().message();
  EXPECT_NE(text.find("TUTTI_SOCKET_IFNAME='wlan'"), std::string::npos) << text;
  EXPECT_NE(text.find("eth0 10.0.0.2"), std::string::npos) << text;
  EXPECT_NE(text.find("docker0 172.17.0.1"), std::string::npos) << text;
}

TEST(SocketIfname, EmptyNamesAreRefused) {
  for (const char* spec : {"", "^", "=", "^=", "eth,", ",eth", "eth,,ib"}) {
    auto filter = parseInterfaceFilter(spec);
    EXPECT_FALSE(filter.ok()) << spec;
    if (!filter.ok()) {
      EXPECT_EQ(filter.status().code(), ErrorCode::kInvalidArgument) << spec;
    }
  }
}

TEST(SocketIfname, ParsedFilterSaysWhatItAllows) {
  auto filter = parseInterfaceFilter("^=docker0,lo");
  ASSERT_TRUE(filter.ok());
  EXPECT_TRUE(filter->exclude);
  EXPECT_TRUE(filter->exact);
  EXPECT_EQ(filter->names, (std::vector<std::string>{"docker0", "lo"}));
  EXPECT_FALSE(filter->allows("docker0"));
  EXPECT_TRUE(filter->allows("docker1"));
}

// The machine's own list has at least the loopback interface, which "lo" picks.
TEST(SocketIfname, ThisHostsLoopbackIsListed) {
  auto interfaces = listInterfaces();
  ASSERT_TRUE(interfaces.ok()) << interfaces.status().toString();
  auto address = chooseInterfaceAddress("=lo", *interfaces);
  ASSERT_TRUE(address.ok()) << address.status().toString();
  EXPECT_EQ(*address, "127.0.0.1");
}

}  // namespace
}  // namespace tutti
