#pragma once
// VarBuilder-like types, recognised by what they are and never by their name (issue #17): a
// serving engine or a layer crate wraps or re-exports candle-nn's VarBuilder, and a constructor
// taking one of those builds parameters like one taking the VarBuilder itself.
//
// A type of the crate or of a loaded dependency is VarBuilder-like when it is
// - a type alias of a VarBuilder (`type Vb<'a> = candle_nn::VarBuilder<'a>;`) or of another
//   VarBuilder-like type;
// - a struct with a field holding a VarBuilder (or a VarBuilder-like type) and a method named as
//   one of VarBuilder's (`pp`, `push_prefix`, `get*`, `set_device`, `set_dtype`, `device`,
//   `dtype`, `contains_tensor`, …) whose body calls a VarBuilder method on that field
//   (`self.inner.pp(..)`): it forwards VarBuilder's interface;
// - a struct that implements `Deref` by returning such a field (`&self.vb`): VarBuilder's whole
//   interface is reachable on it;
// - a prefix builder of the code's own (a GGUF or safetensors map with its own `pp`/`get`,
//   wrapping no VarBuilder): a struct keeping its prefix in a `String` or `Vec<String>` field,
//   with a `&self` method of one argument returning `Self` that extends that field with the
//   argument (its push) and `&self` methods that take a `&str` name, read the prefix and return a
//   tensor (its getters). It builds parameters like a VarBuilder itself, through those methods.
// "A VarBuilder" is a path that resolves outside the loaded code to `VarBuilder`,
// `VarBuilderArgs` or `ShardedVarBuilder`; a re-export of one (`pub use
// candle_nn::var_builder::ShardedVarBuilder as VarBuilder`) resolves to it and needs no entry.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cg::rust {
class Crate;
}

namespace cg::analysis {

struct BuilderTypes {
  std::vector<std::size_t> items;  // struct and type-alias items, ascending
  std::vector<std::string> why;    // per item: "alias of candle_nn::VarBuilder", …
  // Per item: the field holding the VarBuilder a wrapper forwards to ("" for an alias). A walker
  // follows a wrapper's prefix through this field (`Self { inner: vb.pp(..) }`).
  std::vector<std::string> field;

  // The own prefix builders' methods, by name over every such type (a name two types use
  // differently is left out): pushes (`vb.pp("x")`), and getters with where their tensor name
  // and shape are among the arguments (`get_sharded_no_shape(name, dim, rank, world)`).
  struct Getter {
    std::size_t name_arg = 0;
    std::ptrdiff_t shape_arg = -1;  // -1: the getter takes no shape
  };
  std::vector<std::string> pushes;  // ascending
  std::map<std::string, Getter, std::less<>> getters;

  bool contains(std::size_t item) const;
  bool pushes_prefix(std::string_view method) const;
  const Getter* getter(std::string_view method) const;
  // Whether `type_text` as written in `module` (`&Vb<'a>`, `mut W`, `layers::Vb`) names one of
  // them, or a VarBuilder itself. With `wrappers` false, only aliases (and VarBuilders) count:
  // a wrapper's prefix is only right when the walker follows it into the wrapper's field.
  bool names(const rust::Crate& crate, const std::string& module, const std::string& type_text,
             bool wrappers = true) const;
};

BuilderTypes find_builder_types(const rust::Crate& crate);

}  // namespace cg::analysis
