#include "kiln/exec/workflow_commands.h"

#include <gtest/gtest.h>

#include "kiln/exec/step_output.h"

namespace kiln::exec {
namespace {

using core::Stream;

TEST(WorkflowCommands, ParsesNamePropertiesAndData) {
  auto c = parse_workflow_command("::error file=app.js,line=1,col=5,title=Bad thing::Missing ;");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "error");
  EXPECT_EQ(c->properties.at("file"), "app.js");
  EXPECT_EQ(c->properties.at("line"), "1");
  EXPECT_EQ(c->properties.at("col"), "5");
  EXPECT_EQ(c->properties.at("title"), "Bad thing");
  EXPECT_EQ(c->data, "Missing ;");
}

TEST(WorkflowCommands, TrimsAndRejectsUnknownOrMalformed) {
  auto c = parse_workflow_command("   ::debug::hello  \r");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data, "hello");
  EXPECT_FALSE(parse_workflow_command("::unknown::x"));
  EXPECT_FALSE(parse_workflow_command("::debug"));
  EXPECT_FALSE(parse_workflow_command("x ::debug::y"));
  EXPECT_FALSE(parse_workflow_command(":debug::y"));
  auto empty = parse_workflow_command("::endgroup::");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->data, "");
}

TEST(WorkflowCommands, Escaping) {
  auto c = parse_workflow_command("::warning title=a%3Ab%2Cc%25d%0Ae::line1%0Aline2%0D%25%3A");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->properties.at("title"), "a:b,c%d\ne");
  // %3A is not an escape in data.
  EXPECT_EQ(c->data, "line1\nline2\r%%3A");
  EXPECT_EQ(unescape_command_data("%250A"), "%0A");
  EXPECT_EQ(escape_command_data("50%\nx:y"), "50%25%0Ax:y");
  EXPECT_EQ(escape_command_property("a,b:c%"), "a%2Cb%3Ac%25");
  std::string weird = "%0A,:\r\n%%";
  EXPECT_EQ(unescape_command_property(escape_command_property(weird)), weird);
  EXPECT_EQ(unescape_command_data(escape_command_data(weird)), weird);
}

TEST(WorkflowCommands, PropertiesWithoutValueAreIgnored) {
  auto c = parse_workflow_command("::set-output name=x,bogus,=v::1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->properties.size(), 1u);
  EXPECT_EQ(c->properties.at("name"), "x");
}

TEST(WorkflowCommands, BareCommandName) {
  EXPECT_EQ(bare_command_name("::abc123::"), "abc123");
  EXPECT_EQ(bare_command_name("  ::tok::  "), "tok");
  EXPECT_FALSE(bare_command_name("::tok::x"));
  EXPECT_FALSE(bare_command_name("::::"));
}

// StepOutput without a process: feed lines, look at the sink.
struct OutputFixture : ::testing::Test {
  RecordingLogSink sink;
  Masker masker;
  StepOutput out{sink, masker};
  void lines(std::initializer_list<std::string_view> text) {
    for (auto l : text) out.on_line(Stream::out, l, false);
  }
};

TEST_F(OutputFixture, GroupsAnnotationsAndDebugAreEvents) {
  lines({"plain", "::group::Build %25", "inside", "::endgroup::", "::debug::dbg",
         "::notice file=a.c,line=3,endLine=4,col=2,endColumn=9,title=T::note%0Atwo"});
  auto events = sink.events();
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].kind, LogKind::output);
  EXPECT_EQ(events[1].kind, LogKind::group_start);
  EXPECT_EQ(events[1].text, "Build %");
  EXPECT_EQ(events[2].text, "inside");
  EXPECT_EQ(events[3].kind, LogKind::group_end);
  EXPECT_EQ(events[4].kind, LogKind::debug);
  EXPECT_EQ(events[4].text, "dbg");
  ASSERT_EQ(events[5].kind, LogKind::annotation);
  Annotation expected{.level = AnnotationLevel::notice,
                      .message = "note\ntwo",
                      .title = "T",
                      .file = "a.c",
                      .line = 3,
                      .end_line = 4,
                      .column = 2,
                      .end_column = 9};
  EXPECT_EQ(*events[5].annotation, expected);
  ASSERT_EQ(out.effects().annotations.size(), 1u);
  EXPECT_EQ(out.effects().annotations[0], expected);
  EXPECT_TRUE(out.effects().failures.empty());
  // The annotation's text is in its event; the command line itself is never plain output.
  for (const auto& e : events) EXPECT_EQ(e.text.find("::"), std::string::npos) << e.text;
  out.finish();
  EXPECT_EQ(sink.events().size(), 6u);  // no open group to close
}

TEST_F(OutputFixture, UnclosedGroupIsClosedAtFinish) {
  lines({"::group::a", "::group::b", "x"});
  out.finish();
  std::vector<LogKind> kinds;
  for (const auto& e : sink.events()) kinds.push_back(e.kind);
  EXPECT_EQ(kinds,
            (std::vector<LogKind>{LogKind::group_start, LogKind::group_end, LogKind::group_start,
                                  LogKind::output, LogKind::group_end}));
}

TEST_F(OutputFixture, AddMaskMasksLaterLinesAndAnnotations) {
  lines({"before s3cr3t", "::add-mask::s3cr3t", "after s3cr3t", "::error title=s3cr3t::x s3cr3t"});
  auto out_lines = sink.texts(LogKind::output);
  ASSERT_EQ(out_lines.size(), 2u);
  EXPECT_EQ(out_lines[0], "before s3cr3t");  // masking is from then on
  EXPECT_EQ(out_lines[1], "after ***");
  auto annotation = out.effects().annotations.at(0);
  EXPECT_EQ(annotation.title, "***");
  EXPECT_EQ(annotation.message, "x ***");
  for (const auto& e : sink.events()) EXPECT_EQ(e.text.find("add-mask"), std::string::npos);
}

TEST_F(OutputFixture, MultiLineAddMaskMasksEachLine) {
  lines({"::add-mask::first line%0Asecond line"});
  lines({"first line", "second line", "first line%0Asecond line"});
  EXPECT_EQ(sink.texts(LogKind::output), (std::vector<std::string>{"***", "***", "***%0A***"}));
}

TEST_F(OutputFixture, EmptyAddMaskWarns) {
  lines({"::add-mask::   "});
  ASSERT_EQ(out.effects().annotations.size(), 1u);
  EXPECT_EQ(out.effects().annotations[0].level, AnnotationLevel::warning);
  EXPECT_EQ(masker.size(), 0u);
}

TEST_F(OutputFixture, StopCommandsUntilToken) {
  lines({"::stop-commands::pause-123", "::error::not an error", "::add-mask::nope",
         "::pause-123::", "::error::real"});
  EXPECT_EQ(sink.texts(LogKind::output),
            (std::vector<std::string>{"::error::not an error", "::add-mask::nope"}));
  ASSERT_EQ(out.effects().annotations.size(), 1u);
  EXPECT_EQ(out.effects().annotations[0].message, "real");
  EXPECT_EQ(masker.size(), 0u);
}

TEST_F(OutputFixture, InvalidStopTokenFailsTheStep) {
  lines({"::stop-commands::error", "::stop-commands::", "::debug::still on"});
  EXPECT_EQ(out.effects().failures.size(), 2u);
  EXPECT_EQ(sink.texts(LogKind::debug), (std::vector<std::string>{"still on"}));
}

TEST_F(OutputFixture, SetOutputAndSaveStateAreHonouredWithWarning) {
  lines({"::set-output name=a::1%0A2", "::save-state name=pid::42", "::set-output::x"});
  EXPECT_EQ(out.effects().outputs, (KeyValues{{"a", "1\n2"}}));
  EXPECT_EQ(out.effects().state, (KeyValues{{"pid", "42"}}));
  ASSERT_EQ(out.effects().failures.size(), 1u);  // the one without a name
  int warnings = 0;
  for (const auto& a : out.effects().annotations) warnings += a.level == AnnotationLevel::warning;
  EXPECT_EQ(warnings, 2);
}

TEST_F(OutputFixture, SetEnvAndAddPathAreDisabled) {
  lines({"::set-env name=A::1", "::add-path::/x"});
  EXPECT_EQ(out.effects().failures.size(), 2u);
  EXPECT_TRUE(out.effects().env.empty());
  EXPECT_TRUE(out.effects().path_additions.empty());
}

TEST(StepOutput, SetEnvAndAddPathWhenUnsecureCommandsAllowed) {
  RecordingLogSink sink;
  Masker masker;
  StepOutput out(sink, masker, true);
  out.on_line(Stream::out, "::set-env name=A::1", false);
  out.on_line(Stream::out, "::add-path::/x", false);
  EXPECT_TRUE(out.effects().failures.empty());
  EXPECT_EQ(out.effects().env, (KeyValues{{"A", "1"}}));
  EXPECT_EQ(out.effects().path_additions, (std::vector<std::string>{"/x"}));
}

TEST_F(OutputFixture, EchoOnShowsCommandLines) {
  lines({"::debug::a", "::echo::on", "::debug::b", "::echo::off", "::debug::c", "::echo::maybe"});
  EXPECT_EQ(sink.texts(LogKind::command), (std::vector<std::string>{"::debug::b", "::echo::off"}));
  EXPECT_EQ(out.effects().failures.size(), 1u);
}

TEST_F(OutputFixture, UnknownCommandsAndLongLinesArePlainOutput) {
  lines({"::not-a-command::x"});
  EXPECT_EQ(sink.texts(LogKind::output), (std::vector<std::string>{"::not-a-command::x"}));
}

TEST_F(OutputFixture, SecretSplitAcrossLongLinePiecesIsMasked) {
  masker.add("TOPSECRET");
  out.on_line(Stream::out, "aaaaTOP", true);
  out.on_line(Stream::out, "SECRETbbbb", true);
  out.on_line(Stream::out, "cc", false);
  std::string joined;
  for (const auto& e : sink.events()) joined += e.text;
  EXPECT_EQ(joined, "aaaa***bbbbcc");
  EXPECT_EQ(joined.find("TOP"), std::string::npos);
  // A run of a repeated-byte secret that the cut goes through shows nothing of it.
  masker.add("zzzzzzzzzzzz");
  out.on_line(Stream::out, "x" + std::string(22, 'z'), true);
  out.on_line(Stream::out, "yy", false);
  auto events = sink.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2].text, "x***");
  EXPECT_TRUE(events[events.size() - 2].partial);
  EXPECT_EQ(events.back().text, "yy");
  EXPECT_FALSE(events.back().partial);
  // A piece that is a command is not treated as one.
  out.on_line(Stream::err, "::error::x", true);
  out.on_line(Stream::err, "y", false);
  EXPECT_TRUE(out.effects().annotations.empty());
}

}  // namespace
}  // namespace kiln::exec
