#pragma once
// The viewer page: one self-contained HTML file (all JS/CSS inlined at build time by
// viewer/build.mjs, pinned by hash in a Content-Security-Policy) around a
// `candle-graph/viewer/1` JSON payload.
#include <string>
#include <string_view>

namespace cg::viewer {

struct ViewerOptions {
  // Shown in the browser tab; defaults to "model". Any text is fine: it is HTML-escaped.
  std::string title;
};

// Makes serialized JSON safe inside <script type="application/json">: `<`, `>`, `&`, U+2028 and
// U+2029 become \u escapes. These bytes only occur inside JSON strings, so the value is unchanged
// while no model text can close the script element or start a comment.
std::string escape_payload_json(std::string_view json);

// Escapes & < > " ' for HTML text and attribute values.
std::string escape_html(std::string_view text);

// gzip (RFC 1952) of the payload, base64-encoded; empty when this build has no zlib.
std::string payload_gzip_base64(std::string_view payload_json);

// True when this build carries the bundled page (viewer/viewer.cmake ran viewer/build.mjs).
bool viewer_bundled();

// The complete page around `payload_json` (a serialized candle-graph/viewer/1 document, or its
// main part when `tree_json` holds the deferred one: see viewer::project_payload_parts).
// Throws cg::InputError when the build carries no bundle, naming the step that makes one.
std::string render_viewer_html_from_payload(std::string_view payload_json,
                                            const ViewerOptions& options,
                                            std::string_view tree_json = {});

}  // namespace cg::viewer
