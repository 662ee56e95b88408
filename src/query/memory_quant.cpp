#include "query/memory_quant.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/ir_adapter.hpp"
#include "checkpoint/verify.hpp"
#include "util/error.hpp"

namespace cg::query {
namespace {

constexpr std::size_t kNamed = 5;  // names listed per kind of difference

std::optional<std::uint64_t> mul(std::optional<std::uint64_t> a, std::uint64_t b) {
  if (!a || (b != 0 && *a > UINT64_MAX / b)) return std::nullopt;
  return *a * b;
}

std::optional<std::uint64_t> add(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  if (!a || !b || *b > UINT64_MAX - *a) return std::nullopt;
  return *a + *b;
}

std::optional<std::size_t> rank_of(const ir::Parameter& p) {
  if (p.shape) return p.shape->size();
  if (p.symbolic_shape) return p.symbolic_shape->size();
  return std::nullopt;
}

std::string shape_text(const std::vector<std::uint64_t>& s) {
  std::string o = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

bool names_quantized_builder(const std::string& text) {
  for (auto p = text.find("quantized_var_builder::"); p != std::string::npos;
       p = text.find("quantized_var_builder::", p + 1)) {
    const std::string rest = text.substr(p + 23, 200);
    if (rest.rfind("VarBuilder", 0) == 0) return true;
    // `use crate::quantized_var_builder::{self, VarBuilder};`
    if (rest.rfind("{", 0) == 0) {
      const auto close = rest.find('}');
      if (rest.substr(0, close).find("VarBuilder") != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace

bool uses_quantized_builder(const ir::ModelIr& ir, const std::string& root_source_text) {
  if (ir.components.size() != 1) return false;
  const ir::Component& c = ir.components.front();
  if (c.builders.empty()) return false;
  for (const auto& f : ir.functions) {
    if (f.id != c.constructor) continue;
    for (const auto& p : f.parameters) {
      if (p.name != c.builders.front().name) continue;
      if (p.type_name.find("quantized_var_builder") != std::string::npos) return true;
      // `VarBuilder` as written: which one the file imports decides.
      std::string t = p.type_name;
      t.erase(std::remove(t.begin(), t.end(), '&'), t.end());
      t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
      return t == "VarBuilder" && names_quantized_builder(root_source_text);
    }
  }
  return false;
}

QuantWeights weights_from_gguf(const checkpoint::GgufHeader& h, const ir::ModelIr* ir,
                               const Dequantized& dequantized) {
  QuantWeights w;
  w.source = "--gguf " + h.origin;
  w.bytes = 0;
  w.file_bytes = 0;
  w.elements = 0;
  // The keys (concrete or templates) of the parameters the code dequantizes at load.
  std::vector<const ir::Parameter*> deq_params;
  if (ir)
    for (const auto& p : ir->parameters)
      if (dequantized.always.count(p.id) || dequantized.floats.count(p.id))
        deq_params.push_back(&p);
  std::map<std::string, QuantTypeBytes> by;
  for (const auto& t : h.tensors) {
    w.file_bytes = add(w.file_bytes, t.bytes);
    w.elements = add(w.elements, t.elements);
    const bool deq = t.type.id != 0 &&
                     std::any_of(deq_params.begin(), deq_params.end(), [&](const ir::Parameter* p) {
                       const std::string& k = p->key;
                       return dequantized.held_at_f32(p->id, t.type) &&
                              (k == t.name || (k.find('{') != std::string::npos &&
                                               checkpoint::match_template(k, t.name)));
                     });
    const std::optional<std::uint64_t> held = deq ? mul(t.elements, 4) : t.bytes;
    w.bytes = add(w.bytes, held);
    auto& b = by[deq ? std::string("F32, dequantized") : std::string(t.type.name)];
    b.type = deq ? "F32" : t.type.name;
    b.dequantized = deq;
    ++b.tensors;
    b.elements += t.elements;     // each tensor lies in the file: no sum exceeds its size
    b.bytes += held.value_or(0);  // elements x 4 of a tensor in the file: no overflow either
  }
  for (auto& [k, b] : by)
    w.by_type.push_back(b);
  std::stable_sort(
      w.by_type.begin(), w.by_type.end(),
      [](const QuantTypeBytes& a, const QuantTypeBytes& b) { return a.bytes > b.bytes; });
  if (!ir) return w;

  // The model's parameters against the file's tensors, as `verify` checks a safetensors file;
  // the dtype the code names is not compared (the file decides it).
  auto expected = checkpoint::inventory_from_ir(*ir);
  for (auto& e : expected)
    e.dtype.reset();
  checkpoint::Checkpoint ck;
  ck.path = h.origin;
  ck.format = "gguf";
  for (const auto& t : h.tensors)
    ck.tensors.push_back({t.name, h.origin, std::string(t.type.name), t.shape});
  std::sort(ck.tensors.begin(), ck.tensors.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  checkpoint::VerifyReport v;
  try {
    v = checkpoint::verify(expected, ck);
  } catch (const InputError&) {
    return w;  // several builder roots: no one namespace to compare with
  }
  w.checked = true;
  for (const auto& m : v.matched)
    w.matched += m.count;
  w.missing_count = v.missing.size();
  for (std::size_t i = 0; i < v.missing.size() && i < kNamed; ++i)
    w.missing.push_back(v.missing[i].key);
  w.unclaimed_count = v.unclaimed.size();
  for (std::size_t i = 0; i < v.unclaimed.size() && i < kNamed; ++i)
    w.unclaimed.push_back(v.unclaimed[i]);
  w.mismatch_count = v.shape_mismatches.size();
  for (std::size_t i = 0; i < v.shape_mismatches.size() && i < kNamed; ++i) {
    const auto& s = v.shape_mismatches[i];
    w.mismatches.push_back(s.tensor + " is " + shape_text(s.actual) +
                           " in the file, the model asks for " + shape_text(s.expected));
  }
  return w;
}

QuantPart quant_part(const ir::Parameter& p, const checkpoint::GgmlType& type,
                     const Dequantized& dequantized) {
  const auto r = rank_of(p);
  if (r && *r < 2) return QuantPart::f32;
  if (dequantized.held_at_f32(p.id, type)) return QuantPart::dequantized;
  if (p.shape && p.shape->back() % type.block_elements != 0) return QuantPart::refused;
  return QuantPart::quantized;  // of unknown rank too: summary counts it as unknown there
}

ir::ModelIr with_parameters(const ir::ModelIr& ir, const checkpoint::GgmlType& type, QuantPart part,
                            const Dequantized& dequantized) {
  ir::ModelIr out = ir;
  out.parameters.clear();
  for (const auto& p : ir.parameters)
    if (quant_part(p, type, dequantized) == part) out.parameters.push_back(p);
  return out;
}

QuantWeights weights_at_quant(const checkpoint::GgmlType& type, const QuantCounts& counts) {
  QuantWeights w;
  w.source = "--quant " + std::string(type.name);
  QuantTypeBytes q{std::string(type.name), 0, 0, 0}, v{"F32", 0, 0, 0};
  std::optional<std::uint64_t> qbytes, vbytes;
  // Each quantized tensor is a whole number of blocks, so their sum is too.
  if (counts.quantized && *counts.quantized % type.block_elements == 0) {
    q.elements = *counts.quantized;
    qbytes = mul(*counts.quantized / type.block_elements, type.block_bytes);
  }
  if (counts.f32) {
    v.elements = *counts.f32;
    vbytes = mul(counts.f32, 4);
  }
  QuantTypeBytes d{"F32", 0, counts.dequantized.value_or(0), 0, true};
  const std::optional<std::uint64_t> dbytes = mul(counts.dequantized, 4);
  if (dbytes) d.bytes = *dbytes;
  w.elements = add(add(counts.quantized, counts.f32), counts.dequantized);
  w.bytes = add(add(qbytes, vbytes), dbytes);
  w.exact = !counts.lower && counts.refused.empty() && w.bytes.has_value();
  if (qbytes) q.bytes = *qbytes;
  if (vbytes) v.bytes = *vbytes;
  if (q.elements) w.by_type.push_back(q);
  if (v.elements) w.by_type.push_back(v);
  if (d.elements) w.by_type.push_back(d);
  if (!counts.refused.empty()) {
    w.note = std::to_string(counts.refused.size()) +
             " weight(s) have rows that are not a whole number of " + std::string(type.name) +
             " blocks of " + std::to_string(type.block_elements) +
             " elements (candle's QTensor refuses to quantize them; llama.cpp's quantize keeps "
             "another type), e.g. " +
             counts.refused.front() + ": not counted; give --gguf with the file";
  } else if (counts.lower) {
    w.note = counts.lower_note;
  }
  return w;
}

std::string crate_file_text(const std::string& crate_path, const std::string& source) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir =
      fs::is_directory(crate_path, ec) ? fs::path(crate_path) : fs::path(crate_path).parent_path();
  const auto colon = source.rfind(':');
  const fs::path file = dir / source.substr(0, colon);
  if (!fs::is_regular_file(file, ec)) return {};
  const auto size = fs::file_size(file, ec);
  if (ec || size > (std::uintmax_t{4} << 20)) return {};
  std::ifstream in(file, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return in ? text : std::string();
}

bool quantized_root(const pipeline::Analysis& a, const std::string& crate_path) {
  if (a.ir.components.size() != 1) return false;
  for (const auto& f : a.ir.functions)
    if (f.id == a.ir.components.front().constructor)
      return uses_quantized_builder(a.ir, crate_file_text(crate_path, f.source));
  return false;
}

Dequantized dequantized_parameters(const pipeline::Analysis& a, const std::string& crate_path) {
  Dequantized out;
  std::map<std::string, std::vector<std::string>> lines;  // file -> its lines
  for (const auto& p : a.ir.parameters) {
    const auto colon = p.source.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string file = p.source.substr(0, colon);
    const std::string num = p.source.substr(colon + 1);
    if (num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos)
      continue;
    auto it = lines.find(file);
    if (it == lines.end()) {
      std::vector<std::string> ls(1);
      for (char c : crate_file_text(crate_path, file)) {
        if (c == '\n')
          ls.emplace_back();
        else
          ls.back() += c;
      }
      it = lines.emplace(file, std::move(ls)).first;
    }
    const std::size_t n = std::stoul(num);
    if (n == 0 || n > it->second.size()) continue;
    const std::string& l = it->second[n - 1];
    if (l.find(".get(") != std::string::npos && l.find(".dequantize(") != std::string::npos)
      out.always.insert(p.id);
  }
  // candle's QMatMul::from_arc dequantizes F16/BF16/F32 tensors: those its modules hold.
  std::set<std::string> qmatmul;
  for (const auto& m : a.ir.modules)
    if (m.type_name == "QMatMul") qmatmul.insert(m.id);
  for (const auto& p : a.ir.parameters)
    if (p.module && qmatmul.count(*p.module)) out.floats.insert(p.id);
  return out;
}

}  // namespace cg::query
