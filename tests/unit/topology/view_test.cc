#include "topology/view.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "topology/host_identity.h"
#include "topology/view_json.h"

namespace tutti::topo {
namespace {

// Rank r's own description on host `name` (identity `id`), as describeThisRank makes them.
View one(const std::string& name, const std::string& id, int package) {
  View v;
  HostInfo h;
  h.name = name;
  h.id = id;
  h.packages = 2;
  h.numaNodes = 2;
  h.cores = 8;
  h.pus = 16;
  h.nics.push_back(Nic{"eth0", "10.0.0.1", "", 25000, 0, false});
  v.hosts.push_back(h);
  RankInfo r;
  r.package = package;
  r.numaNode = package;
  r.cpus = package == 0 ? "0-3" : "4-7";
  r.nic = "eth0";
  r.address = "10.0.0.1";
  v.ranks.push_back(r);
  return v;
}

TEST(View, CombineGroupsHostsByIdentityAndName) {
  // Same identity, another name: another host; same name, another identity: another host.
  const View view = combine({one("a", "x", 0), one("b", "y", 0), one("a", "x", 1),
                             one("a", "z", 0), one("b", "y", 1)});
  ASSERT_TRUE(check(view).ok()) << check(view).message();
  ASSERT_EQ(view.hosts.size(), 3u);
  EXPECT_EQ(view.hostOfRanks(), (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(view.ranks[2].localIndex, 1);
  EXPECT_EQ(view.ranks[4].localIndex, 1);
  EXPECT_EQ(view.ranks[3].localIndex, 0);
  EXPECT_EQ(view.hosts[2].id, "z");
  EXPECT_EQ(view.ranks[2].package, 1);
}

TEST(View, HostLabelNamesTheHostAndItsAddress) {
  View view = combine({one("a", "x", 0), one("a", "y", 0), one("a", "y", 1)});
  view.ranks[1].address = "10.77.0.2";
  EXPECT_EQ(view.hostLabel(1), "host 1 'a' at 10.77.0.2");  // its lowest rank's address
  view.ranks[0].address.clear();
  EXPECT_EQ(view.hostLabel(0), "host 0 'a'");  // no address known
}

TEST(View, SubViewRenumbersHostsAndLocalIndices) {
  const View view = combine({one("a", "x", 0), one("a", "x", 1), one("b", "y", 0),
                             one("b", "y", 1), one("c", "z", 0)});
  // A split child of parent ranks 4, 3, 1 (in that order).
  const View sub = subView(view, {4, 3, 1});
  ASSERT_TRUE(check(sub).ok()) << check(sub).message();
  ASSERT_EQ(sub.hosts.size(), 3u);
  EXPECT_EQ(sub.hosts[0].name, "c");
  EXPECT_EQ(sub.hostOfRanks(), (std::vector<int>{0, 1, 2}));
  // Only host b's and a's... a child on one host has one.
  const View same = subView(view, {2, 3});
  EXPECT_EQ(same.hosts.size(), 1u);
  EXPECT_EQ(same.ranks[1].localIndex, 1);
  EXPECT_EQ(same.ranks[1].package, 1);
}

TEST(View, JsonRoundTrip) {
  const View view = combine({one("a", "x", 0), one("b", "y\"q", 1), one("a", "x", 1)});
  auto back = fromJson(toJson(view));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(toJson(*back), toJson(view));
  EXPECT_EQ(back->hosts[1].id, "y\"q");
  EXPECT_EQ(back->hosts[0].nics[0].speedMbps, 25000);
  EXPECT_EQ(back->ranks[2].cpus, "4-7");
}

TEST(View, ThisRankDescribesItself) {
  const View me = describeThisRank(hostIdentity(), "127.0.0.1");
  ASSERT_EQ(me.size(), 1);
  EXPECT_GE(me.hosts[0].packages, 1);
  EXPECT_GE(me.hosts[0].cores, 1);
  EXPECT_EQ(me.ranks[0].nic, "lo");
  EXPECT_FALSE(me.ranks[0].cpus.empty());
  EXPECT_LT(me.ranks[0].package, me.hosts[0].packages);
  // Its machine is the boot id its host identity starts with.
  EXPECT_EQ(me.hosts[0].machine, machineIdentity());
  EXPECT_EQ(hostIdentity().rfind(machineIdentity() + "/", 0), 0u) << hostIdentity();
  auto back = fromJson(toJson(me));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->hosts[0].machine, me.hosts[0].machine);
}

TEST(View, MinimalFileFillsDefaults) {
  auto view = fromJson(R"({"format": "tutti-topology", "version": 1,
    "hosts": [{"name": "a"}, {"name": "b"}],
    "ranks": [{"rank": 0, "host": 0}, {"rank": 1, "host": 1}, {"rank": 2, "host": 0}]})");
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->hosts[1].id, "b");
  EXPECT_EQ(view->hosts[1].machine, "");  // a machine of its own
  EXPECT_EQ(view->ranks[2].localIndex, 1);
  EXPECT_EQ(view->ranks[2].package, -1);
}

TEST(View, MalformedFilesAreRefusedNamingLineAndField) {
  const std::string head = "{\"format\": \"tutti-topology\", \"version\": 1,\n";
  struct Case {
    std::string text;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"[]", "line 1: the document: an object expected, found an array"},
           {"{\"format\": \"x\", \"version\": 1, \"hosts\": [], \"ranks\": []}",
            "line 1: format: \"x\", not a tutti topology view (\"tutti-topology\")"},
           {"{\"format\": \"tutti-topology\", \"version\": 7, \"hosts\": [], \"ranks\": []}",
            "line 1: version: 7 is not a version this library reads (1)"},
           {head + "\"hosts\": [{\"name\": \"a\"}]}", "line 1: ranks: missing"},
           {head + "\"hosts\": [{\"name\": \"a\"}],\n\"ranks\": [{\"rank\": 0, \"host\": \"0\"}]}",
            "line 3: ranks[0].host: an integer expected, found a string"},
           {head + "\"hosts\": [{\"name\": \"a\"}],\n\"ranks\": [{\"rank\": 0, \"hots\": 0}]}",
            "line 3: ranks[0].hots: unknown field (known: rank, host, local_index, package, "
            "numa_node, l3_group, cpus, nic, address)"},
           {head + "\"hosts\": [{\"name\": \"a\"}],\n\"ranks\": [\n{\"rank\": 0, \"host\": 0},\n"
                   "{\"rank\": 2, \"host\": 0}]}",
            "line 5: ranks[1].rank: 2, but ranks are listed in order: 1 expected"},
           {head + "\"hosts\": [{\"name\": \"a\"}],\n\"ranks\": [\n{\"rank\": 0, \"host\": 1}]}",
            "line 4: ranks[0].host: 1 is not a host (the view has 1)"},
           {head + "\"hosts\": [{\"name\": \"a\"},\n {\"name\": \"b\"}],\n\"ranks\": [{\"rank\": 0, \"host\": 0}]}",
            "line 3: hosts[1]: no rank lives on it"},
           {head + "\"hosts\": [{\"name\": \"a\"},\n {\"name\": \"a\"}],\n\"ranks\": [{\"rank\": 0, "
                   "\"host\": 0}, {\"rank\": 1, \"host\": 1}]}",
            "line 3: hosts[1]: the same host as hosts[0] (name 'a', id 'a')"},
           {head + "\"hosts\": [{\"name\": \"a\", \"packages\": 2}],\n\"ranks\": [{\"rank\": 0, "
                   "\"host\": 0, \"package\": 2}]}",
            "line 3: ranks[0].package: 2 is outside its host's 2 (or -1: not known)"},
           {head + "\"hosts\": [{\"name\": \"a\"}],\n\"ranks\": [{\"rank\": 0, \"host\": 0, "
                   "\"local_index\": 1}]}",
            "line 3: ranks[0].local_index: 1, but it is rank 0 of host 0's ranks in rank order"},
           {head + "\"hosts\": [{\"name\": \"a\", \"cores\": 1.5}], \"ranks\": []}",
            "line 2: hosts[0].cores: an integer from 0 expected, found 1.5"},
           {head + "\"hosts\": [], \"ranks\": []}", "line 1: ranks: the view holds no rank"},
           {head + "\"hosts\": [{\"name\": \"a\"}], \"ranks\": [{\"rank\": 0, \"host\": 0}],}",
            "line 2: a member name (a string) expected"},
       }) {
    auto view = fromJson(c.text);
    ASSERT_FALSE(view.ok()) << c.text;
    EXPECT_EQ(view.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(view.status().message(), c.message) << c.text;
  }
}

TEST(View, FilesAreWrittenAndLoaded) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tutti_view_" + std::to_string(::getpid()) + ".json")).string();
  const View view = combine({one("a", "x", 0), one("b", "y", 1)});
  ASSERT_TRUE(writeViewFile(path, view).ok());
  auto back = loadViewFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(toJson(*back), toJson(view));
  std::filesystem::remove(path);
  auto missing = loadViewFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("topology file " + path + " cannot be read"),
            std::string::npos) << missing.status().message();
  std::ofstream(path) << "{\n\"format\": 3}";
  auto bad = loadViewFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "topology file " + path + ": line 2: format: a string expected, found a number");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tutti::topo
