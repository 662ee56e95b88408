#include "viewer/html.hpp"

#include <array>

#include "util/error.hpp"

#if defined(CG_VIEWER_BUNDLED)
#include "cg_viewer_template.hpp"
#endif

namespace cg::viewer {

namespace {

constexpr std::string_view kTitleMark = "@@CG_TITLE@@";
constexpr std::string_view kPayloadMark = "@@CG_PAYLOAD@@";

void append_unicode_escape(std::string& out, unsigned code) {
  constexpr std::array<char, 16> hex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                        '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += hex[(code >> static_cast<unsigned>(shift)) & 0xFU];
  }
}

}  // namespace

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

std::string render_viewer_html_from_payload(std::string_view payload_json,
                                            const ViewerOptions& options) {
#if defined(CG_VIEWER_BUNDLED)
  std::string tpl;
  for (const std::string_view part : generated::kTemplateParts)
    tpl += part;
  const std::string title = escape_html(options.title.empty() ? "model" : options.title);
  const std::string payload = escape_payload_json(payload_json);
  // Substitute by position in the template only, so inserted text is never searched again.
  std::string out;
  out.reserve(tpl.size() + payload.size() + title.size());
  std::size_t pos = 0;
  while (pos < tpl.size()) {
    const std::size_t next = tpl.find("@@CG_", pos);
    if (next == std::string::npos) break;
    out.append(tpl, pos, next - pos);
    const std::string_view rest = std::string_view(tpl).substr(next);
    if (rest.starts_with(kTitleMark)) {
      out += title;
      pos = next + kTitleMark.size();
    } else if (rest.starts_with(kPayloadMark)) {
      out += payload;
      pos = next + kPayloadMark.size();
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
  throw InputError("",
                   "this candle-graph was built without the HTML viewer bundle; "
                   "run scripts/setup.sh (npm ci) and rebuild so viewer/build.mjs can inline it");
#endif
}

}  // namespace cg::viewer
