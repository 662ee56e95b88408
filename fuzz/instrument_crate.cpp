// `instrument` on mutated crates: the input is the `src/lib.rs` of a one-file crate (a Cargo.toml
// with candle-nn), instrumented as the command does it. Invariants: only cg::InputError escapes
// (a patched file that does not parse is a std::logic_error: a bug), and its text holds no control
// byte but newline and tab; when something was instrumented, the diff applies whole to the files
// it names (every context and removed line matches) and the patched lib.rs parses; when nothing
// was, the skipped list says why (or the crate was already instrumented). Seeds: small model
// crates (fuzz/corpus/instrument_crate/, fuzz/instrument_crate.seeds), macro-built types among
// them.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "instrument/instrument.hpp"
#include "rust/parse.hpp"
#include "util/error.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kManifest =
    "[package]\nname = \"fuzzed\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"
    "candle = { package = \"candle-core\", version = \"0.11.0\" }\ncandle-nn = \"0.11.0\"\n";

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    out.push_back(text.substr(at, end - at));
    at = end;
  }
  return out;
}

// Applies a unified diff as `patch -p1` would, to `files` (crate-relative path → text); false
// when a hunk does not match the text it names.
bool apply_diff(std::string_view diff, std::map<std::string, std::string>& files) {
  const std::vector<std::string_view> d = lines_of(diff);
  std::size_t i = 0;
  while (i < d.size()) {
    if (!d[i].starts_with("--- a/") || i + 1 >= d.size() || !d[i + 1].starts_with("+++ b/"))
      return false;
    std::string path(d[i].substr(6));
    if (!path.empty() && path.back() == '\n') path.pop_back();
    auto f = files.find(path);
    if (f == files.end()) return false;
    const std::vector<std::string_view> old = lines_of(f->second);
    std::string out;
    std::size_t next_old = 0;  // lines of `old` copied so far
    i += 2;
    while (i < d.size() && d[i].starts_with("@@ -")) {
      unsigned long start = std::strtoul(d[i].data() + 4, nullptr, 10);
      std::size_t at = start == 0 ? 0 : start - 1;
      if (at < next_old || at > old.size()) return false;
      for (; next_old < at; ++next_old)
        out += old[next_old];
      for (++i; i < d.size() && !d[i].starts_with("@@ -") && !d[i].starts_with("--- a/"); ++i) {
        std::string_view l = d[i];
        if (l.starts_with("\\ No newline")) {
          if (!out.empty() && out.back() == '\n') out.pop_back();
          continue;
        }
        std::string_view body = l.substr(1);
        if (l[0] == '+') {
          out += body;
          if (!body.ends_with('\n')) out += '\n';
          continue;
        }
        if (l[0] != ' ' && l[0] != '-') return false;
        if (next_old >= old.size()) return false;
        std::string_view want = old[next_old];
        if (!want.ends_with('\n') && body.ends_with('\n')) body.remove_suffix(1);
        if (want != body) return false;
        if (l[0] == ' ') out += want;
        ++next_old;
      }
    }
    for (; next_old < old.size(); ++next_old)
      out += old[next_old];
    f->second = std::move(out);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("cg-fuzz-instrument-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(d, ec);
    fs::create_directories(d / "src");
    FILE* m = std::fopen((d / "Cargo.toml").c_str(), "wb");
    if (m == nullptr) std::abort();
    std::fwrite(kManifest.data(), 1, kManifest.size(), m);
    std::fclose(m);
    return d;
  }();
  const std::string source(reinterpret_cast<const char*>(data), size);
  FILE* f = std::fopen((dir / "src" / "lib.rs").c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(source.data(), 1, source.size(), f);
  std::fclose(f);
  cg::pipeline::Options opts;
  opts.path = dir.string();
  try {
    const cg::instrument::Report r = cg::instrument::instrument_crate(opts);
    for (const auto& s : r.skipped)
      if (s.where.empty() || s.what.empty() || s.why.empty()) std::abort();
    if (r.instrumented.empty()) {
      // Nothing instrumented: the reasons are listed, unless it all was before.
      if (!r.diff.empty() || (r.skipped.empty() && !r.already_instrumented)) std::abort();
      return 0;
    }
    std::map<std::string, std::string> files{{"src/lib.rs", source},
                                             {"Cargo.toml", std::string(kManifest)}};
    if (!apply_diff(r.diff, files)) std::abort();
    if (!cg::rust::ParsedFile::parse("src/lib.rs", files["src/lib.rs"]).ok()) std::abort();
  } catch (const cg::InputError& e) {
    for (const char c : std::string_view(e.what()))
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        std::abort();
  }
  return 0;
}
