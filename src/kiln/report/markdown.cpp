#include "kiln/report/markdown.h"

#include <array>
#include <cctype>
#include <sstream>
#include <utility>
#include <vector>

namespace kiln::report {
namespace {

std::string escape_html(std::string_view text) {
  std::string out;
  for (char c : text) {
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

bool safe_url(std::string_view url) {
  auto colon = url.find(':');
  auto slash = url.find('/');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && slash < colon))
    return true;  // relative
  return url.starts_with("http://") || url.starts_with("https://") || url.starts_with("mailto:");
}

std::string inline_html(std::string_view text);

// `[label](url)` at the start of `text`: its HTML and length, or nothing.
std::pair<std::string, size_t> link_at(std::string_view text) {
  auto close = text.find("](");
  if (close == std::string_view::npos) return {};
  auto end = text.find(')', close);
  if (end == std::string_view::npos) return {};
  auto label = text.substr(1, close - 1);
  auto url = text.substr(close + 2, end - close - 2);
  if (!safe_url(url) || label.find('[') != std::string_view::npos) return {};
  return {"<a href=\"" + escape_html(url) + "\">" + inline_html(label) + "</a>", end + 1};
}

// Inline markup of a line: code spans (literal), links, bold, strike, italics; the rest escaped.
std::string inline_html(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> k_spans = {
      {{"**", "strong"}, {"~~", "del"}, {"*", "em"}, {"_", "em"}}};
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    auto rest = text.substr(i);
    if (rest[0] == '`') {
      auto end = rest.find('`', 1);
      if (end != std::string_view::npos) {
        out += "<code>" + escape_html(rest.substr(1, end - 1)) + "</code>";
        i += end + 1;
        continue;
      }
    }
    if (rest[0] == '[') {
      if (auto [html, length] = link_at(rest); length > 0) {
        out += html;
        i += length;
        continue;
      }
    }
    bool matched = false;
    for (const auto& [marker, tag] : k_spans) {
      if (!rest.starts_with(marker)) continue;
      auto end = rest.find(marker, marker.size());
      if (end == std::string_view::npos || end == marker.size()) continue;
      out += "<" + std::string(tag) + ">" +
             inline_html(rest.substr(marker.size(), end - marker.size())) + "</" +
             std::string(tag) + ">";
      i += end + marker.size();
      matched = true;
      break;
    }
    if (matched) continue;
    out += escape_html(rest.substr(0, 1));
    ++i;
  }
  return out;
}

std::string trim(std::string_view text) {
  auto begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  auto end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

// The cells of a pipe table row: "| a | b |" -> {"a", "b"}.
std::vector<std::string> cells(const std::string& row) {
  std::string text = trim(row);
  if (text.starts_with('|')) text.erase(0, 1);
  if (text.ends_with('|')) text.pop_back();
  std::vector<std::string> out;
  std::string cell;
  for (char c : text) {
    if (c == '|') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  out.push_back(trim(cell));
  return out;
}

bool is_delimiter_row(const std::string& line) {
  std::string text = trim(line);
  if (text.find('-') == std::string::npos || text.find('|') == std::string::npos) return false;
  return text.find_first_not_of("|-: ") == std::string::npos;
}

// "- item", "* item", "+ item" -> "item" (unordered); "12. item" -> "item" (ordered).
bool list_item(const std::string& line, bool& ordered, std::string& item) {
  std::string text = trim(line);
  if (text.size() > 1 && (text[0] == '-' || text[0] == '*' || text[0] == '+') && text[1] == ' ') {
    ordered = false;
    item = text.substr(2);
    return true;
  }
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits > 0 && digits + 1 < text.size() && text[digits] == '.' && text[digits + 1] == ' ') {
    ordered = true;
    item = text.substr(digits + 2);
    return true;
  }
  return false;
}

}  // namespace

std::string markdown_to_html(std::string_view markdown) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(markdown)};
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out, paragraph;
  auto flush_paragraph = [&] {
    if (!paragraph.empty()) out += "<p>" + inline_html(paragraph) + "</p>\n";
    paragraph.clear();
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string text = trim(lines[i]);
    if (text.empty()) {
      flush_paragraph();
      continue;
    }
    if (text.starts_with("```")) {
      flush_paragraph();
      std::string code;
      for (++i; i < lines.size() && !trim(lines[i]).starts_with("```"); ++i)
        code += lines[i] + "\n";
      out += "<pre><code>" + escape_html(code) + "</code></pre>\n";
      continue;
    }
    size_t level = text.find_first_not_of('#');
    if (level >= 1 && level <= 6 && level < text.size() && text[level] == ' ') {
      flush_paragraph();
      out += "<h" + std::to_string(level) + ">" + inline_html(trim(text.substr(level))) + "</h" +
             std::to_string(level) + ">\n";
      continue;
    }
    if (text.find_first_not_of('-') == std::string::npos && text.size() >= 3) {
      flush_paragraph();
      out += "<hr>\n";
      continue;
    }
    if (text.find('|') != std::string::npos && i + 1 < lines.size() &&
        is_delimiter_row(lines[i + 1])) {
      flush_paragraph();
      out += "<table>\n<tr>";
      for (const auto& cell : cells(text)) out += "<th>" + inline_html(cell) + "</th>";
      out += "</tr>\n";
      for (i += 2; i < lines.size() && trim(lines[i]).find('|') != std::string::npos; ++i) {
        out += "<tr>";
        for (const auto& cell : cells(lines[i])) out += "<td>" + inline_html(cell) + "</td>";
        out += "</tr>\n";
      }
      --i;
      out += "</table>\n";
      continue;
    }
    bool ordered = false;
    std::string item;
    if (list_item(text, ordered, item)) {
      flush_paragraph();
      const char* tag = ordered ? "ol" : "ul";
      out += std::string("<") + tag + ">\n";
      bool same = ordered;
      while (i < lines.size() && list_item(lines[i], same, item) && same == ordered) {
        out += "<li>" + inline_html(item) + "</li>\n";
        ++i;
      }
      --i;
      out += std::string("</") + tag + ">\n";
      continue;
    }
    paragraph += (paragraph.empty() ? "" : " ") + text;
  }
  flush_paragraph();
  return out;
}

}  // namespace kiln::report
