#include "run/output.h"

#include <gtest/gtest.h>

#include <string>

namespace tutti::run {
namespace {

// Feeds `input` in pieces of `chunk` bytes (the way pipe reads cut it) and flushes.
std::string prefixAll(const std::string& input, std::size_t chunk, std::size_t maxLine = 64) {
  LinePrefixer prefixer("[3] ", maxLine);
  std::string out;
  for (std::size_t i = 0; i < input.size(); i += chunk) {
    prefixer.feed(std::string_view(input).substr(i, chunk), &out);
    EXPECT_LE(prefixer.pendingBytes(), maxLine);
  }
  prefixer.flush(&out);
  EXPECT_EQ(prefixer.pendingBytes(), 0u);
  return out;
}

TEST(LinePrefixer, PrefixesEveryCompleteLine) {
  LinePrefixer prefixer("[0] ");
  std::string out;
  prefixer.feed("alpha\nbeta\n", &out);
  EXPECT_EQ(out, "[0] alpha\n[0] beta\n");
  EXPECT_EQ(prefixer.pendingBytes(), 0u);
}

TEST(LinePrefixer, HoldsPartialLineUntilItsNewline) {
  LinePrefixer prefixer("[12] ");
  std::string out;
  prefixer.feed("hel", &out);
  EXPECT_EQ(out, "");
  EXPECT_EQ(prefixer.pendingBytes(), 3u);
  prefixer.feed("lo wor", &out);
  EXPECT_EQ(out, "");
  prefixer.feed("ld\nnext", &out);
  EXPECT_EQ(out, "[12] hello world\n");
  EXPECT_EQ(prefixer.pendingBytes(), 4u);
}

TEST(LinePrefixer, FlushEmitsPartialLastLineWithNewline) {
  LinePrefixer prefixer("[1] ");
  std::string out;
  prefixer.feed("done\ntail", &out);
  prefixer.flush(&out);
  EXPECT_EQ(out, "[1] done\n[1] tail\n");
  // A second flush has nothing left to emit.
  prefixer.flush(&out);
  EXPECT_EQ(out, "[1] done\n[1] tail\n");
}

TEST(LinePrefixer, EmptyLinesArePrefixedToo) {
  LinePrefixer prefixer("[2] ");
  std::string out;
  prefixer.feed("\n\nx\n", &out);
  EXPECT_EQ(out, "[2] \n[2] \n[2] x\n");
}

TEST(LinePrefixer, EmptyPrefixStillCutsWholeLines) {
  LinePrefixer prefixer("");
  std::string out;
  prefixer.feed("a\nb", &out);
  EXPECT_EQ(out, "a\n");
  prefixer.flush(&out);
  EXPECT_EQ(out, "a\nb\n");
}

TEST(LinePrefixer, ResultDoesNotDependOnHowInputIsCut) {
  std::string input;
  for (int i = 0; i < 50; ++i) input += "line " + std::to_string(i) + std::string(i % 7, '.') + "\n";
  input += "unterminated";
  const std::string whole = prefixAll(input, input.size());
  for (std::size_t chunk : {1u, 2u, 3u, 7u, 64u, 65u, 1000u}) {
    EXPECT_EQ(prefixAll(input, chunk), whole) << "chunk " << chunk;
  }
}

TEST(LinePrefixer, SplitsLinesLongerThanTheBound) {
  LinePrefixer prefixer("[0] ", 4);
  std::string out;
  prefixer.feed("abcdefghij\n", &out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n[0] ij\n");
  EXPECT_EQ(prefixer.pendingBytes(), 0u);
}

TEST(LinePrefixer, LineOfExactlyTheBoundIsNotSplit) {
  LinePrefixer prefixer("[0] ", 4);
  std::string out;
  prefixer.feed("abcd\n", &out);
  EXPECT_EQ(out, "[0] abcd\n");
  // The same when the newline arrives in a later read than the line's bytes.
  out.clear();
  prefixer.feed("wxyz", &out);
  EXPECT_EQ(out, "");
  EXPECT_EQ(prefixer.pendingBytes(), 4u);
  prefixer.feed("\n", &out);
  EXPECT_EQ(out, "[0] wxyz\n");
}

TEST(LinePrefixer, LongLineFedByteByByteIsSplitAtTheBound) {
  const std::string input = std::string(10, 'x') + "\n";
  EXPECT_EQ(prefixAll(input, 1, 4), "[3] xxxx\n[3] xxxx\n[3] xx\n");
}

TEST(LinePrefixer, BufferNeverExceedsTheBoundWithoutNewlines) {
  LinePrefixer prefixer("", LinePrefixer::kDefaultMaxLineBytes);
  std::string out;
  const std::string chunk(10000, 'y');
  for (int i = 0; i < 100; ++i) {
    prefixer.feed(chunk, &out);
    ASSERT_LE(prefixer.pendingBytes(), LinePrefixer::kDefaultMaxLineBytes);
  }
  prefixer.flush(&out);
  // One million bytes come out as full-size pieces plus the remainder, nothing lost.
  const std::size_t pieces = (1000000 + LinePrefixer::kDefaultMaxLineBytes - 1) /
                             LinePrefixer::kDefaultMaxLineBytes;
  EXPECT_EQ(out.size(), 1000000 + pieces);
  EXPECT_EQ(out.find_first_not_of("y\n"), std::string::npos);
}

}  // namespace
}  // namespace tutti::run
