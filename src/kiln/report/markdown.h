#pragma once
// Job summaries ($GITHUB_STEP_SUMMARY) as HTML for `kiln report --format html`: the GitHub
// Flavored Markdown that summaries use, made safe. Every character of the input is escaped, and
// only this markup is produced from it: ATX headings (#..######), paragraphs, `-`/`*`/`+` and
// `1.` lists, fenced code blocks (```), `---` rules, pipe tables (a header row, a `|---|`
// delimiter row), `**bold**`, `*italic*`/`_italic_`, `` `code` ``, `~~strike~~` and links
// `[text](url)` whose URL is http(s), mailto or relative (any other scheme, `javascript:` say,
// is shown as text). Raw HTML in the input is shown as text, never interpreted.

#include <string>
#include <string_view>

namespace kiln::report {

std::string markdown_to_html(std::string_view markdown);

}  // namespace kiln::report
