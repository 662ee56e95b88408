#pragma once
// A loaded crate: the source files reached from the target root by following `mod` items under the
// selected cfg, the module tree, the symbol table, and resolution of paths, methods and receiver
// types. Trees stay alive as long as the Crate, so item handles (`TSNode`) stay valid.
#include <tree_sitter/api.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cargo/context.hpp"
#include "rust/body.hpp"
#include "rust/cfg.hpp"
#include "rust/parse.hpp"

namespace cg::rust {

// A finding-to-be: rule `source-load`, `syntax-error`, `cfg-unknown`, `path-cycle`, …
struct Diagnostic {
  std::string rule;
  std::string file;  // crate-relative
  std::uint32_t line = 0;
  std::string message;
};

enum class Visibility { Private, Crate, Restricted, Public };

struct CfgInfo {
  std::vector<std::string> predicates;  // every `#[cfg]` on the item and its enclosing modules
  Tri state = Tri::True;
  std::string text() const;  // predicates joined by " && " (the stable-id suffix, §2.1)
};

struct Module {
  std::string path;      // "" for the crate root, "models::llama"
  std::size_t file = 0;  // index into Crate::files()
  bool is_inline = false;
  std::uint32_t first_line = 0, last_line = 0;  // the inline `mod x { … }` range
  std::string parent;  // "" for root's children; the root's parent is itself
  CfgInfo cfg;
};

enum class ItemKind {
  Module,
  Struct,
  Enum,
  Trait,
  Function,
  Method,
  Const,
  Static,
  TypeAlias,
  Macro
};

enum class Container { None, Option, Vec, Box, Arc, Rc, Ref, RefMut, Other };

struct Field {
  std::string name;  // "0", "1" for tuple fields
  std::string type_text;
  std::string base_type;                  // peeled through Option/Vec/Box/Arc/Rc/&/&mut
  Container container = Container::None;  // outermost wrapper peeled
  // Named fields: the attribute items written since the previous field (`#[serde(rename =
  // "x")]`), as written, and the field's 1-based line. Empty / 0 for tuple fields.
  std::vector<std::string> attributes;
  std::uint32_t line = 0;
};

struct Param {
  std::string name;
  std::string type_text;
};

enum class SelfKind { None, Value, Ref, RefMut };

struct Item {
  ItemKind kind = ItemKind::Struct;
  std::string name;
  std::string module;     // the module path it is declared in
  std::string qualified;  // `models::llama::Attention`, `models::llama::Attention::forward`
  Visibility visibility = Visibility::Private;
  CfgInfo cfg;
  std::size_t file = 0;
  std::uint32_t line = 0;
  TSNode node{};              // the item node
  std::vector<Field> fields;  // structs
  // Enums: the variants, as fields named by the variant (`Gelu`), `type_text` empty for a unit
  // variant, else its payload as written (`(f64)`, `{ a: usize }`), with its attributes.
  std::vector<Field> variants;
  // Structs, unions and enums: the attribute items right before the item (nearest first; a comment
  // ends the run), as written: `#[derive(Deserialize)]`, `#[serde(default)]`.
  std::vector<std::string> attributes;
  std::vector<Param> params;  // functions and methods, `self` excluded
  SelfKind self_kind = SelfKind::None;
  std::string return_type;
  std::ptrdiff_t impl = -1;  // methods: index into Crate::impls()
  std::size_t unit = 0;      // index into Crate::units(): 0 is the analysed crate
  TSNode body() const;       // functions: the block, null node when absent
};

struct Impl {
  std::string module;
  std::string self_type;  // text as written: `Foo<B>`
  std::string self_base;  // `Foo`, or `a::Foo`
  std::string trait;      // empty for inherent impls
  std::string generics;   // `<B: Backend>`
  CfgInfo cfg;
  std::size_t file = 0;
  std::uint32_t line = 0;
  std::vector<std::size_t> methods;  // item indices
};

// One binding introduced by a `use` tree leaf or an `extern crate`.
struct UseBinding {
  std::string module;
  std::string name;               // the name bound in `module`; empty for globs
  std::vector<std::string> path;  // target segments as written: {"super","x","Y"}
  bool glob = false;
  bool is_pub = false;
  CfgInfo cfg;
  std::size_t file = 0;
  std::uint32_t line = 0;
};

struct Candidate {
  enum class Kind { Item, Module, External } kind = Kind::Item;
  std::size_t item = 0;  // Kind::Item
  std::string path;      // Module: module path; External: `candle_core::Tensor`
};

struct LoweredCache;  // lower.cpp
// One crate whose items a Crate holds. Unit 0 is the analysed crate (module paths `""`,
// `models::llama`, files crate-relative). Each dependency loaded with `load_dependency` is another
// unit: its module paths start with `::` and its crate name (`::their_layers::linear`, the
// absolute path Rust itself gives an extern crate's item, so they never collide with the analysed
// crate's modules), its files are named `PACKAGE/src/lib.rs` (the package name, then the path
// inside the package), and its items resolve through its own manifest's dependencies.
struct CrateUnit {
  std::string name;     // the crate name its dependents import it by: "their_layers"
  std::string package;  // "their-layers"; the analysed crate's package ("" without Cargo.toml)
  std::string version;
  std::string root_module;  // "" for unit 0, "::their_layers"
  std::string file_prefix;  // "" for unit 0, "their-layers/"
  // The crate names its code imports, to their packages (renames applied).
  std::map<std::string, std::string> externs;
  CfgSet cfg;  // its cfg: the target's, with its own active features
  std::size_t files = 0, bytes = 0, items = 0;
  std::vector<Diagnostic> diagnostics;  // dependencies: what its loader could not do
};

// How much one dependency may add (the pipeline passes what is left of a budget for all of them).
struct DependencyLimits {
  std::size_t max_files = 0;
  std::size_t max_bytes = 0;
};

class Crate {
 public:
  // Loads from `root_file` (absolute); `crate_dir` anchors the crate-relative paths.
  static Crate load(const std::filesystem::path& crate_dir, const std::filesystem::path& root_file,
                    const cargo::CargoContext* ctx, const CfgSet& cfg, int threads = 2);

  const std::vector<std::unique_ptr<ParsedFile>>& files() const { return files_; }
  const std::vector<Module>& modules() const { return modules_; }
  const std::vector<Item>& items() const { return items_; }
  const std::vector<Impl>& impls() const { return impls_; }
  const std::vector<UseBinding>& uses() const { return uses_; }
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  const std::vector<CrateUnit>& units() const { return units_; }
  // Whether the item belongs to the analysed crate (not to a loaded dependency).
  bool is_local(std::size_t item) const { return items_[item].unit == 0; }
  // The unit a module path belongs to (0 for the analysed crate's modules).
  std::size_t unit_of_module(const std::string& module) const;
  std::size_t unit_of_file(std::size_t file) const {
    return file < file_unit_.size() ? file_unit_[file] : 0;
  }

  // Loads a dependency's sources (root file `root_file` inside `package_dir`) as a new unit, with
  // the same loader, under `limits`; returns its index. What could not be loaded (files past the
  // limits, syntax errors, unreadable modules) is in the unit's `diagnostics`, never in the
  // analysed crate's. Must be called before the crate is analysed (indices grow).
  std::size_t load_dependency(CrateUnit unit, const std::filesystem::path& package_dir,
                              const std::filesystem::path& root_file,
                              const DependencyLimits& limits);

  const Module* module(const std::string& path) const;
  // Items with that qualified name (cfg alternatives are separate entries).
  std::vector<std::size_t> find(const std::string& qualified) const;
  std::string source(std::size_t item) const;  // "file:line"

  // Resolves `path` (`a::b::C`, `Self::new`, `super::x`) as written in module `module`.
  std::vector<Candidate> resolve(const std::string& module, const std::string& path) const;
  // Resolves `path` as written inside function `fn_item`: `Self` names the impl's type.
  std::vector<Candidate> resolve_in(std::size_t fn_item, const std::string& path) const;
  // Methods named `name` on the struct/enum item `type_item`; inherent ones when any exist.
  std::vector<std::size_t> methods(std::size_t type_item, const std::string& name) const;
  // The type of `self.field` or of a simple local, as seen inside function `fn_item`.
  std::vector<Candidate> receiver_type(std::size_t fn_item, const std::string& expr) const;
  // `use` bindings whose path starts with crate/self/super and resolves to nothing.
  std::vector<std::size_t> unresolved_imports() const;

  // The lowered form (src/rust/body.hpp) of a function or method's body (root: its Block, kNone
  // without a body) or of a const/static's value. Lowered on first use and cached; safe to call
  // from several threads.
  const Body& lowered(std::size_t item) const;

  std::string node_text(std::size_t file, TSNode n) const;
  // The `#[cfg(..)]` attributes written directly before `node` (a statement, field or arm),
  // evaluated under the crate's cfg: False when any is inactive, Unknown when one is not
  // understood, True otherwise (also with no attributes).
  Tri attributes_active(std::size_t file, TSNode node) const;
  const CfgSet& cfg_set() const { return cfg_; }

 private:
  friend class CrateBuilder;
  std::vector<Candidate> lookup_in(const std::string& module, const std::string& name,
                                   int depth) const;
  std::vector<Candidate> resolve_segments(const std::string& module,
                                          const std::vector<std::string>& segs, int depth) const;
  std::vector<Candidate> resolve_type_text(const std::string& module, std::string text) const;
  // The first segment of a path, not bound in `module`, as an extern crate of its unit: a loaded
  // dependency's root module, else External; empty when it names none.
  std::vector<Candidate> extern_crate(const std::string& module, const std::string& name,
                                      bool more_segments) const;

  std::vector<std::unique_ptr<ParsedFile>> files_;
  std::vector<Module> modules_;
  std::vector<Item> items_;
  std::vector<Impl> impls_;
  std::vector<UseBinding> uses_;
  std::vector<Diagnostic> diags_;
  std::vector<CrateUnit> units_;
  std::vector<std::size_t> file_unit_;  // unit of each file
  const cargo::CargoContext* ctx_ = nullptr;
  CfgSet cfg_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_scope_;  // module + '\n' + name
  std::unordered_map<std::string, std::vector<std::size_t>> uses_by_scope_;
  std::unordered_map<std::string, std::vector<std::size_t>> globs_by_module_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_qualified_;
  std::unordered_map<std::size_t, std::vector<std::size_t>> impls_by_type_;
  std::unordered_map<std::string, std::size_t> module_index_;
  // Lowered bodies, filled on demand by `lowered` (src/rust/lower.cpp); shared so a Crate stays
  // movable.
  std::shared_ptr<LoweredCache> lowered_ = make_lowered_cache();
  static std::shared_ptr<LoweredCache> make_lowered_cache();
};

// Everything the CLI needs: the Cargo context (absent for a crate without Cargo.toml, whose
// `src/lib.rs` or `src/main.rs` is the root), the crate, and the cfg it was loaded under.
struct LoadedCrate {
  std::unique_ptr<cargo::CargoContext> cargo;
  Crate crate;
  std::string analysis_id;
};

LoadedCrate load_crate(const std::filesystem::path& path, const cargo::Selection& selection);

}  // namespace cg::rust
