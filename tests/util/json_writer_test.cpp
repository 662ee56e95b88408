#include "util/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace {

TEST(JsonWriter, PrettyAndCompactAreDeterministic) {
  auto build = [](int indent) {
    cg::JsonWriter w(indent);
    w.begin_object().field("b", 1).key("a").begin_array().value("x").value(true).null().end_array();
    w.key("e").begin_object().end_object().key("f").begin_array().end_array().end_object();
    return w.take();
  };
  EXPECT_EQ(build(0), R"({"b":1,"a":["x",true,null],"e":{},"f":[]})");
  EXPECT_EQ(build(2),
            "{\n  \"b\": 1,\n  \"a\": [\n    \"x\",\n    true,\n    null\n  ],\n"
            "  \"e\": {},\n  \"f\": []\n}");
}

TEST(JsonWriter, EscapesEverythingAScriptTagOrParserWouldChokeOn) {
  cg::JsonWriter w(0);
  w.value(std::string("q\"\\\n\x01\x7f\xe2\x80\xa8<"));
  EXPECT_EQ(w.str(), "\"q\\\"\\\\\\n\\u0001\\u007f\\u2028<\"");
}

// Plain runs between escapes are kept whole, and a multi-byte character that starts like a line
// separator (`≥`, U+2265: e2 89 a5) is written as it is.
TEST(JsonWriter, PlainRunsAndOtherCharactersKeepTheirBytes) {
  cg::JsonWriter w(0);
  w.value(std::string("ab\"cd≥ef\\\xe2\x80\xa9gh\xe2"));
  EXPECT_EQ(w.str(), "\"ab\\\"cd≥ef\\\\\\u2029gh\xe2\"");
}

TEST(JsonWriter, DoublesRoundTripAndNonFiniteBecomesNull) {
  cg::JsonWriter w(0);
  w.begin_array().value(0.1).value(2.0).value(std::nan("")).value(-1e300).end_array();
  EXPECT_EQ(w.str(), "[0.1,2.0,null,-1e+300]");
}

TEST(JsonWriter, MisuseIsALogicErrorNotCorruptOutput) {
  cg::JsonWriter w;
  w.begin_object();
  EXPECT_THROW(w.value(1), std::logic_error);
  EXPECT_THROW(w.end_array(), std::logic_error);
}

}  // namespace
