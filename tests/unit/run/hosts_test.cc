#include "run/hosts.h"

#include <gtest/gtest.h>

#include "run/agent_protocol.h"

namespace tutti::run {
namespace {

using Words = std::vector<std::string>;

TEST(Hosts, ParsesHostsAndSlotsInOrder) {
  auto hosts = parseHosts("h1:2,h2,node-3.example:3", 100);
  ASSERT_TRUE(hosts.ok()) << hosts.status().toString();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].name, "h1");
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_EQ((*hosts)[1].name, "h2");
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_EQ((*hosts)[2].name, "node-3.example");
  EXPECT_EQ(totalSlots(*hosts), 6);
}

TEST(Hosts, RefusesBadListsNamingTheEntry) {
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"a:0", "'a:0'"},
           {"a:x", "'a:x'"},
           {"a:2,,b", "'' is not a host name"},
           {"-oProxyCommand=x:1", "starting with '-'"},
           {"a b:1", "'a b'"},
           {"a:1,a:2", "appears twice"},
           {"a:60,b:60", "more than 100 ranks"},
           {"", "is empty"}}) {
    auto hosts = parseHosts(text, 100);
    ASSERT_FALSE(hosts.ok()) << text;
    EXPECT_NE(hosts.status().message().find(needle), std::string::npos)
        << text << ": " << hosts.status().message();
  }
}

TEST(Hosts, SplitsTemplatesAsAShellWouldWithoutExpanding) {
  EXPECT_EQ(*splitTemplate("ip netns exec {host}"), (Words{"ip", "netns", "exec", "{host}"}));
  EXPECT_EQ(*splitTemplate("  ssh  -p 22\t{host} "), (Words{"ssh", "-p", "22", "{host}"}));
  EXPECT_EQ(*splitTemplate("sh -c 'a; b' x"), (Words{"sh", "-c", "a; b", "x"}));
  EXPECT_EQ(*splitTemplate("a\"b c\"d e\\ f \"\\$x\\q\""), (Words{"ab cd", "e f", "$x\\q"}));
  EXPECT_EQ(*splitTemplate("echo $HOME `id` *"), (Words{"echo", "$HOME", "`id`", "*"}));
  EXPECT_EQ(*splitTemplate("x ''"), (Words{"x", ""}));
  for (const char* bad : {"ssh 'a", "ssh \"a", "ssh a\\", "  ", "ssh a; rm", "a | b", "a > f"}) {
    EXPECT_FALSE(splitTemplate(bad).ok()) << bad;
  }
}

TEST(Hosts, HostIsSubstitutedInsideWordsOnly) {
  auto words = splitTemplate("ssh -l me {host} --name={host}.x");
  ASSERT_TRUE(words.ok());
  auto argv = launchCommand(*words, "h2", "/opt/tutti/bin/tutti-run");
  ASSERT_TRUE(argv.ok()) << argv.status().toString();
  EXPECT_EQ(*argv, (Words{"ssh", "-l", "me", "h2", "--name=h2.x", "/opt/tutti/bin/tutti-run",
                          "--agent"}));
  // A path a remote shell would read differently is refused.
  EXPECT_FALSE(launchCommand(*words, "h2", "/opt/my tutti/tutti-run").ok());
  EXPECT_FALSE(launchCommand(*words, "h2", "/opt/$(x)/tutti-run").ok());
}

TEST(AgentProtocol, NetstringsCarryAnyBytesAcrossChunks) {
  std::string stream;
  const std::string binary("a\0b,:\n", 6);
  appendNetstring("", &stream);
  appendNetstring(binary, &stream);
  appendNetstring("hello", &stream);
  NetstringReader reader;
  std::vector<std::string> got;
  for (char c : stream) {  // one byte at a time
    reader.feed(std::string_view(&c, 1));
    std::string s;
    while (true) {
      auto r = reader.next(&s);
      ASSERT_TRUE(r.ok()) << r.status().toString();
      if (!r.value()) break;
      got.push_back(s);
    }
  }
  EXPECT_EQ(got, (Words{"", binary, "hello"}));
  EXPECT_FALSE(reader.pending());
  for (const char* bad : {"x:abc,", "3:abcd", "-1:,", "999999999:"}) {
    NetstringReader r;
    r.feed(bad);
    std::string s;
    EXPECT_FALSE(r.next(&s).ok()) << bad;
  }
}

TEST(AgentProtocol, JobDescriptionRoundTrips) {
  AgentJob job;
  job.host = "h2";
  job.cwd = "/work dir";
  job.worldSize = 5;
  job.storeAddress = "10.0.0.1:4000";
  job.jobId = "12-ab";
  job.secret = "s3cret\n,:";
  job.cpuBind = "auto";
  job.env = {{"TUTTI_ALGO", "ring"}, {"X", "a=b"}};
  job.command = {"prog", "arg with space", ""};
  job.ranks = {3, 4};
  NetstringReader reader;
  reader.feed(encodeAgentJob(job) + encodeSignalRecord(15));
  AgentJobDecoder decoder;
  auto done = decoder.decode(reader);
  ASSERT_TRUE(done.ok()) << done.status().toString();
  ASSERT_TRUE(done.value());
  const AgentJob& got = decoder.job();
  EXPECT_EQ(got.host, job.host);
  EXPECT_EQ(got.cwd, job.cwd);
  EXPECT_EQ(got.worldSize, 5);
  EXPECT_EQ(got.storeAddress, job.storeAddress);
  EXPECT_EQ(got.jobId, job.jobId);
  EXPECT_EQ(got.secret, job.secret);
  EXPECT_EQ(got.cpuBind, "auto");
  EXPECT_EQ(got.env, job.env);
  EXPECT_EQ(got.command, job.command);
  EXPECT_EQ(got.ranks, job.ranks);
  // The control record that follows is left for the agent's loop.
  std::string key, value;
  ASSERT_TRUE(reader.next(&key).value());
  ASSERT_TRUE(reader.next(&value).value());
  EXPECT_EQ(key, "signal");
  EXPECT_EQ(value, "15");
}

TEST(AgentProtocol, BadDescriptionsAreRefusedClearly) {
  AgentJob job;
  job.worldSize = 2;
  job.storeAddress = "h:1";
  job.secret = "s";
  job.command = {"p"};
  job.ranks = {2};  // outside the world
  NetstringReader reader;
  reader.feed(encodeAgentJob(job));
  AgentJobDecoder decoder;
  auto r = decoder.decode(reader);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rank 2 outside a world of 2"), std::string::npos)
      << r.status().message();

  std::string other;
  appendNetstring("version", &other);
  appendNetstring("9", &other);
  NetstringReader reader2;
  reader2.feed(other);
  AgentJobDecoder decoder2;
  auto v = decoder2.decode(reader2);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("version 9"), std::string::npos) << v.status().message();
}

TEST(AgentProtocol, FramesRoundTrip) {
  std::string stream;
  appendAgentFrame('S', 3, "1234", &stream);
  appendAgentFrame('O', 3, std::string("out\0put", 7), &stream);
  appendAgentFrame('X', 3, "256", &stream);
  AgentFrameReader reader;
  reader.feed(stream.substr(0, 10));
  AgentFrame f;
  std::vector<std::string> got;
  auto take = [&] {
    while (true) {
      auto r = reader.next(&f);
      ASSERT_TRUE(r.ok()) << r.status().toString();
      if (!r.value()) return;
      got.push_back(std::string(1, f.kind) + std::to_string(f.rank) + ":" + f.payload);
    }
  };
  take();
  reader.feed(stream.substr(10));
  take();
  EXPECT_EQ(got, (Words{"S3:1234", "O3:" + std::string("out\0put", 7), "X3:256"}));
  AgentFrameReader bad;
  std::string junk;
  appendAgentFrame('Q', 0, "", &junk);
  bad.feed(junk);
  EXPECT_FALSE(bad.next(&f).ok());
}

}  // namespace
}  // namespace tutti::run
