#include "checkpoint/verify.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

// Splits on '.' outside braces, so `{self.idx}` stays one symbolic segment.
std::vector<std::string_view> split_key(std::string_view key) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '{') ++depth;
    if (key[i] == '}' && depth > 0) --depth;
    if (key[i] == '.' && depth == 0) {
      out.push_back(key.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(key.substr(start));
  return out;
}

using Captures = std::vector<std::pair<std::string, std::string>>;

// Matches one segment that mixes literal text and `{var}` holes (`block_{i}`); each hole takes at
// least one character. Backtracks, but segments are short and holes few.
bool match_segment(std::string_view pat, std::string_view text, Captures* caps) {
  const auto open = pat.find('{');
  if (open == std::string_view::npos) return pat == text;
  if (text.substr(0, open) != pat.substr(0, open)) return false;
  const auto close = pat.find('}', open);
  if (close == std::string_view::npos) return false;
  const std::string var(pat.substr(open + 1, close - open - 1));
  const std::string_view rest = pat.substr(close + 1);
  text.remove_prefix(open);
  for (std::size_t take = 1; take <= text.size(); ++take) {
    const std::size_t mark = caps ? caps->size() : 0;
    if (caps) caps->emplace_back(var, std::string(text.substr(0, take)));
    if (match_segment(rest, text.substr(take), caps)) return true;
    if (caps) caps->resize(mark);
  }
  return false;
}

bool is_index(std::string_view s, std::uint64_t bound) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0')) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v < bound;
}

std::string substitute(std::string_view key, const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '{') {
      const auto close = key.find('}', i);
      if (close != std::string_view::npos) {
        auto it = values.find(std::string(key.substr(i + 1, close - i - 1)));
        if (it != values.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += key[i];
  }
  return out;
}

const FamilyBound* bound_for(const ExpectedParameter& p, const std::string& var) {
  for (const auto& b : p.bounds) {
    if (b.var == var) return &b;
  }
  return nullptr;
}

// Members of a bounded family, as value tuples in the order of `p.bounds`.
constexpr std::uint64_t kMaxEnumerated = 10'000'000;

struct Claims {
  std::vector<bool> claimed;
};

void check_tensor(const ExpectedParameter& p, const CheckpointTensor& t, VerifyReport& r,
                  std::map<std::pair<std::string, std::string>, DtypeDifference>& dtypes) {
  if (p.shape && t.shape && *p.shape != *t.shape) {
    r.shape_mismatches.push_back({p.id, t.name, *p.shape, *t.shape, p.symbolic_shape});
  }
  if (p.dtype && t.dtype && *p.dtype != *t.dtype) {
    auto& d = dtypes[{*t.dtype, *p.dtype}];
    if (d.count++ == 0) {
      d.checkpoint_dtype = *t.dtype;
      d.expected_dtype = *p.dtype;
      d.sample = t.name;
    }
  }
}

std::string normalized_prefix(std::string prefix) {
  while (!prefix.empty() && prefix.back() == '.')
    prefix.pop_back();
  if (!prefix.empty()) prefix += '.';
  return prefix;
}

}  // namespace

const char* certainty_name(Certainty c) {
  switch (c) {
    case Certainty::proven:
      return "certain";
    case Certainty::conditional:
      return "conditional";
    case Certainty::heuristic:
    case Certainty::unknown:
      return "unknown";
  }
  return "unknown";
}

std::size_t VerifyReport::missing_count(Certainty c) const {
  return static_cast<std::size_t>(std::count_if(
      missing.begin(), missing.end(), [c](const MissingParameter& m) { return m.certainty == c; }));
}

bool match_template(std::string_view key_template, std::string_view name, Captures* captures) {
  const auto pat = split_key(key_template);
  const auto segs = split_key(name);
  if (pat.size() != segs.size()) return false;
  for (std::size_t i = 0; i < pat.size(); ++i) {
    if (!match_segment(pat[i], segs[i], captures)) return false;
  }
  return true;
}

VerifyReport verify(const std::vector<ExpectedParameter>& expected, const Checkpoint& checkpoint,
                    const VerifyOptions& options) {
  VerifyReport r;
  r.checkpoint_path = checkpoint.path;
  r.format = checkpoint.format;
  r.shards = checkpoint.shards;
  r.checkpoint_tensors = checkpoint.tensors.size();
  r.name_only_tensors = checkpoint.name_only_tensors();
  r.notes = checkpoint.notes;
  r.root = options.root;
  const std::string prefix = normalized_prefix(options.prefix);
  r.prefix = prefix;
  if (r.root.empty()) {
    std::set<std::string> roots;
    for (const auto& p : expected)
      roots.insert(p.builder_root);
    if (roots.size() > 1) {
      std::string names;
      for (const auto& n : roots)
        names += (names.empty() ? "" : ", ") + n;
      throw InputError("", "the model has builder roots " + names +
                               "; a checkpoint serves one of them: choose that component root");
    }
    if (!roots.empty()) r.root = *roots.begin();
  }

  std::vector<bool> claimed(checkpoint.tensors.size(), false);
  std::map<std::pair<std::string, std::string>, DtypeDifference> dtypes;
  // Checkpoint names split once; templates compare segment counts before anything else.
  std::vector<std::vector<std::string_view>> names;
  names.reserve(checkpoint.tensors.size());
  for (const auto& t : checkpoint.tensors)
    names.push_back(split_key(t.name));

  for (const auto& p : expected) {
    if (p.builder_root != r.root) {
      ++r.skipped_other_root;
      continue;
    }
    ++r.expected_parameters;
    const std::string key = prefix + p.key;
    const bool is_template = key.find('{') != std::string::npos;
    if (!is_template) {
      const CheckpointTensor* t = checkpoint.find(key);
      if (!t) {
        r.missing.push_back({p.id, key, p.certainty, p.reason});
        continue;
      }
      claimed[static_cast<std::size_t>(t - checkpoint.tensors.data())] = true;
      r.matched.push_back({p.id, key, false, 1, t->name});
      check_tensor(p, *t, r, dtypes);
      continue;
    }
    const auto pat = split_key(key);
    MatchedParameter m{p.id, key, true, 0, {}};
    std::map<std::string, std::set<std::string>> seen;  // bound var → distinct values
    std::set<std::vector<std::string>> present;         // bound value tuples
    for (std::size_t i = 0; i < checkpoint.tensors.size(); ++i) {
      if (names[i].size() != pat.size()) continue;
      Captures caps;
      bool ok = true;
      for (std::size_t s = 0; ok && s < pat.size(); ++s)
        ok = match_segment(pat[s], names[i][s], &caps);
      if (!ok) continue;
      bool in_bounds = true;
      std::vector<std::string> tuple(p.bounds.size());
      for (const auto& [var, value] : caps) {
        const FamilyBound* b = bound_for(p, var);
        if (!b) continue;
        seen[var].insert(value);
        if (!is_index(value, b->count)) in_bounds = false;
        tuple[static_cast<std::size_t>(b - p.bounds.data())] = value;
      }
      if (!in_bounds) continue;  // a member the model never asks for: left unclaimed
      claimed[i] = true;
      if (m.count++ == 0) m.sample = checkpoint.tensors[i].name;
      if (!p.bounds.empty()) present.insert(tuple);
      check_tensor(p, checkpoint.tensors[i], r, dtypes);
    }
    for (const auto& b : p.bounds) {
      const auto& values = seen[b.var];
      std::uint64_t in_range = 0;
      for (const auto& v : values) {
        if (is_index(v, b.count)) ++in_range;
      }
      if (in_range == b.count && values.size() == b.count) continue;
      std::string detail = "bound " + std::to_string(b.count) + ", checkpoint has " +
                           std::to_string(values.size()) + " distinct";
      if (values.size() != in_range) {
        detail += " (" + std::to_string(values.size() - in_range) + " outside 0.." +
                  std::to_string(b.count == 0 ? 0 : b.count - 1) + ", left unclaimed)";
      }
      r.family_mismatches.push_back({p.id, key, b.var, b.count, values.size(), detail});
    }
    if (m.count == 0 && p.bounds.empty()) {
      r.missing.push_back({p.id, key, p.certainty, p.reason});
      continue;
    }
    if (!p.bounds.empty()) {
      // Every member the bound promises must be there; each absent one is named.
      std::uint64_t total = 1;
      for (const auto& b : p.bounds)
        total = b.count == 0
                    ? 0
                    : (total > kMaxEnumerated / b.count ? kMaxEnumerated + 1 : total * b.count);
      if (total > kMaxEnumerated) {
        r.notes.push_back(key + ": family too large to enumerate; members not checked one by one");
      } else {
        std::vector<std::uint64_t> idx(p.bounds.size(), 0);
        for (std::uint64_t n = 0; n < total; ++n) {
          std::vector<std::string> tuple;
          std::map<std::string, std::string> values;
          for (std::size_t j = 0; j < idx.size(); ++j) {
            tuple.push_back(std::to_string(idx[j]));
            values[p.bounds[j].var] = tuple.back();
          }
          if (!present.count(tuple)) {
            r.missing.push_back({p.id, substitute(key, values), p.certainty, p.reason});
          }
          for (std::size_t j = idx.size(); j-- > 0;) {
            if (++idx[j] < p.bounds[j].count) break;
            idx[j] = 0;
          }
        }
      }
    }
    if (m.count > 0) r.matched.push_back(std::move(m));
  }
  for (std::size_t i = 0; i < checkpoint.tensors.size(); ++i) {
    if (!claimed[i]) r.unclaimed.push_back(checkpoint.tensors[i].name);
  }
  for (auto& [k, d] : dtypes)
    r.dtype_differences.push_back(std::move(d));

  auto by_key = [](const auto& a, const auto& b) {
    return std::tie(a.key, a.id) < std::tie(b.key, b.id);
  };
  std::sort(r.matched.begin(), r.matched.end(), by_key);
  std::sort(r.missing.begin(), r.missing.end(), by_key);
  std::sort(r.family_mismatches.begin(), r.family_mismatches.end(),
            [](const FamilyMismatch& a, const FamilyMismatch& b) {
              return std::tie(a.key, a.var, a.id) < std::tie(b.key, b.var, b.id);
            });
  std::sort(r.shape_mismatches.begin(), r.shape_mismatches.end(),
            [](const ShapeMismatch& a, const ShapeMismatch& b) {
              return std::tie(a.tensor, a.id) < std::tie(b.tensor, b.id);
            });

  const std::size_t certain_missing = r.missing_count(Certainty::proven);
  if (certain_missing) {
    r.reasons.push_back(
        std::to_string(certain_missing) +
        " parameter(s) the model always loads are missing, e.g. \"" +
        std::find_if(r.missing.begin(), r.missing.end(),
                     [](const MissingParameter& x) { return x.certainty == Certainty::proven; })
            ->key +
        "\"");
  }
  if (!r.shape_mismatches.empty()) {
    const auto& s = r.shape_mismatches.front();
    r.reasons.push_back(std::to_string(r.shape_mismatches.size()) +
                        " tensor(s) have another shape than the model asks for, e.g. \"" +
                        s.tensor + "\" is " + shape_text(s.actual) + ", the model expects " +
                        shape_text(s.expected));
  }
  r.will_load = r.reasons.empty();
  if (r.name_only_tensors) {
    r.notes.push_back(std::to_string(r.name_only_tensors) +
                      " tensor(s) live in shards that are not on disk: verified by name only, "
                      "their shapes and dtypes were not checked");
  }
  return r;
}

}  // namespace cg::checkpoint
