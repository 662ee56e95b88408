#include "viewer/html.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A payload whose strings carry everything that could break out of the script element.
std::string hostile_payload() {
  cg::JsonWriter w(0);
  w.begin_object()
      .field("schema", "candle-graph/viewer/1")
      .key("model")
      .begin_object()
      .field("name", "</script><img src=x onerror=alert(1)>\xE2\x80\xA8<!--&")
      .end_object()
      .end_object();
  return w.take();
}

TEST(ViewerHtml, PayloadEscapingKeepsJsonButRemovesMarkup) {
  const std::string out = cg::viewer::escape_payload_json(hostile_payload());
  EXPECT_THAT(out, Not(HasSubstr("<")));
  EXPECT_THAT(out, Not(HasSubstr(">")));
  EXPECT_THAT(out, Not(HasSubstr("&")));
  EXPECT_THAT(out, Not(HasSubstr("\xE2\x80\xA8")));
  EXPECT_THAT(out, HasSubstr("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e"));
  // The escapes are JSON escapes, so the value round-trips: U+2028 survives as \u2028 (the JSON
  // writer may already have escaped it; either way no raw byte remains).
  EXPECT_THAT(out, HasSubstr("\\u2028"));
}

TEST(ViewerHtml, EscapesU2029AndLeavesOtherUtf8Alone) {
  EXPECT_EQ(cg::viewer::escape_payload_json("\"a\xE2\x80\xA9"
                                            "b\xC3\xA9\xE2\x80\x94\""),
            "\"a\\u2029b\xC3\xA9\xE2\x80\x94\"");
}

TEST(ViewerHtml, HtmlEscapingCoversAttributeQuotes) {
  EXPECT_EQ(cg::viewer::escape_html("<a href=\"x\" title='y'>&</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
}

TEST(ViewerHtml, PageIsOneOfflineFileWithCspAndInertPayload) {
  if (!cg::viewer::viewer_bundled()) {
    EXPECT_THROW((void)cg::viewer::render_viewer_html_from_payload("{}", {}), cg::InputError);
    GTEST_SKIP() << "viewer bundle not built (node_modules missing)";
  }
  const std::string html = cg::viewer::render_viewer_html_from_payload(
      hostile_payload(), {.title = "</title><script>alert(1)</script>"});
  EXPECT_THAT(html, HasSubstr("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                              "'none'; script-src 'sha256-"));
  EXPECT_THAT(html, HasSubstr("<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("@@CG_")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("<script src")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  // The payload script holds exactly our escaped JSON and ends at its own closing tag.
  const std::string open = "<script type=\"application/json\" id=\"cg-payload\">";
  const auto at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  const auto end = html.find("</script>", at);
  EXPECT_EQ(html.substr(at + open.size(), end - at - open.size()),
            cg::viewer::escape_payload_json(hostile_payload()));
}

TEST(ViewerHtml, PayloadTextThatLooksLikeAPlaceholderIsNotExpanded) {
  if (!cg::viewer::viewer_bundled()) GTEST_SKIP() << "viewer bundle not built";
  const std::string html = cg::viewer::render_viewer_html_from_payload(
      "{\"schema\":\"candle-graph/viewer/1\",\"x\":\"@@CG_TITLE@@\"}", {.title = "T"});
  EXPECT_THAT(html, HasSubstr("\"x\":\"@@CG_TITLE@@\""));
  EXPECT_THAT(html, HasSubstr("<title>T · candle-graph</title>"));
}

}  // namespace

namespace {

TEST(ViewerHtml, BigPayloadIsEmbeddedCompressedWhenZlibIsAvailable) {
  if (!cg::viewer::viewer_bundled()) GTEST_SKIP() << "viewer bundle not built";
  std::string big = "{\"schema\":\"candle-graph/viewer/1\",\"pad\":\"";
  big.append(std::size_t{3} << 20, 'x');
  big += "</script>\"}";
  const std::string html = cg::viewer::render_viewer_html_from_payload(big, {});
  const std::string gz = cg::viewer::payload_gzip_base64(big);
  if (gz.empty()) {
    EXPECT_THAT(html, ::testing::HasSubstr("\\u003c/script\\u003e\"}"));
    GTEST_SKIP() << "built without zlib: payload stays plain";
  }
  EXPECT_LT(html.size(), big.size() / 4);
  EXPECT_THAT(html, ::testing::HasSubstr("id=\"cg-payload-gz\">" + gz + "</script>"));
  EXPECT_EQ(gz.substr(0, 4), "H4sI");  // base64 of the gzip magic 1f 8b 08
}

// The deferred tree part follows the script and holds up the first frame until the parser has
// scanned it: from 128 KB it goes compressed, while a main part of that size stays plain.
TEST(ViewerHtml, TreePartIsCompressedFrom128KB) {
  if (!cg::viewer::viewer_bundled()) GTEST_SKIP() << "viewer bundle not built";
  std::string tree = "{\"modules\":[\"";
  tree.append(std::size_t{200} << 10, 'm');
  tree += "\"]}";
  const std::string main = "{\"schema\":\"candle-graph/viewer/1\",\"pad\":\"" +
                           std::string(std::size_t{100} << 10, 'o') + "\"}";
  const std::string gz = cg::viewer::payload_gzip_base64(tree);
  if (gz.empty()) GTEST_SKIP() << "built without zlib: parts stay plain";
  const std::string html = cg::viewer::render_viewer_html_from_payload(main, {}, tree);
  EXPECT_THAT(html, ::testing::HasSubstr("id=\"cg-payload-tree-gz\">" + gz + "</script>"));
  EXPECT_THAT(html, ::testing::HasSubstr("id=\"cg-payload-tree\"></script>"));
  EXPECT_THAT(html, ::testing::HasSubstr("id=\"cg-payload\">" + main + "</script>"));
  // A small tree stays plain text.
  const std::string small =
      cg::viewer::render_viewer_html_from_payload(main, {}, "{\"modules\":[]}");
  EXPECT_THAT(small, ::testing::HasSubstr("id=\"cg-payload-tree\">{\"modules\":[]}</script>"));
}

TEST(ViewerHtml, Base64PaddingIsExact) {
  // Different remainders mod 3 exercise the padded tail; gzip output length varies with input.
  for (const char* s : {"a", "ab", "abc", "abcd"}) {
    const std::string b = cg::viewer::payload_gzip_base64(s);
    if (b.empty()) GTEST_SKIP() << "built without zlib";
    EXPECT_EQ(b.size() % 4, 0U) << s;
  }
}

}  // namespace
