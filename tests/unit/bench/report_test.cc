#include "bench/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace tutti::bench {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// (end column, token) of each whitespace-separated token.
std::vector<std::pair<std::size_t, std::string>> tokens(const std::string& line) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.emplace_back(i, line.substr(start, i - start));
  }
  return out;
}

RowResult sampleRow() {
  RowResult row;
  row.collective = "allreduce";
  row.bytes = 1048576;
  row.count = 262144;
  row.dtype = DataType::kFloat32;
  row.op = ReduceOp::kSum;
  row.root = -1;
  row.algorithm = "ring";
  row.ranks = 4;
  row.iters = 20;
  row.warmupIters = 5;
  row.outOfPlace = PlacementResult{1234.5, 0.85, 1.27, 0};
  row.inPlace = PlacementResult{12.25, 85.6, 128.4, 3};
  return row;
}

TEST(BenchReport, JsonStringEscapes) {
  EXPECT_EQ(jsonString("ring"), "\"ring\"");
  EXPECT_EQ(jsonString(""), "\"\"");
  EXPECT_EQ(jsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonString("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(jsonString(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(jsonString(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(jsonString("\xc2\xb5s /"), "\"\xc2\xb5s /\"");  // UTF-8 and '/' pass through
  EXPECT_EQ(jsonString("\x7f"), "\"\x7f\"");
}

TEST(BenchReport, JsonNumbers) {
  EXPECT_EQ(jsonNumber(1.5), "1.5");
  EXPECT_EQ(jsonNumber(0), "0");
  EXPECT_EQ(jsonNumber(123456.789), "123456.789");
  EXPECT_EQ(jsonNumber(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(jsonNumber(std::numeric_limits<double>::quiet_NaN()), "null");
}

TEST(BenchReport, TimeColumnLikeNcclTests) {
  EXPECT_EQ(formatTime(5.125), "   5.12");
  EXPECT_EQ(formatTime(99.5), "  99.50");
  EXPECT_EQ(formatTime(250.25), "  250.2");
  EXPECT_EQ(formatTime(12345.6), "  12346");
  EXPECT_EQ(formatTime(0), "   0.00");
}

TEST(BenchReport, RowHasEveryColumnUnderItsHeader) {
  const std::vector<std::string> header = lines(formatColumnHeader());
  ASSERT_EQ(header.size(), 3u);
  for (const std::string& line : header) EXPECT_EQ(line[0], '#');
  EXPECT_NE(header[0].find("out-of-place"), std::string::npos);
  EXPECT_LT(header[0].find("out-of-place"), header[0].find("in-place", 40));

  const std::string row = formatRow(sampleRow());
  ASSERT_EQ(row.back(), '\n');
  const auto names = tokens(header[1]);
  const auto cells = tokens(row.substr(0, row.size() - 1));
  const std::vector<std::string> want = {"1048576", "262144", "float32", "sum",   "-1",
                                         "1234.5",  "0.85",   "1.27",    "0",     "12.25",
                                         "85.60",   "128.40", "3",       "ring"};
  ASSERT_EQ(cells.size(), want.size()) << row;
  ASSERT_EQ(names.size(), want.size() + 1) << header[1];  // plus the leading '#'
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(cells[i].second, want[i]) << i;
    // Columns are right-aligned, the algorithm name left-aligned after them.
    if (i + 1 < want.size()) {
      EXPECT_EQ(cells[i].first, names[i + 1].first) << names[i + 1].second;
    } else {
      EXPECT_EQ(cells[i].first - cells[i].second.size(),
                names[i + 1].first - names[i + 1].second.size());
    }
  }
}

TEST(BenchReport, UncheckedRowsSayNotApplicable) {
  RowResult row = sampleRow();
  row.op.reset();
  row.outOfPlace.wrong.reset();
  row.inPlace->wrong.reset();
  const auto cells = tokens(formatRow(row));
  EXPECT_EQ(cells[3].second, "none");
  EXPECT_EQ(cells[8].second, "N/A");
  EXPECT_EQ(cells[12].second, "N/A");
}

TEST(BenchReport, RowsWithoutDataOrInPlaceForm) {
  // A barrier: no type, no in-place form, nothing checked.
  RowResult row = sampleRow();
  row.collective = "barrier";
  row.bytes = 0;
  row.count = 0;
  row.sized = false;
  row.op.reset();
  row.outOfPlace.wrong.reset();
  row.inPlace.reset();
  const std::string text = formatRow(row);
  const auto cells = tokens(text.substr(0, text.size() - 1));
  ASSERT_EQ(cells.size(), 14u);
  EXPECT_EQ(cells[2].second, "none");
  EXPECT_EQ(cells[3].second, "none");
  for (std::size_t i = 9; i < 13; ++i) EXPECT_EQ(cells[i].second, "N/A") << i;
  EXPECT_EQ(cells[13].second, "ring");
  const std::vector<std::string> json = lines(formatJson({row}));
  ASSERT_EQ(json.size(), 3u);  // the out-of-place object only
  EXPECT_NE(json[1].find("\"collective\": \"barrier\""), std::string::npos) << json[1];
  EXPECT_NE(json[1].find("\"dtype\": null"), std::string::npos) << json[1];
  EXPECT_NE(json[1].find("\"in_place\": false"), std::string::npos) << json[1];
  EXPECT_NE(json[1].find("\"wrong\": null}"), std::string::npos) << json[1];
}

TEST(BenchReport, Summary) {
  EXPECT_EQ(formatSummary(0, true, 12.5),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5\n#\n");
  EXPECT_NE(formatSummary(7, true, 1).find("values : 7 FAILED\n"), std::string::npos);
  EXPECT_NE(formatSummary(0, false, 1).find("0 OK (not checked: -c 0)"), std::string::npos);
}

TEST(BenchReport, SettingsNameTheRun) {
  BenchOptions options;
  options.minBytes = 8;
  options.maxBytes = 16 << 20;
  options.stepFactor = 4;
  options.commandLine = "tutti-bench allreduce -b 8 -e 16M -f 4";
  const std::string text = formatSettings(options, "allreduce", 4);
  EXPECT_NE(text.find("# Collective allreduce  ranks 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("minBytes 8 maxBytes 16777216 step: 4(factor) warmup iters: 5 iters: 20 "
                      "validation: 1 average: 1(avg) algorithm: auto"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# Command: tutti-bench allreduce -b 8 -e 16M -f 4\n"), std::string::npos);
  options.stepFactor = 1;
  options.algorithms = {"ring"};
  const std::string added = formatSettings(options, "allreduce", 2);
  EXPECT_NE(added.find("step: 1048576(bytes)"), std::string::npos) << added;
  EXPECT_NE(added.find("algorithm: ring"), std::string::npos) << added;
  for (const std::string& line : lines(added)) EXPECT_EQ(line[0], '#');
}

TEST(BenchReport, JsonHasOneObjectPerRowAndPlacement) {
  RowResult row = sampleRow();
  row.algorithm = "my \"ring\"";
  row.inPlace->wrong.reset();
  const std::string json = formatJson({row});
  const std::vector<std::string> text = lines(json);
  ASSERT_EQ(text.size(), 4u) << json;
  EXPECT_EQ(text[0], "[");
  EXPECT_EQ(text[1],
            "  {\"collective\": \"allreduce\", \"bytes\": 1048576, \"count\": 262144, "
            "\"dtype\": \"float32\", \"op\": \"sum\", \"root\": -1, \"algorithm\": "
            "\"my \\\"ring\\\"\", \"in_place\": false, \"ranks\": 4, \"iters\": 20, "
            "\"warmup_iters\": 5, \"time_average\": \"avg\", \"time_us\": 1234.5, "
            "\"algbw_gbs\": 0.85, \"busbw_gbs\": 1.27, \"wrong\": 0},");
  EXPECT_NE(text[2].find("\"in_place\": true"), std::string::npos);
  EXPECT_NE(text[2].find("\"time_us\": 12.25"), std::string::npos);
  EXPECT_NE(text[2].find("\"wrong\": null}"), std::string::npos);
  EXPECT_EQ(text[3], "]");
  EXPECT_EQ(formatJson({}), "[\n]\n");
  row.op.reset();
  EXPECT_NE(formatJson({row}).find("\"op\": null"), std::string::npos);
}

TEST(BenchReport, ACandidateOfSeveralIsNamedInTheRowAndTheJson) {
  RowResult row = sampleRow();
  row.algorithm = "ring";
  EXPECT_EQ(formatJson({row}).find("candidate"), std::string::npos);  // one candidate
  row.candidate = "auto";
  EXPECT_EQ(tokens(formatRow(row)).back().second, "auto:ring\n");  // the library chose ring
  EXPECT_NE(formatJson({row}).find("\"algorithm\": \"ring\", \"candidate\": \"auto\","),
            std::string::npos);
  row.candidate = "ring";
  EXPECT_EQ(tokens(formatRow(row)).back().second, "ring\n");  // forced
  BenchOptions options;
  options.algorithms = {"", "ring", "rabenseifner"};
  const std::string settings = formatSettings(options, "allreduce", 4);
  EXPECT_NE(settings.find("algorithm: auto,ring,rabenseifner "), std::string::npos) << settings;
  EXPECT_NE(settings.find("# candidates: 3 in this one run, each size's timed calls taking "
                          "turns in up to 5 blocks"),
            std::string::npos)
      << settings;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(BenchReport, WritesFilesWhole) {
  const std::string path = testing::TempDir() + "bench_report_test.json";
  ASSERT_TRUE(writeFileAtomically(path, "[1]\n").ok());
  EXPECT_EQ(readFile(path), "[1]\n");
  ASSERT_TRUE(writeFileAtomically(path, "[2]\n").ok());
  EXPECT_EQ(readFile(path), "[2]\n");
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
  std::remove(path.c_str());

  const Status missing = writeFileAtomically("/nonexistent-dir/x.json", "[]");
  EXPECT_EQ(missing.code(), ErrorCode::kSystemError);
  EXPECT_NE(missing.message().find("/nonexistent-dir/x.json.tmp"), std::string::npos);
}

}  // namespace
}  // namespace tutti::bench
