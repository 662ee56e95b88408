#include "util/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace cg {

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_.push_back('\n');
  out_.append(stack_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Level& top = stack_.back();
  if (top.is_object) throw std::logic_error("JsonWriter: value in object without key");
  if (!top.empty) out_.push_back(',');
  top.empty = false;
  newline();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  stack_.push_back({true, true});
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (stack_.empty() || !stack_.back().is_object || after_key_)
    throw std::logic_error("JsonWriter: unbalanced end_object");
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  stack_.push_back({false, true});
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (stack_.empty() || stack_.back().is_object)
    throw std::logic_error("JsonWriter: unbalanced end_array");
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (stack_.empty() || !stack_.back().is_object || after_key_)
    throw std::logic_error("JsonWriter: key outside object");
  Level& top = stack_.back();
  if (!top.empty) out_.push_back(',');
  top.empty = false;
  newline();
  append_quoted(out_, k);
  out_.push_back(':');
  if (indent_ > 0) out_.push_back(' ');
  after_key_ = true;
  return *this;
}

void JsonWriter::append_quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  // Runs of characters written as they are go out in one append (IR strings are mostly plain).
  std::size_t plain = 0;
  auto flush = [&](std::size_t i) {
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f && c != 0xe2) continue;
    switch (c) {
      case '"':
        flush(i);
        out += "\\\"";
        break;
      case '\\':
        flush(i);
        out += "\\\\";
        break;
      case '\n':
        flush(i);
        out += "\\n";
        break;
      case '\r':
        flush(i);
        out += "\\r";
        break;
      case '\t':
        flush(i);
        out += "\\t";
        break;
      case '\b':
        flush(i);
        out += "\\b";
        break;
      case '\f':
        flush(i);
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          flush(i);
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
                   (static_cast<unsigned char>(s[i + 2]) == 0xa8 ||
                    static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
          flush(i);
          out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
          i += 2;
          plain = i + 1;
        }
        // else: a plain 0xe2 byte of another character, kept in the run
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out.push_back('"');
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  append_quoted(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t n) {
  before_value();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t n) {
  before_value();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) return null();
  before_value();
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  out_.append(text);
  // Keep doubles recognisably floating point so readers do not narrow them to integers.
  if (text.find_first_of(".eE") == std::string_view::npos) out_ += ".0";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_.append(json);
  return *this;
}

}  // namespace cg
