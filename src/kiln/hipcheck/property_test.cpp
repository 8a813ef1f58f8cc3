// Property: a CUDA name inside a comment, a string or character literal, a raw string or a dead
// #if block never counts, wherever it sits; the same name written as code always counts, at
// its exact line and column. Random programs from fixed seeds, so a failure reproduces.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/hipcheck/api_table.h"
#include "kiln/hipcheck/scanner.h"

namespace kiln::hipcheck {
namespace {

class Generator {
 public:
  explicit Generator(unsigned seed) : rng_(seed) {
    for (const ApiEntry& e : ApiTable::instance().entries()) {
      std::string_view n = e.cuda_name;
      if (n.starts_with("cu") || n.starts_with("CU")) names_.emplace_back(n);
    }
  }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  const std::string& name() { return names_[pick(names_.size())]; }

  // Code that never names CUDA.
  std::string filler() {
    static const char* const k_parts[] = {"int x = 1;\n",
                                          "x += y * 2;\n",
                                          "if (a < b) { c(); }\n",
                                          "auto s = \"plain\";\n",
                                          "char q = '\\'';\n",
                                          "f(a, b)[0] = 'x';\n",
                                          "/* note */ z--;\n",
                                          "// plain\n",
                                          "#define LOCAL(v) ((v) + 1)\n",
                                          "n = 1'000'000;\n",
                                          "p->member = q.other;\n",
                                          "\n"};
    std::string out;
    for (std::size_t i = pick(4); i > 0; --i) out += k_parts[pick(std::size(k_parts))];
    return out;
  }

  // `name` hidden where no compiler would see an identifier.
  std::string hidden(const std::string& n) {
    switch (pick(10)) {
      case 0:
        return "// " + n + "(x);\n";
      case 1:
        return "/* " + n + "\n  " + n + " */\n";
      case 2:
        return "const char* s = \"" + n + "(\\\"" + n + "\\\")\";\n";
      case 3:
        return "auto c = '" + n + "';\n";
      case 4:
        return "auto r = R\"d(" + n + ")\" " + n + ")d\";\n";
      case 5:
        return "#if 0\n" + n + "();\n#if 1\n" + n + ";\n#endif\n#endif\n";
      case 6:
        return "// continued \\\n" + n + "();\n";
      case 7:
        return "#if 1\nint k;\n#else\n" + n + "();\n#endif\n";
      case 8:
        return "auto w = u8R\"(" + n + ")\" L\"" + n + "\";\n";
      default:
        return "x = y; /* " + n + " */ z = \"" + n + "\";\n";
    }
  }

 private:
  std::mt19937 rng_;
  std::vector<std::string> names_;
};

TEST(Property, IdentifiersInCommentsAndLiteralsNeverCount) {
  for (unsigned seed = 1; seed <= 300; ++seed) {
    Generator gen(seed);
    std::string source;
    for (int part = 0; part < 12; ++part) source += gen.filler() + gen.hidden(gen.name());
    FileScan scan = scan_source(seed % 2 ? "p.cu" : "p.cpp", source);
    ASSERT_TRUE(scan.findings.empty())
        << "seed " << seed << ": " << scan.findings[0].line << ":" << scan.findings[0].column << " "
        << scan.findings[0].name << "\n"
        << source;
  }
}

TEST(Property, TheSameIdentifierAsCodeCountsAtItsPlace) {
  for (unsigned seed = 1; seed <= 300; ++seed) {
    Generator gen(seed);
    std::string source;
    for (int part = 0; part < 6; ++part) source += gen.filler() + gen.hidden(gen.name());
    const std::string& n = gen.name();
    int line = 1 + static_cast<int>(std::count(source.begin(), source.end(), '\n'));
    source += "  v = " + n + ";\n";
    for (int part = 0; part < 6; ++part) source += gen.hidden(gen.name()) + gen.filler();
    FileScan scan = scan_source("p.cpp", source);
    ASSERT_EQ(scan.findings.size(), 1u) << "seed " << seed << "\n" << source;
    EXPECT_EQ(scan.findings[0].name, n);
    EXPECT_EQ(scan.findings[0].line, line);
    EXPECT_EQ(scan.findings[0].column, 7);
  }
}

}  // namespace
}  // namespace kiln::hipcheck
