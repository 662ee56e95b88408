#include "analysis/tensor/dtype.hpp"

#include <cctype>
#include <map>
#include <set>

#include "analysis/op_catalog.hpp"

namespace cg::analysis::tensor {

OperandDtypes operand_dtypes(const std::string& name, const std::vector<const Val*>& ins) {
  OperandDtypes d;
  std::size_t first = op_traits(name).mask_operand && ins.size() == 3 ? 1 : 0;
  for (std::size_t i = first; i < ins.size(); ++i) {
    const Val* v = ins[i];
    if (!v->tensor) continue;
    ++d.checked;
    if (v->dtype == "Unknown") {
      d.any_unknown = true;
      if (!v->dtype_param.empty()) d.params.push_back(v->dtype_param);
    } else {
      d.known.push_back(v->dtype);
    }
  }
  for (const auto& x : d.known)
    d.conflict = d.conflict || x != d.known.front();
  return d;
}

std::optional<std::string> named_dtype(const std::string& t) {
  static const std::map<std::string, std::string> dtypes{
      {"u8", "U8"},   {"u32", "U32"}, {"i64", "I64"},  {"f32", "F32"},
      {"f64", "F64"}, {"f16", "F16"}, {"bf16", "BF16"}};
  static const std::set<std::string> others{"i8", "i16", "i32", "u16", "u64", "i128", "u128"};
  std::optional<std::string> out;
  auto note = [&](const std::string& w) {
    auto it = dtypes.find(w);
    if (it == dtypes.end()) return !others.count(w);
    if (out && *out != it->second) return false;
    out = it->second;
    return true;
  };
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i > 0 && (word_char(t[i - 1]) || t[i - 1] == '.')) continue;
    if (std::isdigit(static_cast<unsigned char>(t[i]))) {  // a numeric literal and its suffix
      std::size_t j = i;
      // `0.` and `1.5` are literals; `0..n` is a range and `2.max(x)` a method call.
      auto dot = [&](std::size_t k) {
        return t[k] == '.' && (k + 1 >= t.size() || !(word_char(t[k + 1]) || t[k + 1] == '.') ||
                               std::isdigit(static_cast<unsigned char>(t[k + 1])));
      };
      while (j < t.size() &&
             (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '_' || dot(j) ||
              ((t[j] == 'e' || t[j] == 'E') && j + 1 < t.size() &&
               std::isdigit(static_cast<unsigned char>(t[j + 1])))))
        ++j;
      if (j < t.size() && t[j] == '.') {  // range or method call: the integer has no suffix
        i = j;
        continue;
      }
      std::size_t e = j;
      while (e < t.size() && word_char(t[e]))
        ++e;
      std::string suffix = t.substr(j, e - j);
      if (!suffix.empty() && (!dtypes.count(suffix) || !note(suffix))) return std::nullopt;
      i = e;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(t[i]))) continue;
    std::size_t e = i;
    while (e < t.size() && word_char(t[e]))
      ++e;
    if (!note(t.substr(i, e - i))) return std::nullopt;
    i = e;
  }
  return out;
}

}  // namespace cg::analysis::tensor
