#include "analysis/symbolic.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "rust/crate.hpp"
#include "rust/parse.hpp"

namespace {

using cg::analysis::SymValue;
using cg::rust::Body;
using cg::rust::NodeId;

// Binds `cfg.<field>` from a map (as config binding will from config.json) and locals by name.
class MapContext : public cg::analysis::EvalContext {
 public:
  std::map<std::string, SymValue> fields, locals;
  std::optional<SymValue> lookup(std::string_view name) override {
    auto it = locals.find(std::string(name));
    if (it == locals.end()) return std::nullopt;
    return it->second;
  }
  std::optional<SymValue> field(const Body& b, NodeId base, std::string_view f) override {
    if (b.source(base) != "cfg") return std::nullopt;
    auto it = fields.find(std::string(f));
    if (it == fields.end()) return std::nullopt;
    return it->second;
  }
  std::optional<SymValue> method(const Body&, NodeId, std::string_view,
                                 const std::vector<SymValue>&) override {
    return std::nullopt;
  }
};

// `expr` as the value of `let x = ..;` in a one-function crate, lowered and evaluated.
SymValue eval(const std::string& expr, MapContext& ctx) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("cg_symbolic_" + std::to_string(getpid()));
  fs::create_directories(dir / "src");
  std::ofstream(dir / "src/lib.rs", std::ios::binary) << "fn f() { let x = " + expr + "; }\n";
  auto loaded = cg::rust::load_crate(dir, {});
  fs::remove_all(dir);
  const auto& c = loaded.crate;
  auto fns = c.find("f");
  EXPECT_EQ(fns.size(), 1u) << expr;
  const Body& b = c.lowered(fns.at(0));
  NodeId let = b.kid(b.root, 0);
  EXPECT_EQ(b[let].kind, cg::rust::Kind::Let) << expr;
  return cg::analysis::evaluate(b, b[let].b, ctx);
}

MapContext llama() {
  MapContext c;
  c.fields["hidden_size"] = SymValue::of_int(4096);
  c.fields["num_attention_heads"] = SymValue::of_int(32);
  c.fields["num_key_value_heads"] = SymValue::none();
  c.fields["rms_norm_eps"] = SymValue::of_real(1e-5);
  c.fields["tie_word_embeddings"] = SymValue::of_bool(false);
  return c;
}

TEST(Symbolic, ConfigArithmeticEvaluates) {
  auto c = llama();
  EXPECT_EQ(eval("cfg.hidden_size / cfg.num_attention_heads", c).display(), "128");
  EXPECT_EQ(eval("cfg.num_key_value_heads.unwrap_or(cfg.num_attention_heads) * 128", c).display(),
            "4096");
  EXPECT_EQ(eval("(cfg.hidden_size as f64).sqrt() > 0.0", c).kind, SymValue::Kind::symbolic)
      << "sqrt is not a std helper we evaluate";
  EXPECT_EQ(eval("10_000.0f32", c).display(), "10000");
  EXPECT_EQ(eval("2 * 1_024usize", c).display(), "2048");
  EXPECT_EQ(eval("if cfg.tie_word_embeddings { 0 } else { cfg.hidden_size }", c).display(), "4096");
  EXPECT_EQ(eval("!cfg.tie_word_embeddings && true", c).display(), "true");
}

TEST(Symbolic, UnknownsStaySymbolicWithTheirTextAndReason) {
  auto c = llama();
  auto v = eval("cfg.intermediate_size * 2", c);
  EXPECT_EQ(v.kind, SymValue::Kind::symbolic);
  EXPECT_EQ(v.text, "cfg.intermediate_size * 2");
  EXPECT_NE(v.reason.find("cfg.intermediate_size"), std::string::npos) << v.reason;
  auto z = eval("cfg.hidden_size / 0", c);
  EXPECT_EQ(z.kind, SymValue::Kind::symbolic);
  EXPECT_EQ(z.reason, "division by zero");
  auto o = eval("9223372036854775807 + 1", c);
  EXPECT_EQ(o.reason, "integer overflow");
}

TEST(Symbolic, DeepNestingIsBoundedNotACrash) {
  auto c = llama();
  std::string e = "1";
  for (int i = 0; i < 3000; ++i)
    e = "(" + e + " + 1)";
  auto v = eval(e, c);
  EXPECT_EQ(v.kind, SymValue::Kind::symbolic);
  EXPECT_EQ(v.reason, "expression nested too deeply");
}

TEST(Symbolic, Literals) {
  EXPECT_EQ(cg::analysis::parse_literal("integer_literal", "0x10")->integer, 16);
  EXPECT_EQ(cg::analysis::parse_literal("integer_literal", "7u32")->integer, 7);
  EXPECT_DOUBLE_EQ(cg::analysis::parse_literal("float_literal", "1e-5")->real, 1e-5);
  EXPECT_FALSE(cg::analysis::parse_literal("integer_literal", "99999999999999999999"));
}

}  // namespace

namespace {

TEST(Symbolic, BooleanIdentitiesDecideWithoutTheUnknownSide) {
  auto c = llama();
  EXPECT_EQ(eval("cfg.unbound && false", c).display(), "false");
  EXPECT_EQ(eval("cfg.unbound || true", c).display(), "true");
  auto same = eval("cfg.unbound && true", c);
  EXPECT_EQ(same.kind, SymValue::Kind::symbolic);
  EXPECT_EQ(same.text, "cfg.unbound");
}

TEST(Symbolic, SymbolicOperandsComposeTheirTexts) {
  auto c = llama();
  c.locals["heads"] = SymValue::symbolic("cfg.n_head", "unbound");
  auto v = eval("heads * (cfg.hidden_size / heads)", c);
  EXPECT_EQ(v.kind, SymValue::Kind::symbolic);
  EXPECT_EQ(v.text, "cfg.n_head * (4096 / cfg.n_head)");
}

}  // namespace

namespace {

TEST(Symbolic, MessagesNameTheConstructAsWritten) {
  auto c = llama();
  EXPECT_EQ(eval("x.get::<u32>(1)", c).reason, "call of `x.get::<u32>`");
  EXPECT_EQ(eval("Tensor::zeros::<f32>(1)", c).reason, "call of `Tensor::zeros::<f32>`");
  EXPECT_EQ(eval("{ let y = 1; y }", c).reason, "block with statements");
  EXPECT_EQ(eval("{ let y = 1; }", c).reason, "let_declaration not evaluated");
  EXPECT_EQ(eval("if let Some(v) = w { v } else { 2 }", c).reason, "let_condition not evaluated");
  EXPECT_EQ(eval("'c'", c).reason, "char_literal not evaluated");
  EXPECT_EQ(eval("Some(cfg.hidden_size)", c).display(), "4096");
  EXPECT_EQ(eval("Option::None", c).kind, SymValue::Kind::none);
}

}  // namespace
