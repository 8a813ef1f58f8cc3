#include "kiln/hipcheck/lexer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kiln::hipcheck {
namespace {

struct Lexed {
  std::vector<std::string> texts;
  std::vector<Token> tokens;
  LexStats stats;
};

Lexed lex_all(std::string_view source) {
  Lexed out;
  out.stats = lex(source, out.tokens);
  for (const Token& t : out.tokens) out.texts.emplace_back(t.text(source));
  return out;
}

std::vector<std::string> identifiers(std::string_view source) {
  std::vector<Token> tokens;
  lex(source, tokens);
  std::vector<std::string> out;
  for (const Token& t : tokens)
    if (t.kind == TokenKind::identifier) out.emplace_back(t.text(source));
  return out;
}

using Strings = std::vector<std::string>;

TEST(Lexer, SplitsIdentifiersNumbersAndOperators) {
  auto l = lex_all("x = a<<<1, 32>>>(b) >> 5 & 0x1Fu;");
  EXPECT_EQ(l.texts, (Strings{"x", "=", "a", "<<<", "1", ",", "32", ">>>", "(", "b", ")", ">>", "5",
                              "&", "0x1Fu", ";"}));
  EXPECT_EQ(l.tokens[0].kind, TokenKind::identifier);
  EXPECT_EQ(l.tokens[4].kind, TokenKind::number);
}

TEST(Lexer, DropsCommentsAndKeepsLiteralsWhole) {
  EXPECT_EQ(identifiers("a /* cudaMalloc */ b // cudaFree\n c"), (Strings{"a", "b", "c"}));
  auto l = lex_all(R"(f("cudaMalloc \" x", 'c', u8"y", L'z');)");
  EXPECT_EQ(l.texts, (Strings{"f", "(", R"("cudaMalloc \" x")", ",", "'c'", ",", "u8\"y\"", ",",
                              "L'z'", ")", ";"}));
  EXPECT_EQ(l.tokens[2].kind, TokenKind::string);
  EXPECT_EQ(l.tokens[4].kind, TokenKind::character);
}

TEST(Lexer, RawStringsEndOnlyAtTheirDelimiter) {
  std::string_view src = "a R\"x(cudaMalloc )\" \n cudaFree)x\" b";
  EXPECT_EQ(identifiers(src), (Strings{"a", "b"}));
  auto l = lex_all(src);
  EXPECT_EQ(l.tokens.back().line, 2u);
}

TEST(Lexer, LineCommentContinuesAfterBackslash) {
  EXPECT_EQ(identifiers("a // note \\\n cudaMalloc\n b"), (Strings{"a", "b"}));
}

TEST(Lexer, DigitSeparatorsAreNotCharacterLiterals) {
  auto l = lex_all("x = 1'000'000; cudaFree(y);");
  EXPECT_EQ(l.texts[2], "1'000'000");
  EXPECT_EQ(identifiers("x = 1'000'000; cudaFree(y);"), (Strings{"x", "cudaFree", "y"}));
}

TEST(Lexer, IfZeroBlocksAreDropped) {
  std::string_view src =
      "#if 0\ncudaA();\n#if X\ncudaB();\n#endif\n#else\nlive1();\n#endif\n"
      "#if 1\nlive2();\n#elif 1\ncudaC();\n#else\ncudaD();\n#endif\n"
      "#if FOO\nlive3();\n#else\nlive4();\n#endif\n"
      "#if (0)\ncudaE();\n#elif 0\ncudaF();\n#elif 1\nlive5();\n#endif\n";
  auto ids = identifiers(src);
  for (const std::string& id : ids) EXPECT_NE(id.rfind("cuda", 0), 0u) << id;
  for (std::string live : {"live1", "live2", "live3", "live4", "live5"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), live), ids.end()) << live;
}

TEST(Lexer, ApostropheInDeadBlockDoesNotSwallowTheEndif) {
  EXPECT_EQ(identifiers("#if 0\ndon't do this\n#endif\nlive();"), (Strings{"if", "endif", "live"}));
}

TEST(Lexer, DirectivesAreFlaggedAndIncludeOperandIsAHeaderName) {
  auto l = lex_all("#include <cuda_runtime.h>\n  # include \"cub/cub.cuh\"\nint a; #x\n");
  ASSERT_GE(l.tokens.size(), 6u);
  EXPECT_TRUE(l.tokens[0].flags & k_directive_hash);
  EXPECT_EQ(l.tokens[2].kind, TokenKind::header_name);
  EXPECT_EQ(l.texts[2], "<cuda_runtime.h>");
  EXPECT_EQ(l.tokens[5].kind, TokenKind::header_name);
  EXPECT_EQ(l.texts[5], "\"cub/cub.cuh\"");
  // A '#' after code on a line is not a directive.
  EXPECT_FALSE(l.tokens[9].flags & k_directive_hash);
  EXPECT_FALSE(l.tokens[9].flags & k_in_directive);
}

TEST(Lexer, DirectiveContinuesOverSplicedLines) {
  auto l = lex_all("#define CHECK(x) \\\n  cudaCheck(x)\nafter");
  ASSERT_EQ(l.texts.back(), "after");
  EXPECT_FALSE(l.tokens.back().flags & k_in_directive);
  EXPECT_TRUE(l.tokens[l.tokens.size() - 2].flags & k_in_directive);
  EXPECT_EQ(l.tokens[l.tokens.size() - 5].line, 2u);  // cudaCheck
}

TEST(Lexer, LinesColumnsAndCodeLines) {
  std::string_view src = "// only a comment\n\n  int é = cudaX;\n/* a\n b */ y\n";
  auto l = lex_all(src);
  EXPECT_EQ(l.stats.lines, 5u);
  EXPECT_EQ(l.stats.code_lines, 2u);
  ASSERT_EQ(l.texts[3], "cudaX");
  EXPECT_EQ(l.tokens[3].line, 3u);
  EXPECT_EQ(l.tokens[3].column(src), 11);  // é is one code point
  EXPECT_EQ(l.texts.back(), "y");
  EXPECT_EQ(l.tokens.back().line, 5u);
  EXPECT_EQ(l.tokens.back().column(src), 7);
}

TEST(Lexer, UnterminatedLiteralsEndAtTheLine) {
  EXPECT_EQ(identifiers("a = \"open\nb;\nc = 'x\nd"), (Strings{"a", "b", "c", "d"}));
  EXPECT_EQ(identifiers("x /* open"), (Strings{"x"}));
}

}  // namespace
}  // namespace kiln::hipcheck
