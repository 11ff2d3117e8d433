#include "topology/json.h"

#include <gtest/gtest.h>

namespace tutti::topo::json {
namespace {

TEST(Json, ParsesEveryKindOfValue) {
  auto v = parse(R"({"a": [1, -2.5e1, true, false, null], "b": {"c": "x\"\u00e9\n"}})");
  ASSERT_TRUE(v.ok()) << v.status().message();
  const Value* a = v->find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  EXPECT_EQ(a->items[0].number, 1);
  EXPECT_EQ(a->items[1].number, -25);
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_FALSE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].type, Value::Type::kNull);
  EXPECT_EQ(v->find("b")->find("c")->text, "x\"\xc3\xa9\n");
  EXPECT_EQ(v->find("missing"), nullptr);
}

TEST(Json, QuoteRoundTrips) {
  const std::string text = "a\"b\\c\nd\te\x01";
  auto v = parse(quote(text));
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->text, text);
}

TEST(Json, ErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"{\n\"a\": 1,\n\"a\": 2}", "line 3: member \"a\" appears twice"},
           {"{\"a\": 1,\n}", "line 2: a member name (a string) expected"},
           {"[1,\n\n 2", "line 3: ',' or ']' expected in an array"},
           {"{\"a\": 01}", "line 1: a number with a leading zero"},
           {"\"abc", "line 1: a string is not closed"},
           {"[1] 2", "line 1: unexpected text after the document"},
           {"", "line 1: a value expected, the text ended"},
           {"{\"a\":\n tru}", "line 2: a value expected, found 't'"},
           {"\"\\ud800\"", "line 1: an unpaired surrogate in a string"},
       }) {
    auto v = parse(c.text);
    ASSERT_FALSE(v.ok()) << c.text;
    EXPECT_EQ(v.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(v.status().message(), c.message) << c.text;
  }
}

TEST(Json, DeepNestingIsRefusedNotACrash) {
  const std::string deep(100000, '[');
  auto v = parse(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("nested deeper than 64"), std::string::npos);
}

}  // namespace
}  // namespace tutti::topo::json
