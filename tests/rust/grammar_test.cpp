#include "rust/grammar.hpp"

#include <gtest/gtest.h>

#include "rust/parse.hpp"

namespace {

TEST(Grammar, LinkedGrammarLoadsInLinkedRuntime) {
  auto abi = cg::rust::linked_grammar_abi();
  EXPECT_EQ(abi.grammar, 14u) << "tree-sitter-rust@0.23.3 is ABI 14";
  EXPECT_FALSE(cg::rust::grammar_abi_problem(abi).has_value());
}

TEST(Grammar, MismatchNamesBothVersions) {
  auto problem = cg::rust::grammar_abi_problem({15, 13, 14});
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("ABI version 15"), std::string::npos) << *problem;
  EXPECT_NE(problem->find("13 to 14"), std::string::npos) << *problem;
}

TEST(Parse, CleanFileHasNoProblems) {
  auto f =
      cg::rust::ParsedFile::parse("src/lib.rs", "pub struct A { x: u32 }\nfn f() -> u32 { 1 }\n");
  EXPECT_TRUE(f.ok());
}

TEST(Parse, ErrorsCarryLineAndColumn) {
  auto f = cg::rust::ParsedFile::parse("src/lib.rs", "fn ok() {}\nfn broken( {\n");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.problems().front().line, 2u);
}

TEST(Parse, DeeplyNestedExpressionDoesNotOverflowTheStack) {
  std::string src = "fn f() -> i32 { ";
  for (int i = 0; i < 20000; ++i)
    src += "(";
  src += "1";
  for (int i = 0; i < 20000; ++i)
    src += ")";
  src += " }\n";
  auto f = cg::rust::ParsedFile::parse("src/deep.rs", std::move(src));
  EXPECT_TRUE(f.ok());
}

}  // namespace
