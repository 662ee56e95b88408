#pragma once
// Rust string literals as the compiler reads them: `"quo\"te"` is `quo"te`, `"\x41"` and
// `"\u{41}"` are `A`, `r#"a"b"#` is `a"b`, a `\` before a newline skips the newline and the
// whitespace after it. Keys, prefixes and serde renames are compared after this decoding.
#include <optional>
#include <string>
#include <string_view>

namespace cg::rust {

// The value of a string literal token (`"…"`, `r"…"`, `r#"…"#`, `b"…"`, `br"…"`, `c"…"`), or
// nullopt when the token is not a well-formed literal (an unknown escape, an unterminated
// literal, a `\x` above 0x7F in a str, a `\u{…}` that is not a scalar value).
std::optional<std::string> decode_string_literal(std::string_view token);

// The length of the string literal token that starts at `text[0]`, or 0 when none starts there.
std::size_t string_literal_length(std::string_view text);

}  // namespace cg::rust
