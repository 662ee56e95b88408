#pragma once
// Where `candle-graph instrument` may edit a crate's sources: the syntax-level facts about a module
// type (its field list, every struct literal and struct pattern naming it, macro bodies that may
// build it), a function's body, and how a constructor uses its VarBuilder. Positions are byte
// offsets into the parsed file's text; deciding what to write is src/instrument/'s job.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rust/crate.hpp"

namespace cg::rust {

// A braced list of fields: a struct's declarations `{ a: A, b: B }` or a literal's initializers
// `{ a, b: x, ..base }`.
struct BraceList {
  std::size_t file = 0;
  std::uint32_t open = 0;         // byte of `{`
  std::uint32_t close = 0;        // byte of `}`
  bool has_last = false;          // at least one field
  std::uint32_t last_start = 0;   // start byte of the last field (its attributes included)
  std::uint32_t last_end = 0;     // end byte of the last field
  bool last_comma = false;        // a `,` follows the last field
  std::uint32_t after_comma = 0;  // byte after that `,` (== last_end when none)
  bool has_base = false;          // `..base` (initializers only)
  std::uint32_t base_start = 0;
  std::uint32_t line = 0;  // 1-based line of the list's `{`
};

struct LiteralSite {
  BraceList list;
  std::ptrdiff_t function = -1;  // innermost enclosing function item, -1 when none
  std::string where;             // "src/model.rs:33"
};

enum class StructShape { Named, Tuple, Unit };

struct TypeSites {
  std::size_t type_item = 0;
  StructShape shape = StructShape::Named;
  BraceList fields;  // Named only
  std::vector<std::string> field_names;
  std::vector<LiteralSite> literals;  // every `T { … }` / `Self { … }` naming the type
  // `let T { a, b } = …` without `..`: adding a field breaks them.
  std::vector<std::string> closed_patterns;
  // Macro bodies where `T {` or `Self {` appears: a literal the parser cannot see.
  std::vector<std::string> macro_literals;
};

// Sites of each struct item in `type_items`, in that order (whole-crate scans, one pass).
std::vector<TypeSites> find_type_sites(const Crate& crate,
                                       const std::vector<std::size_t>& type_items);

struct BodySite {
  std::size_t file = 0;
  std::uint32_t open = 0;         // byte of the body's `{`
  bool has_first = false;         // the body holds something (a statement, expression or comment)
  std::uint32_t first_start = 0;  // the first thing after `{` and any inner attributes
  std::uint32_t after_inner = 0;  // byte after `{` or after the last inner attribute
  std::uint32_t line = 0;         // line of the function item
};

// The body of function item `fn_item`; nullopt for a function without one.
std::optional<BodySite> body_site(const Crate& crate, std::size_t fn_item);

// The function's own type parameters (`fn forward<T>`) or those of its impl (`impl<B> …`);
// lifetimes do not count. Empty when the function is not generic, else the parameter list.
std::string generic_parameters(const Crate& crate, std::size_t fn_item);

// Why `name` (a by-value parameter of `fn_item`) may no longer be the caller's builder at byte
// `limit`: the first use before `limit` that may move or rebind it (`f(vb)`, `let vb = …`,
// `vb = …`, a `move` closure, `vb.rename_f(…)`), as "moved at src/x.rs:12"; nullopt when every use
// before `limit` is a borrowing method call (`vb.pp("x")`) or `&vb`.
std::optional<std::string> builder_disturbed(const Crate& crate, std::size_t fn_item,
                                             const std::string& name, std::uint32_t limit);

// A method call `RECEIVER.METHOD(ARGS)` written in a function body of the analyzed crate.
struct MethodCall {
  std::size_t file = 0;
  std::ptrdiff_t function = -1;  // innermost enclosing function item, -1 when none
  std::string method;
  std::string receiver;              // as written
  std::uint32_t start = 0, end = 0;  // the whole call expression
  std::uint32_t receiver_start = 0, receiver_end = 0;
  struct Argument {
    std::uint32_t start = 0, end = 0;
    std::string text;
  };
  std::vector<Argument> arguments;
  // A `{` written at `start` would end an expression there: the call is an expression statement,
  // or the leftmost operand of a larger expression (`call?`, `call.x()`, `call + y`) that begins a
  // statement, a block's tail, a match arm's value or a closure body.
  bool leftmost = false;
  std::string where;  // "src/model.rs:33"
};

// Every method call in the crate's function bodies, by file then position.
std::vector<MethodCall> method_calls(const Crate& crate);

// A struct, or an impl with a `fn forward`/`fn forward_t`, written inside a macro: in a
// `macro_rules!` body (`struct $name { .. }`) or in an invocation's tokens (`m! { struct Foo
// { .. } }`). The parser sees only tokens there, so the analysis never finds it as a module type
// and nothing inside can be edited.
struct MacroItem {
  std::string where;  // "src/model.rs:12", the `struct`/`impl` token
  std::string what;   // "struct `Foo`", "struct `$name`", "impl `Module for $name`"
  std::string macro;  // "`macro_rules! make_layer`" or "an invocation of `make_layer!`"
};

// Every such item of the crate's files, by file then position.
std::vector<MacroItem> macro_items(const Crate& crate);

// Whether identifier `name` occurs anywhere in the function's body (a local we would shadow).
bool body_mentions(const Crate& crate, std::size_t fn_item, const std::string& name);

}  // namespace cg::rust
