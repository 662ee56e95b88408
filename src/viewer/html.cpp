#include "viewer/html.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "util/error.hpp"

#if defined(CG_VIEWER_BUNDLED)
#include "cg_viewer_template.hpp"
#endif
#if defined(CG_VIEWER_ZLIB)
#include <zlib.h>
#endif

namespace cg::viewer {

namespace {

#if defined(CG_VIEWER_BUNDLED)
constexpr std::string_view kTitleMark = "@@CG_TITLE@@";
constexpr std::string_view kPayloadMark = "@@CG_PAYLOAD@@";
constexpr std::string_view kPayloadGzMark = "@@CG_PAYLOAD_GZ@@";
constexpr std::string_view kTreeMark = "@@CG_TREE@@";
constexpr std::string_view kTreeGzMark = "@@CG_TREE_GZ@@";
// Above this size the payload goes gzip+base64: the page shrinks ~5x and the browser's HTML parser
// no longer has to scan tens of MB of script text (the JS inflates it with DecompressionStream).
constexpr std::size_t kGzipAbove = std::size_t{1} << 20;
// The deferred tree part follows the script: until the parser has scanned it the page paints no
// frame, so it goes compressed from 128 KB (a 7B Llama's 415 KB tree is 10x smaller in base64).
constexpr std::size_t kTreeGzipAbove = std::size_t{128} << 10;
#endif

void append_unicode_escape(std::string& out, unsigned code) {
  constexpr std::array<char, 16> hex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                        '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += hex[(code >> static_cast<unsigned>(shift)) & 0xFU];
  }
}

[[maybe_unused]] std::string base64(std::string_view bytes) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto v = (static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16U) |
                   (static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8U) |
                   static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 2]));
    out += kAlphabet[(v >> 18U) & 63U];
    out += kAlphabet[(v >> 12U) & 63U];
    out += kAlphabet[(v >> 6U) & 63U];
    out += kAlphabet[v & 63U];
  }
  if (i < bytes.size()) {
    auto v = static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16U;
    if (i + 1 < bytes.size())
      v |= static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8U;
    out += kAlphabet[(v >> 18U) & 63U];
    out += kAlphabet[(v >> 12U) & 63U];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6U) & 63U] : '=';
    out += '=';
  }
  return out;
}

#if defined(CG_VIEWER_ZLIB)
// gzip framing (windowBits 15 + 16), which DecompressionStream("gzip") reads.
std::string gzip(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  // zlib's API is not const-correct; it never writes through next_in.
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));  // NOLINT
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const auto written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  out.resize(written);
  return out;
}
#endif

}  // namespace

std::string payload_gzip_base64(std::string_view payload_json) {
#if defined(CG_VIEWER_ZLIB)
  return base64(gzip(payload_json));
#else
  (void)payload_json;
  return {};
#endif
}

std::string escape_payload_json(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<' || c == '>' || c == '&') {
      append_unicode_escape(out, static_cast<unsigned char>(c));
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      // U+2028/U+2029 (UTF-8 E2 80 A8/A9): line terminators in older JS, escaped for safety.
      append_unicode_escape(out, json[i + 2] == '\xA8' ? 0x2028U : 0x2029U);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool viewer_bundled() {
#if defined(CG_VIEWER_BUNDLED)
  return true;
#else
  return false;
#endif
}

#if defined(CG_VIEWER_BUNDLED)
namespace {
// One payload part as the page embeds it: escaped JSON, or (when big and zlib is there) gzip+base64
// with the plain slot left empty. Exactly one of the two is non-empty for a non-empty part.
struct EmbeddedPart {
  std::string plain;
  std::string gz;
};
EmbeddedPart embed(std::string_view json, std::size_t gzip_above) {
  EmbeddedPart out;
  if (json.size() > gzip_above) out.gz = payload_gzip_base64(json);
  if (out.gz.empty()) out.plain = escape_payload_json(json);
  return out;
}
}  // namespace
#endif

std::string render_viewer_html_from_payload(std::string_view payload_json,
                                            const ViewerOptions& options,
                                            std::string_view tree_json) {
#if defined(CG_VIEWER_BUNDLED)
  std::string tpl;
  for (const std::string_view part : generated::kTemplateParts)
    tpl += part;
  const std::string title = escape_html(options.title.empty() ? "model" : options.title);
  // Compressed only when a part is big and this build has zlib; base64 needs no escaping.
  const EmbeddedPart main = embed(payload_json, kGzipAbove);
  const EmbeddedPart tree = embed(tree_json, kTreeGzipAbove);
  // Substitute by position in the template only, so inserted text is never searched again.
  // Longer marks first where one is a prefix of another (…_GZ after its plain mark would match).
  const std::pair<std::string_view, const std::string*> marks[] = {{kTitleMark, &title},
                                                                   {kPayloadGzMark, &main.gz},
                                                                   {kPayloadMark, &main.plain},
                                                                   {kTreeGzMark, &tree.gz},
                                                                   {kTreeMark, &tree.plain}};
  std::string out;
  out.reserve(tpl.size() + main.plain.size() + main.gz.size() + tree.plain.size() + tree.gz.size() +
              title.size());
  std::size_t pos = 0;
  while (pos < tpl.size()) {
    const std::size_t next = tpl.find("@@CG_", pos);
    if (next == std::string::npos) break;
    out.append(tpl, pos, next - pos);
    const std::string_view rest = std::string_view(tpl).substr(next);
    const auto* mark = std::find_if(std::begin(marks), std::end(marks),
                                    [&](const auto& m) { return rest.starts_with(m.first); });
    if (mark != std::end(marks)) {
      out += *mark->second;
      pos = next + mark->first.size();
    } else {
      out += "@@CG_";
      pos = next + 5;
    }
  }
  out.append(tpl, pos, std::string::npos);
  return out;
#else
  (void)payload_json;
  (void)options;
  (void)tree_json;
  throw InputError("",
                   "this candle-graph was built without the HTML viewer bundle; "
                   "run scripts/setup.sh (npm ci) and rebuild so viewer/build.mjs can inline it");
#endif
}

}  // namespace cg::viewer
