#include "kiln/report/junit.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <pugixml.hpp>

namespace kiln::report {
namespace {

double parse_seconds(const pugi::xml_node& node, const std::string& name,
                     std::vector<std::string>& notes) {
  auto attribute = node.attribute("time");
  if (!attribute) return 0;
  std::string text = attribute.value();
  // Some writers use a decimal comma or thousands separators ("1,234.5").
  std::string cleaned;
  for (char c : text)
    if (c != ',') cleaned += c;
  char* end = nullptr;
  double value = std::strtod(cleaned.c_str(), &end);
  if (cleaned.empty() || end == cleaned.c_str() || *end != '\0' || !std::isfinite(value) ||
      value < 0) {
    notes.push_back(
        fmt::format("time '{}' of test '{}' is not a number; counted as 0", text, name));
    return 0;
  }
  return value;
}

int rank(std::string_view status) {
  if (status == "error") return 3;
  if (status == "failed") return 2;
  if (status == "skipped") return 1;
  return 0;
}

std::string text_of(const pugi::xml_node& node) {
  std::string text;
  for (auto child : node.children())
    if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata)
      text += child.value();
  return text;
}

void read_case(const pugi::xml_node& node, const std::string& suite, JunitFile& out) {
  JunitCase c;
  c.suite = suite;
  c.classname = node.attribute("classname").value();
  c.name = node.attribute("name").value();
  if (c.name.empty()) c.name = "(unnamed)";
  // Where the test is written: gtest and pytest's xunit1 put file= and line= on the case.
  c.source_file = node.attribute("file").value();
  if (auto line = node.attribute("line").as_llong(0); line > 0 && line < (1ll << 30))
    c.source_line = static_cast<int>(line);
  c.seconds = parse_seconds(node, c.name, out.notes);
  c.status = "passed";
  // gtest marks tests it did not run with status="notrun" or result="skipped".
  std::string_view gtest_status = node.attribute("status").value();
  std::string_view gtest_result = node.attribute("result").value();
  if (gtest_status == "notrun" || gtest_result == "skipped" || gtest_result == "suppressed")
    c.status = "skipped";
  std::string details;
  for (auto child : node.children()) {
    std::string_view tag = child.name();
    std::string status;
    if (tag == "failure")
      status = "failed";
    else if (tag == "error")
      status = "error";
    else if (tag == "skipped")
      status = "skipped";
    if (!status.empty()) {
      // The worst child decides (error > failure > skipped); its message is the test's.
      if (rank(status) > rank(c.status)) {
        c.status = status;
        c.message = child.attribute("message").value();
        if (c.message.empty() && status != "skipped") c.message = child.attribute("type").value();
      }
      std::string body = text_of(child);
      if (status == "skipped") {
        if (c.message.empty()) c.message = body.substr(0, body.find('\n'));
      } else if (!body.empty()) {
        details += (details.empty() ? "" : "\n") + body;
      }
    } else if (tag == "system-out" || tag == "system-err") {
      std::string body = text_of(child);
      if (!body.empty()) c.output += (c.output.empty() ? "" : "\n") + body;
    }
  }
  if (c.message.empty() && (c.status == "failed" || c.status == "error") && !details.empty())
    c.message = details.substr(0, details.find('\n'));
  c.message = truncate_text(std::move(c.message), 4096);
  c.details = truncate_text(std::move(details));
  c.output = truncate_text(std::move(c.output));
  out.cases.push_back(std::move(c));
}

// Nested suites are allowed (some writers nest them); depth is bounded against hostile input.
void read_suite(const pugi::xml_node& node, const std::string& parent, JunitFile& out, int depth) {
  if (depth > 64) {
    out.notes.push_back("test suites nested more than 64 deep were skipped");
    return;
  }
  std::string name = node.attribute("name").value();
  if (name.empty()) name = parent;
  for (auto child : node.children()) {
    std::string_view tag = child.name();
    if (tag == "testcase")
      read_case(child, name, out);
    else if (tag == "testsuite")
      read_suite(child, name, out, depth + 1);
  }
}

}  // namespace

std::string truncate_text(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  // Back up to the start of a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::size_t dropped = text.size() - cut;
  text.resize(cut);
  text += fmt::format("\n[... {} bytes cut by kiln]", dropped);
  return text;
}

Result<JunitFile> parse_junit(std::string_view xml, std::string_view source) {
  pugi::xml_document document;
  // No entity expansion beyond XML's own five: pugixml does not expand DTD entities.
  auto parsed =
      document.load_buffer(xml.data(), xml.size(), pugi::parse_default | pugi::parse_cdata);
  if (!parsed)
    return fail(ErrorCode::invalid_input, "{}: not valid XML at byte {}: {}", source, parsed.offset,
                parsed.description());
  auto root = document.document_element();
  std::string_view tag = root.name();
  JunitFile out;
  if (tag == "testsuites") {
    for (auto child : root.children()) {
      std::string_view child_tag = child.name();
      if (child_tag == "testsuite")
        read_suite(child, root.attribute("name").value(), out, 1);
      else if (child_tag == "testcase")
        read_case(child, root.attribute("name").value(), out);
    }
  } else if (tag == "testsuite") {
    read_suite(root, "", out, 1);
  } else {
    return fail(ErrorCode::invalid_input,
                "{}: not JUnit XML: the root element is <{}>, not <testsuites> or <testsuite>",
                source, tag);
  }
  return out;
}

Result<JunitFile> parse_junit_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io_error, "{}: cannot read", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse_junit(text.str(), path.string());
}

bool is_default_result_file(std::string_view relative) {
  if (!relative.ends_with(".xml")) return false;
  auto slash = relative.rfind('/');
  std::string_view base = slash == std::string_view::npos ? relative : relative.substr(slash + 1);
  if (base.starts_with("junit") || base.starts_with("TEST-")) return true;
  std::string wrapped = "/" + std::string(relative);
  return wrapped.find("/test-results/") != std::string::npos;
}

}  // namespace kiln::report
