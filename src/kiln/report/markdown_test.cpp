#include "kiln/report/markdown.h"

#include <gtest/gtest.h>

namespace kiln::report {
namespace {

TEST(Markdown, WhatSummariesUse) {
  EXPECT_EQ(markdown_to_html("## Results :rocket:\n\nAll **3** tests _passed_ in `1.2s`.\n"),
            "<h2>Results :rocket:</h2>\n<p>All <strong>3</strong> tests <em>passed</em> in "
            "<code>1.2s</code>.</p>\n");
  EXPECT_EQ(markdown_to_html("| op | ms |\n|---|--:|\n| add | 1.5 |\n| mul | 2 |\n"),
            "<table>\n<tr><th>op</th><th>ms</th></tr>\n<tr><td>add</td><td>1.5</td></tr>\n"
            "<tr><td>mul</td><td>2</td></tr>\n</table>\n");
  EXPECT_EQ(markdown_to_html("- one\n- two\n\n1. first\n"),
            "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n<ol>\n<li>first</li>\n</ol>\n");
  EXPECT_EQ(markdown_to_html("```\na < b\n```\n"), "<pre><code>a &lt; b\n</code></pre>\n");
  EXPECT_EQ(markdown_to_html("see [the log](https://ci.example/log?a=1&b=2)"),
            "<p>see <a href=\"https://ci.example/log?a=1&amp;b=2\">the log</a></p>\n");
}

TEST(Markdown, NothingFromTheInputIsInterpreted) {
  EXPECT_EQ(markdown_to_html("<script>alert(1)</script>"),
            "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n");
  EXPECT_EQ(markdown_to_html("<img src=x onerror=alert(1)>"),
            "<p>&lt;img src=x onerror=alert(1)&gt;</p>\n");
  EXPECT_EQ(markdown_to_html("[click](javascript:alert(1))"),
            "<p>[click](javascript:alert(1))</p>\n");
  EXPECT_EQ(markdown_to_html("[x](\" onclick=\"alert(1))"),
            "<p><a href=\"&quot; onclick=&quot;alert(1\">x</a>)</p>\n");
  EXPECT_EQ(markdown_to_html("`<b>`"), "<p><code>&lt;b&gt;</code></p>\n");
}

}  // namespace
}  // namespace kiln::report
