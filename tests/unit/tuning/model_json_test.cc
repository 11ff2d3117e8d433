// The machine model's JSON (tuning/model_json.h): exact round trips, defaults for what a
// file leaves out, and bad files refused naming the line and the key.
#include "tuning/model_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace tutti::tuning {
namespace {

MachineModel sample() {
  MachineModel m = defaults();
  for (int c = 0; c < kNumPathClasses; ++c)
    m.paths[static_cast<std::size_t>(c)] = {1e-7 * (c + 1) / 3, 1.0 / (7e9 + c), 3e-8 * (c + 2)};
  for (int t = 0; t < kNumDataTypes; ++t) m.gamma[static_cast<std::size_t>(t)] = 1.0 / (3e9 + 17 * t);
  m.copyBeta = 1.0 / 11e9;
  m.hostMemoryBandwidth = 23.5e9;
  m.nicBandwidth = 3.125e9;
  m.nicBurstBytes = 1250000;
  m.nicLineBandwidth = 4.1e8;
  m.coresPerHost = 48;
  m.flatAlpha = 2.2e-7;
  m.flatBeta = 1.0 / 9e9;
  m.messageOverhead = 1.7e-7;
  m.switchCost = 2.9e-6;
  m.yieldCost = 1.3e-6;
  m.llcBytes = 96u << 20;
  m.cacheBandwidth = 1.0 / 7e-12;
  m.loopback = {1.5e-6, 1.0 / 3.3e9, 4.1e-6};
  m.streamingStoresFrom = 3u << 20;
  m.ringBlocksFrom = (std::uint64_t{1} << 40) + 1;
  m.pairAllReduceRingsUpTo = 0;
  m.buffersAgreedFrom = 640u << 10;
  return m;
}

void expectSame(const MachineModel& a, const MachineModel& b) {
  for (int c = 0; c < kNumPathClasses; ++c) {
    EXPECT_EQ(a.paths[c].alpha, b.paths[c].alpha) << c;
    EXPECT_EQ(a.paths[c].beta, b.paths[c].beta) << c;
    EXPECT_EQ(a.paths[c].overhead, b.paths[c].overhead) << c;
  }
  EXPECT_EQ(a.gamma, b.gamma);
  EXPECT_EQ(a.copyBeta, b.copyBeta);
  EXPECT_EQ(a.hostMemoryBandwidth, b.hostMemoryBandwidth);
  EXPECT_EQ(a.nicBandwidth, b.nicBandwidth);
  EXPECT_EQ(a.nicBurstBytes, b.nicBurstBytes);
  EXPECT_EQ(a.nicLineBandwidth, b.nicLineBandwidth);
  EXPECT_EQ(a.coresPerHost, b.coresPerHost);
  EXPECT_EQ(a.flatAlpha, b.flatAlpha);
  EXPECT_EQ(a.flatBeta, b.flatBeta);
  EXPECT_EQ(a.messageOverhead, b.messageOverhead);
  EXPECT_EQ(a.switchCost, b.switchCost);
  EXPECT_EQ(a.yieldCost, b.yieldCost);
  EXPECT_EQ(a.llcBytes, b.llcBytes);
  EXPECT_EQ(a.cacheBandwidth, b.cacheBandwidth);
  EXPECT_EQ(a.loopback.alpha, b.loopback.alpha);
  EXPECT_EQ(a.loopback.beta, b.loopback.beta);
  EXPECT_EQ(a.loopback.overhead, b.loopback.overhead);
  EXPECT_EQ(a.streamingStoresFrom, b.streamingStoresFrom);
  EXPECT_EQ(a.ringBlocksFrom, b.ringBlocksFrom);
  EXPECT_EQ(a.pairAllReduceRingsUpTo, b.pairAllReduceRingsUpTo);
  EXPECT_EQ(a.buffersAgreedFrom, b.buffersAgreedFrom);
}

std::string errorOf(const std::string& text) {
  auto model = fromJson(text);
  EXPECT_FALSE(model.ok()) << text;
  return model.ok() ? "" : model.status().message();
}

TEST(ModelJson, RoundTripsEveryParameterExactly) {
  const MachineModel m = sample();
  ModelFileInfo info;
  auto back = fromJson(toJson(m, {"1.2.3", "boot/net:[1]"}), &info);
  ASSERT_TRUE(back.ok()) << back.status().message();
  expectSame(m, *back);
  EXPECT_EQ(info.library, "1.2.3");
  EXPECT_EQ(info.host, "boot/net:[1]");
  EXPECT_EQ(info.measured, 0);  // not written: unknown
  EXPECT_TRUE(info.complete);
  EXPECT_EQ(back->origin, "defaults");  // the reader's caller says where it came from
  ASSERT_TRUE(fromJson(toJson(m, {"1.2.3", "h", 1796000000, false}), &info).ok());
  EXPECT_EQ(info.measured, 1796000000);
  EXPECT_FALSE(info.complete);
}

TEST(ModelJson, TheDefaultsAreCompleteAndPositive) {
  const MachineModel d = defaults();
  for (const LinkCost& l : d.paths) {
    EXPECT_GT(l.alpha, 0);
    EXPECT_GT(l.beta, 0);
    EXPECT_GT(l.overhead, 0);
  }
  for (const double g : d.gamma) EXPECT_GT(g, 0);
  EXPECT_GT(d.copyBeta, 0);
  EXPECT_GT(d.hostMemoryBandwidth, 0);
  EXPECT_GT(d.nicBandwidth, 0);
  EXPECT_GT(d.messageOverhead, 0);
  EXPECT_GT(d.switchCost, 0);
  EXPECT_GT(d.llcBytes, 0u);
  EXPECT_GT(d.cacheBandwidth, d.hostMemoryBandwidth);
  EXPECT_GT(d.loopback.beta, 0);
  EXPECT_EQ(d.origin, "defaults");
  // Nearer paths cost less.
  EXPECT_LT(d.path(PathClass::kSameL3).alpha, d.path(PathClass::kSameHost).alpha);
  EXPECT_LT(d.path(PathClass::kSameHost).alpha, d.path(PathClass::kNetwork).alpha);
}

// The thresholds measured on one machine default to the values measured there, which the
// code used before they were parameters (docs/host-rules.md, "Model parameters"), and a
// file may set them in whole bytes.
TEST(ModelJson, MeasuredThresholdsDefaultToTheirValuesAndAreWholeBytes) {
  const MachineModel d = defaults();
  EXPECT_EQ(d.streamingStoresFrom, std::uint64_t{8} << 20);
  EXPECT_EQ(d.ringBlocksFrom, std::uint64_t{32} << 20);
  EXPECT_EQ(d.pairAllReduceRingsUpTo, std::uint64_t{4} << 20);
  EXPECT_EQ(d.buffersAgreedFrom, std::uint64_t{1} << 20);
  const std::string head = R"({"format": "tutti-machine-model", "version": 1, )";
  auto m = fromJson(head + R"("streaming_stores_from": 33554432, "buffers_agreed_from": 0})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->streamingStoresFrom, std::uint64_t{32} << 20);
  EXPECT_EQ(m->buffersAgreedFrom, 0u);
  EXPECT_EQ(m->ringBlocksFrom, d.ringBlocksFrom);
  EXPECT_EQ(errorOf(head + R"("ring_blocks_from": 1.5})"),
            "line 1: ring_blocks_from: a whole number of bytes expected, found 1.5");
  EXPECT_EQ(errorOf(head + R"("pair_all_reduce_rings_up_to": -4})"),
            "line 1: pair_all_reduce_rings_up_to: a whole number of bytes expected, found -4");
  EXPECT_FALSE(errorOf(head + R"("streaming_stores_from": "8M"})").empty());
}

TEST(ModelJson, PathClassNamesReadBack) {
  for (int c = 0; c < kNumPathClasses; ++c)
    EXPECT_EQ(parsePathClass(pathClassName(static_cast<PathClass>(c))), static_cast<PathClass>(c));
  EXPECT_FALSE(parsePathClass("same_rack"));
}

TEST(ModelJson, KeysLeftOutKeepTheDefaults) {
  auto m = fromJson(R"({"format": "tutti-machine-model", "version": 1,
                        "paths": {"network": {"beta": 8e-10}},
                        "gamma": {"float32": 1e-10}, "cores_per_host": 8})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const MachineModel d = defaults();
  EXPECT_EQ(m->path(PathClass::kNetwork).beta, 8e-10);
  EXPECT_EQ(m->path(PathClass::kNetwork).alpha, d.path(PathClass::kNetwork).alpha);
  EXPECT_EQ(m->path(PathClass::kSameL3).beta, d.path(PathClass::kSameL3).beta);
  EXPECT_EQ(m->gamma[static_cast<int>(DataType::kFloat32)], 1e-10);
  EXPECT_EQ(m->gamma[static_cast<int>(DataType::kInt8)], d.gamma[static_cast<int>(DataType::kInt8)]);
  EXPECT_EQ(m->coresPerHost, 8);
  EXPECT_EQ(m->copyBeta, d.copyBeta);
  EXPECT_EQ(m->streamingStoresFrom, d.streamingStoresFrom);
  EXPECT_EQ(m->buffersAgreedFrom, d.buffersAgreedFrom);
}

TEST(ModelJson, BadFilesNameTheLineAndTheKey) {
  const std::string head = "{\"format\": \"tutti-machine-model\", \"version\": 1,\n";
  EXPECT_EQ(errorOf(head + "\"copy_beta\": -1}"), "line 2: copy_beta: a number from 0 expected, found -1");
  EXPECT_EQ(errorOf(head + "\"paths\": {\"same_l3\": {\"alfa\": 1}}}"),
            "line 2: paths.same_l3.alfa: unknown key (known: alpha, beta, overhead)");
  EXPECT_EQ(errorOf(head + "\"paths\": {\"same_rack\": {}}}"),
            "line 2: paths.same_rack: unknown key (known: same_l3, same_socket, same_host, network)");
  EXPECT_EQ(errorOf(head + "\"gamma\": {\"float128\": 1}}").rfind("line 2: gamma.float128: unknown key", 0), 0u);
  EXPECT_EQ(errorOf(head + "\n\"nic_speed\": 1}").rfind("line 3: nic_speed: unknown key (known: format", 0), 0u);
  EXPECT_EQ(errorOf(head + "\"cores_per_host\": 2.5}"),
            "line 2: cores_per_host: an integer from 1 to 1000000 expected, found 2.5");
  EXPECT_EQ(errorOf(head + "\"cores_per_host\": 0}"),
            "line 2: cores_per_host: an integer from 1 to 1000000 expected, found 0");
  EXPECT_EQ(errorOf(head + "\"flat_alpha\": \"fast\"}"),
            "line 2: flat_alpha: a number expected, found a string");
  EXPECT_EQ(errorOf(head + "\"paths\": []}"), "line 2: paths: an object expected, found an array");
  EXPECT_EQ(errorOf(head + "\"llc_bytes\": 1.5}"),
            "line 2: llc_bytes: a whole number of bytes expected, found 1.5");
  EXPECT_EQ(errorOf(head + "\"loopback\": {\"latency\": 1}}"),
            "line 2: loopback.latency: unknown key (known: alpha, beta, overhead)");
  EXPECT_EQ(errorOf(head + "\"switch_cost\": -1}"),
            "line 2: switch_cost: a number from 0 expected, found -1");
  EXPECT_EQ(errorOf(head + "\"measured\": 1.5}"),
            "line 2: measured: whole seconds since the epoch expected, found 1.5");
  EXPECT_EQ(errorOf(head + "\"complete\": 1}"), "line 2: complete: a boolean expected, found a number");
  EXPECT_EQ(errorOf(R"({"format": "tutti-topology", "version": 1})"),
            "line 1: format: \"tutti-topology\", not a tutti machine model (\"tutti-machine-model\")");
  EXPECT_EQ(errorOf("{\"format\": \"tutti-machine-model\",\n \"version\": 2}"),
            "line 2: version: 2 is not a version this library reads (1)");
  EXPECT_EQ(errorOf(R"({"version": 1})"), "line 1: format: missing (\"tutti-machine-model\" expected)");
  EXPECT_EQ(errorOf(R"({"format": "tutti-machine-model"})"), "line 1: version: missing (1 expected)");
  EXPECT_EQ(errorOf("[]"), "line 1: the document: an object expected, found an array");
  EXPECT_FALSE(errorOf(head + "\"copy_beta\": 1,").empty());  // truncated
  EXPECT_FALSE(errorOf(head + "\"copy_beta\": 1, \"copy_beta\": 2}").empty());  // twice
}

TEST(ModelJson, FilesRoundTripAndErrorsNameTheFile) {
  const std::string path = ::testing::TempDir() + "tutti_model_json_test.json";
  ASSERT_TRUE(writeModelFile(path, sample(), {"9.9.9", "h"}).ok());
  ModelFileInfo info;
  auto back = loadModelFile(path, &info);
  ASSERT_TRUE(back.ok()) << back.status().message();
  expectSame(sample(), *back);
  EXPECT_EQ(back->origin, "file " + path);
  EXPECT_EQ(info.library, "9.9.9");
  {
    std::ofstream out(path, std::ios::trunc);
    out << "{\"format\": \"tutti-machine-model\", \"version\": 1,\n\"beta\": 1}\n";
  }
  auto bad = loadModelFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model file " + path), std::string::npos);
  EXPECT_NE(bad.status().message().find("line 2: beta: unknown key"), std::string::npos);
  std::remove(path.c_str());
  auto missing = loadModelFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot be read"), std::string::npos);
  EXPECT_FALSE(writeModelFile("/proc/no/such/dir/model.json", sample()).ok());
}

}  // namespace
}  // namespace tutti::tuning
