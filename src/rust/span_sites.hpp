#pragma once
// `tracing` span names a crate creates, and the type each one belongs to: the
// `span!(Level::TRACE, "attn")`, `tracing::span!`, `trace_span!("attn")`, `info_span!`, … calls
// in its functions. candle-transformers creates a span in a module's constructor, stores it in a
// field and enters it in `forward`; the tracing-chrome importer maps a span name back to the
// module type(s) whose code creates it (never from the name's spelling).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rust/crate.hpp"

namespace cg::rust {

struct SpanSite {
  std::string name;             // the span's name literal, "attn"
  std::string owner_type;       // the type the span belongs to: `models::llama::Block` (qualified)
  std::string function;         // qualified name of the function holding the call
  bool in_constructor = false;  // the function builds the type (no `self`, returns it)
  std::string source;           // "src/model.rs:42"
};

// Every span-creating macro call whose name is a string literal, inside a function whose owner
// type is known (a method's impl type, or the type a free function returns), in source order.
// Calls under an inactive `#[cfg]` are skipped with their item.
std::vector<SpanSite> find_span_sites(const Crate& crate);

// The qualified type a struct's field is declared with (`models::with_tracing::Linear` for
// `q_proj: Linear` in `models::llama::CausalSelfAttention`, through Vec/Option/Box), empty when
// unknown. The IR may type such a module by the layer the wrapper holds (`candle_nn::Linear`);
// the span belongs to the wrapper whose helper constructor created it.
std::string declared_field_type(const Crate& crate, const std::string& struct_qualified,
                                const std::string& field);

// Where each field of the struct is first used as `self.<field>` in its `forward` methods (the
// text offset where that call's argument list closes, smaller first): the order sibling modules run
// in, which can differ from the order they are built in (bert builds query, value, key and calls
// query, key, value). Fields that `forward` does not name are absent.
std::map<std::string, std::size_t> forward_field_order(const Crate& crate,
                                                       const std::string& struct_qualified);

}  // namespace cg::rust
