// VarBuilder-like types recognised by what they are, not by their name: aliases, wrappers that
// forward VarBuilder's methods to a VarBuilder field, and re-exports; types merely named like a
// VarBuilder, or holding one without forwarding its interface, are not.
#include "analysis/builder_types.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rust/crate.hpp"

namespace {

namespace fs = std::filesystem;

class BuilderTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cg_builder_types_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "src");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << text;
  }
  // The qualified names found, with why, as "name: why" lines.
  std::string found(const std::string& lib) {
    write("src/lib.rs", lib);
    loaded_ = cg::rust::load_crate(dir_, {});
    types_ = cg::analysis::find_builder_types(loaded_.crate);
    std::string out;
    for (std::size_t k = 0; k < types_.items.size(); ++k)
      out += loaded_.crate.items()[types_.items[k]].qualified + ": " + types_.why[k] + "\n";
    return out;
  }
  fs::path dir_;
  cg::rust::LoadedCrate loaded_;
  cg::analysis::BuilderTypes types_;
};

TEST_F(BuilderTypes, AliasesOfAVarBuilderAndOfEachOther) {
  EXPECT_EQ(found("pub type Vb<'a> = candle_nn::VarBuilder<'a>;\n"
                  "pub type Sharded = candle_nn::var_builder::ShardedVarBuilder<'static>;\n"
                  "pub mod inner { pub type Again<'a> = super::Vb<'a>; }\n"
                  "pub type Weights = Vec<f32>;\n"
                  "pub type VarBuilderish = std::collections::HashMap<String, u32>;\n"),
            "Vb: alias of candle_nn::VarBuilder\n"
            "Sharded: alias of candle_nn::var_builder::ShardedVarBuilder\n"
            "inner::Again: alias of super::Vb\n");
  EXPECT_TRUE(types_.names(loaded_.crate, "inner", "&Again<'a>", false));
}

TEST_F(BuilderTypes, WrapperDerefingToItsVarBuilderField) {
  EXPECT_EQ(found("use std::ops::Deref;\n"
                  "pub struct Vb<'a> { vb: candle_nn::VarBuilder<'a>, rank: usize }\n"
                  "impl<'a> Deref for Vb<'a> {\n"
                  "  type Target = candle_nn::VarBuilder<'a>;\n"
                  "  fn deref(&self) -> &Self::Target { &self.vb }\n"
                  "}\n"
                  "pub struct Ranked { rank: usize, names: Vec<String> }\n"
                  "impl std::ops::Deref for Ranked {\n"
                  "  type Target = usize;\n"
                  "  fn deref(&self) -> &usize { &self.rank }\n"
                  "}\n"),
            "Vb: derefs to its VarBuilder field `vb`\n");
  EXPECT_EQ(types_.field, (std::vector<std::string>{"vb"}));
  EXPECT_TRUE(types_.names(loaded_.crate, "", "&Vb<'_>"));
  EXPECT_FALSE(types_.names(loaded_.crate, "", "Ranked"));
}

TEST_F(BuilderTypes, WrapperForwardingVarBuilderMethodsToItsField) {
  EXPECT_EQ(
      found("use candle_nn::var_builder::ShardedVarBuilder;\n"
            "#[derive(Clone)]\n"
            "pub struct EngineVb<'a> { inner: ShardedVarBuilder<'a>, device: u32 }\n"
            "impl<'a> EngineVb<'a> {\n"
            "  pub fn pp<S: ToString>(&self, s: S) -> Self {\n"
            "    Self { inner: self.inner\n      .pp(s), device: self.device }\n  }\n"
            "  pub fn get_with_hints(&self, n: &str) -> u32 { self.inner.get_with_hints(n) }\n"
            "}\n"
            "pub type Alias<'a> = EngineVb<'a>;\n"),
      "EngineVb: forwards `pp` to its VarBuilder field `inner`\n"
      "Alias: alias of EngineVb\n");
  EXPECT_TRUE(types_.names(loaded_.crate, "", "&mut EngineVb<'a>"));
  EXPECT_TRUE(types_.names(loaded_.crate, "", "crate::Alias"));
  EXPECT_TRUE(types_.names(loaded_.crate, "", "ShardedVarBuilder"));
  EXPECT_FALSE(types_.names(loaded_.crate, "", "String"));
  // Aliases only: the wrapper (and an alias of it) forwards through its field `inner`.
  EXPECT_EQ(types_.field, (std::vector<std::string>{"inner", "inner"}));
  EXPECT_FALSE(types_.names(loaded_.crate, "", "&mut EngineVb<'a>", false));
  EXPECT_FALSE(types_.names(loaded_.crate, "", "Alias", false));
  EXPECT_TRUE(types_.names(loaded_.crate, "", "ShardedVarBuilder", false));
}

TEST_F(BuilderTypes, WrapperOfAWrapper) {
  EXPECT_EQ(
      found("pub struct A { vb: candle_nn::VarBuilder<'static> }\n"
            "impl A { pub fn push_prefix(&self, s: &str) -> A { A { vb: self.vb.push_prefix(s) } } "
            "}\n"
            "pub struct B { a: A }\n"
            "impl B { pub fn set_device(&mut self, d: u32) { self.a.push_prefix(\"x\"); } }\n"),
      "A: forwards `push_prefix` to its VarBuilder field `vb`\n"
      "B: forwards `set_device` to its VarBuilder field `a`\n");
}

TEST_F(BuilderTypes, NamesProveNothing) {
  // Named like a builder, with a builder-named method, but holding no VarBuilder.
  // Holding a VarBuilder, but using it in a method that is not VarBuilder's interface.
  // Holding one, with a `pp` that does not touch it.
  EXPECT_EQ(found("pub struct MyVarBuilder { prefix: String }\n"
                  "impl MyVarBuilder { pub fn pp(&self, s: &str) -> Self { Self { prefix: "
                  "format!(\"{}.{s}\", self.prefix) } } }\n"
                  "pub struct LazyModel { vb: candle_nn::VarBuilder<'static> }\n"
                  "impl LazyModel { pub fn layer(&self) -> u32 { self.vb.pp(\"x\"); 0 } }\n"
                  "pub struct Other { vb: candle_nn::VarBuilder<'static>, n: u32 }\n"
                  "impl Other { pub fn pp(&self) -> u32 { self.n } }\n"),
            "");
  EXPECT_FALSE(types_.names(loaded_.crate, "", "MyVarBuilder"));
}

TEST_F(BuilderTypes, ReExportsResolveToTheVarBuilder) {
  EXPECT_EQ(found("pub use candle_nn::var_builder::ShardedVarBuilder as VarBuilder;\n"
                  "pub mod m { pub use candle_nn::VarBuilder as Vb; }\n"),
            "");
  EXPECT_TRUE(types_.names(loaded_.crate, "", "VarBuilder<'a>"));
  EXPECT_TRUE(types_.names(loaded_.crate, "", "m::Vb"));
}

}  // namespace

// A GGUF-style builder wrapping no VarBuilder: it keeps its prefix in a `Vec<String>`, `pp`
// pushes onto it, and the getters join it with a tensor name (through `self.path(name)`). Its
// methods' roles are read from their bodies: which argument is the name, which the shape.
TEST_F(BuilderTypes, OwnPrefixBuilderByItsPushAndGetters) {
  EXPECT_EQ(
      found("use candle_core::quantized::QTensor;\n"
            "use std::sync::Arc;\n"
            "pub struct VarBuilder { path: Vec<String>, map: std::collections::HashMap<String, "
            "u8> }\n"
            "impl VarBuilder {\n"
            "  pub fn pp<S: ToString>(&self, s: S) -> Self {\n"
            "    let mut path = self.path.clone();\n"
            "    path.push(s.to_string());\n"
            "    Self { path, map: self.map.clone() }\n"
            "  }\n"
            "  pub fn path(&self, name: &str) -> String { [&self.path.join(\".\"), "
            "name].join(\".\") }\n"
            "  pub fn get<S: Into<candle_core::Shape>>(&self, s: S, name: &str) -> "
            "Result<Arc<QTensor>> { let p = self.path(name); load(p, s) }\n"
            "  pub fn get_sharded_no_shape(&self, name: &str, dim: usize, rank: usize) -> "
            "Result<Arc<QTensor>> { let p = self.path(name); load_sharded(p, dim, rank) }\n"
            "  pub fn contains_key(&self, key: &str) -> bool { self.map.contains_key(key) }\n"
            "}\n"
            // A builder-pattern config: `with_name` takes `self` by value, no getter returns a
            // tensor: not a prefix builder.
            "pub struct Cfg { name: String }\n"
            "impl Cfg {\n"
            "  pub fn with_name(self, n: &str) -> Self { Self { name: format!(\"{}{n}\", "
            "self.name) } }\n"
            "  pub fn label(&self, n: &str) -> String { format!(\"{}{n}\", self.name) }\n"
            "}\n"),
      "VarBuilder: keeps its prefix in `path` (pushed by `pp`) and gets tensors by name (`get`, "
      "`get_sharded_no_shape`)\n");
  EXPECT_EQ(types_.field, (std::vector<std::string>{""}));
  EXPECT_TRUE(types_.names(loaded_.crate, "", "&VarBuilder", false));
  EXPECT_EQ(types_.pushes, (std::vector<std::string>{"pp"}));
  ASSERT_NE(types_.getter("get"), nullptr);
  EXPECT_EQ(types_.getter("get")->name_arg, 1u);
  EXPECT_EQ(types_.getter("get")->shape_arg, 0);
  ASSERT_NE(types_.getter("get_sharded_no_shape"), nullptr);
  EXPECT_EQ(types_.getter("get_sharded_no_shape")->name_arg, 0u);
  EXPECT_EQ(types_.getter("get_sharded_no_shape")->shape_arg, -1);
  EXPECT_EQ(types_.getter("contains_key"), nullptr);
  EXPECT_EQ(types_.getter("label"), nullptr);
}
