#include "instrument/unified_diff.hpp"

#include <algorithm>
#include <string_view>

namespace cg::instrument {

namespace {

void sort_stable(std::vector<Insertion>& ins) {
  std::stable_sort(ins.begin(), ins.end(),
                   [](const Insertion& a, const Insertion& b) { return a.offset < b.offset; });
}

// Lines with their terminators; a last line without `\n` is kept as is.
std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (a < s.size()) {
    std::size_t nl = s.find('\n', a);
    std::size_t b = nl == std::string_view::npos ? s.size() : nl + 1;
    out.emplace_back(s.substr(a, b - a));
    a = b;
  }
  return out;
}

// One changed region: old lines [old_begin, old_end) become `added`.
struct Change {
  std::size_t old_begin = 0, old_end = 0;
  std::vector<std::string> added;
};

void emit_line(std::string& out, char mark, const std::string& line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

std::string range(std::size_t start, std::size_t count) {
  // A range of zero lines names the line before it (0 at the top of the file).
  std::size_t shown = count == 0 ? start : start + 1;
  return std::to_string(shown) + (count == 1 ? "" : "," + std::to_string(count));
}

}  // namespace

std::string apply_insertions(const std::string& text, std::vector<Insertion> ins) {
  sort_stable(ins);
  std::string out;
  out.reserve(text.size() + 256);
  std::size_t at = 0;
  for (const auto& i : ins) {
    std::size_t o = std::min<std::size_t>(i.offset, text.size());
    out.append(text, at, o - at);
    out += i.text;
    at = o;
  }
  out.append(text, at, std::string::npos);
  return out;
}

std::string unified_diff(const std::string& path, const std::string& text,
                         std::vector<Insertion> ins) {
  sort_stable(ins);
  std::erase_if(ins, [](const Insertion& i) { return i.text.empty(); });
  if (ins.empty()) return {};
  const std::vector<std::string> old_lines = split_lines(text);
  std::vector<std::size_t> starts;
  std::size_t pos = 0;
  for (const auto& l : old_lines) {
    starts.push_back(pos);
    pos += l.size();
  }
  // The line each insertion lands in: the one it starts; past the end, the last line.
  auto line_of = [&](std::uint32_t off) -> std::size_t {
    if (old_lines.empty()) return 0;
    auto it = std::upper_bound(starts.begin(), starts.end(), static_cast<std::size_t>(off));
    return static_cast<std::size_t>(it - starts.begin()) - 1;
  };

  // Consecutive changed lines form a group; each group's old and new lines are trimmed of the
  // lines they share at both ends, so an inserted line reads as a pure addition.
  std::vector<Change> changes;
  std::size_t k = 0;
  while (k < ins.size()) {
    std::size_t first = line_of(ins[k].offset), last = first;
    std::size_t end_k = k;
    while (end_k < ins.size() && line_of(ins[end_k].offset) <= last + 1) {
      last = std::max(last, line_of(ins[end_k].offset));
      ++end_k;
    }
    std::string old_block;
    for (std::size_t l = first; l <= last && l < old_lines.size(); ++l)
      old_block += old_lines[l];
    std::vector<Insertion> local(ins.begin() + static_cast<std::ptrdiff_t>(k),
                                 ins.begin() + static_cast<std::ptrdiff_t>(end_k));
    const std::size_t base = old_lines.empty() ? 0 : starts[first];
    for (auto& i : local)
      i.offset = static_cast<std::uint32_t>(
          std::min<std::size_t>(i.offset, base + old_block.size()) - base);
    std::vector<std::string> olds = split_lines(old_block);
    std::vector<std::string> news = split_lines(apply_insertions(old_block, local));
    std::size_t p = 0;
    while (p < olds.size() && p < news.size() && olds[p] == news[p])
      ++p;
    std::size_t s = 0;
    while (s < olds.size() - p && s < news.size() - p &&
           olds[olds.size() - 1 - s] == news[news.size() - 1 - s])
      ++s;
    Change c;
    c.old_begin = (old_lines.empty() ? 0 : first) + p;
    c.old_end = (old_lines.empty() ? 0 : first) + olds.size() - s;
    c.added.assign(news.begin() + static_cast<std::ptrdiff_t>(p),
                   news.end() - static_cast<std::ptrdiff_t>(s));
    if (c.old_begin != c.old_end || !c.added.empty()) changes.push_back(std::move(c));
    k = end_k;
  }
  if (changes.empty()) return {};

  constexpr std::size_t kContext = 3;
  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  std::ptrdiff_t delta = 0;  // new line number minus old line number before the current hunk
  std::size_t c = 0;
  while (c < changes.size()) {
    std::size_t d = c;  // changes [c, d] share one hunk
    while (d + 1 < changes.size() && changes[d + 1].old_begin <= changes[d].old_end + 2 * kContext)
      ++d;
    std::size_t h_begin = changes[c].old_begin >= kContext ? changes[c].old_begin - kContext : 0;
    std::size_t h_end = std::min(old_lines.size(), changes[d].old_end + kContext);
    std::string body;
    std::size_t old_count = 0, new_count = 0;
    std::size_t line = h_begin;
    std::ptrdiff_t hunk_delta = 0;
    for (std::size_t i = c; i <= d; ++i) {
      for (; line < changes[i].old_begin; ++line, ++old_count, ++new_count)
        emit_line(body, ' ', old_lines[line]);
      for (; line < changes[i].old_end; ++line, ++old_count)
        emit_line(body, '-', old_lines[line]);
      for (const auto& a : changes[i].added) {
        emit_line(body, '+', a);
        ++new_count;
      }
      hunk_delta += static_cast<std::ptrdiff_t>(changes[i].added.size()) -
                    static_cast<std::ptrdiff_t>(changes[i].old_end - changes[i].old_begin);
    }
    for (; line < h_end; ++line, ++old_count, ++new_count)
      emit_line(body, ' ', old_lines[line]);
    const std::size_t new_begin =
        static_cast<std::size_t>(static_cast<std::ptrdiff_t>(h_begin) + delta);
    out += "@@ -" + range(h_begin, old_count) + " +" + range(new_begin, new_count) + " @@\n";
    out += body;
    delta += hunk_delta;
    c = d + 1;
  }
  return out;
}

}  // namespace cg::instrument
