#pragma once
// The tensor domain's abstract value: what the dataflow knows about one Rust value — a tensor
// (its IR id, dtype, gradient state, numeric domain), a number, a crate-local or external type
// instance, and the inventory modules it may denote.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/interp/env.hpp"
#include "analysis/numeric_domain.hpp"

namespace cg::ir {
struct TensorShape;
}
namespace cg::rust {
class Body;
}
namespace cg::analysis {
struct ConfigRef;
}

namespace cg::analysis::tensor {

struct Val;

// A closure taken as a value where it is written in a model's constructor (`Func::new(move |xs|
// ..)`, `candle_nn::func(..)`): the function and body that wrote it and the environment it
// captured (the layers it applies), so a later `xs.apply(&f)` runs its body with those captures.
struct Closure {
  std::size_t item = 0;
  const rust::Body* body = nullptr;  // the body that wrote it
  std::uint32_t node = 0;            // its closure node in that body
  std::shared_ptr<const interp::Locals<Val>> env;
};

enum class Grad { trainable, frozen, differentiable, severed, layout_dependent, unknown };

struct Val {
  bool tensor = false;
  std::string tid;  // IR tensor id (tensors only)
  std::string dtype = "Unknown";
  // When `dtype` is Unknown: the expression a constructor was given for it, chosen at run time
  // (`Tensor::zeros(s, self.dtype, dev)` -> "self.dtype"), kept through the ops that keep a dtype.
  // Evidence that the tensor's dtype varies with the caller's choice (the model's dtype).
  std::string dtype_param;
  Grad grad = Grad::unknown;
  NumericDomain dom = NumericDomain::unknown;
  bool undischarged_log = false;
  bool log_of_zero = false;   // a `log` whose operand is 0 on every execution
  std::optional<double> num;  // a numeric literal
  // `num` is a floating-point number (a float literal, `x as f64`, an f32/f64 field): `/` divides
  // exactly. Otherwise it is an integer and `/` truncates toward zero, as Rust's does.
  bool real = false;
  std::ptrdiff_t type_item = -1;  // crate-local struct/enum this value is an instance of
  std::string ext_type;           // external type name (`Linear`) when known
  std::set<std::string> modules;  // inventory module ids this value may denote
  std::string field;              // `f` when the value is `<owner>.f`
  std::string
      dim;  // a tensor dimension's expression (`let (b, t, _) = xs.dims3()?` on a known shape)
  // A tuple's elements (`Ok((q, k))`, a helper returning `(Tensor, Tensor)`), bound one by one to
  // a tuple pattern; the value itself stays the first tensor element's, as before tuples were
  // known. Shared: values are copied into every environment that names them.
  std::shared_ptr<const std::vector<Val>> elems;
  // The tensor's shape in this context when the operation that made it is reached from several
  // (a wrapper layer's one `self.inner.forward(xs)` run for a 64->64 and a 64->100 projection):
  // the IR tensor keeps one shape per syntax node, the value the one of its own call.
  std::shared_ptr<const ir::TensorShape> shape;
  // A closure value (constructor runs only: see Closure).
  std::shared_ptr<const Closure> fn;
  // A VarBuilder and the key prefix it has pushed (`vb.pp("layer1").pp(0)` -> "layer1.0"; a
  // segment not known is "?"), in constructor runs.
  std::optional<std::string> vb;
  // What a collection holds in order: a `Vec` filled by `push`, a `seq()` by `add`/`add_fn`
  // (constructor runs only).
  std::shared_ptr<const std::vector<Val>> items;
  // An `Option` whose variant is known on every execution reaching here: written `Some(..)` (the
  // value is the payload's) or `None`, passed or bound unchanged. A `match`/`if let` on it takes
  // the arm that variant selects (TensorDomain::choose); a join of different variants forgets it.
  enum class Variant : std::uint8_t { unknown, some, none };
  Variant variant = Variant::unknown;
  // Read from a field every constructor of its type writes `None` (a cache: `kv_cache: None`):
  // both arms of a `match` on it run, and the `None` arm's value leads the join in a root's
  // forward run, so shapes and multiply-adds are those of the first call (an empty cache).
  bool fresh_none = false;
  // A string known in a constructor run: a literal (`vb.pp(name)` over `&[(3, 64, "features.0"),
  // ..]`), or an enum variant's name given by `--arg model=Vgg16` (a `match` on it takes that
  // variant's arm).
  std::string word;
  // A struct literal's field values (`Ok(Output { logits, hidden })`, a constructor's `Self {
  // blocks }`): reading a field gives what was written there.
  std::shared_ptr<const std::map<std::string, Val>> fields;
  // The other tensors a join of branches may be (`match &self.kv_cache { None => k, Some(p) =>
  // Tensor::cat(&[p, &k], 2)? }`): `tid` is the first; a state store looks at every one.
  std::shared_ptr<const std::vector<std::string>> alt_tids;
  // A config struct a constructor stored whole in a field (`cfg: cfg.clone()`), bound to the
  // config.json: `self.cfg.kv_lora_rank` reads the file's number.
  std::shared_ptr<const ConfigRef> config;
};

inline Grad join_grad(Grad a, Grad b) {
  return a == b ? a : Grad::unknown;
}

// The value of a join (branches, returns): values that carry nothing are ignored; the first
// carrying one gives the tensor id and type; a number, dtype, gradient and domain agree or are
// unknown; module sets unite.
// `led`: the first value leads (TensorDomain::lead): where the values' shapes differ, the join
// keeps the first's rather than none.
Val join(const std::vector<Val>& vs, bool led = false);

// Element i of a tuple of `count` elements; nullopt when the value is not such a tuple.
std::optional<Val> element(const Val& v, std::size_t i, std::size_t count);

// A name after one loop iteration: the iteration's tensor, else the join with the value before.
Val loop_merge(const Val& before, const Val& after);

}  // namespace cg::analysis::tensor
