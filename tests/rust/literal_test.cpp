// Rust string literals decode as rustc decodes them: a key written `"quo\"te"` is `quo"te`, and a
// literal rustc would reject is refused (nullopt), never passed on as raw text.
#include "rust/literal.hpp"

#include <gtest/gtest.h>

namespace {

using cg::rust::decode_string_literal;
using cg::rust::string_literal_length;

TEST(Literal, EscapesDecode) {
  EXPECT_EQ(decode_string_literal(R"("plain.key")"), "plain.key");
  EXPECT_EQ(decode_string_literal(R"("quo\"te")"), "quo\"te");
  EXPECT_EQ(decode_string_literal(R"("\x41\u{42}\u{1F600}")"), "AB\xF0\x9F\x98\x80");
  EXPECT_EQ(decode_string_literal(R"("a\\b\n\t\0")"), std::string("a\\b\n\t\0", 6));
  EXPECT_EQ(decode_string_literal("\"line \\\n    continued\""), "line continued");
}

TEST(Literal, RawAndPrefixedLiterals) {
  EXPECT_EQ(decode_string_literal(R"(r"raw\n")"), "raw\\n");
  EXPECT_EQ(decode_string_literal(R"(r#"a"b"#)"), "a\"b");
  EXPECT_EQ(decode_string_literal(R"(b"\xFF")"), "\xFF");
  EXPECT_EQ(decode_string_literal(R"(br"x")"), "x");
}

TEST(Literal, MalformedLiteralsAreRefused) {
  EXPECT_FALSE(decode_string_literal(R"("\q")"));          // unknown escape
  EXPECT_FALSE(decode_string_literal(R"("\xFF")"));        // above 0x7F in a str
  EXPECT_FALSE(decode_string_literal(R"("\u{D800}")"));    // a surrogate
  EXPECT_FALSE(decode_string_literal(R"("\u{110000}")"));  // past Unicode
  EXPECT_FALSE(decode_string_literal(R"("a\")"));          // the quote is escaped
  EXPECT_FALSE(decode_string_literal(R"(r#"a")"));         // unterminated raw
  EXPECT_FALSE(decode_string_literal("x"));
  EXPECT_FALSE(decode_string_literal(""));
}

TEST(Literal, LengthFindsTheClosingQuote) {
  EXPECT_EQ(string_literal_length(R"("a\"b", x)"), 6u);
  EXPECT_EQ(string_literal_length(R"(r#"a"b"# rest)"), 8u);
  EXPECT_EQ(string_literal_length(R"("open)"), 0u);
  EXPECT_EQ(string_literal_length("x"), 0u);
}

}  // namespace
