#include "kiln/container/tools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::container {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr std::string_view k_ldd = R"(	linux-vdso.so.1 (0x00007ffd6b5f2000)
	libyaml-cpp.so.0.7 => /lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 (0x00007f0e1c000000)
	libstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f0e1be00000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e1bc1f000)
	/lib64/ld-linux-x86-64.so.2 (0x00007f0e1c2a8000)
)";

TEST(ParseLdd, LibrariesAndTheLoader) {
  auto libraries = parse_ldd(k_ldd);
  ASSERT_TRUE(libraries) << libraries.error().to_string();
  ASSERT_EQ(libraries->size(), 4u);
  EXPECT_EQ((*libraries)[0].name, "libyaml-cpp.so.0.7");
  EXPECT_EQ((*libraries)[0].path, "/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7");
  EXPECT_FALSE((*libraries)[0].loader);
  EXPECT_EQ((*libraries)[3].name, "ld-linux-x86-64.so.2");
  EXPECT_TRUE((*libraries)[3].loader);
}

TEST(ParseLdd, StaticAndMissing) {
  EXPECT_TRUE(parse_ldd("\tnot a dynamic executable\n")->empty());
  EXPECT_TRUE(parse_ldd("\tstatically linked\n")->empty());
  auto missing = parse_ldd("\tlibfoo.so.1 => not found\n");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("libfoo.so.1"));
}

TEST(ToolMounts, BinaryLibrariesAndAWrapperThroughTheLoader) {
  auto mounts = tool_mounts("/opt/kiln/bin/kiln", *parse_ldd(k_ldd), "/tmp/job/kiln");
  EXPECT_THAT(mounts.volumes, Contains("/opt/kiln/bin/kiln:/.kiln/tools/libexec/kiln:ro"));
  EXPECT_THAT(mounts.volumes, Contains(HasSubstr(":/.kiln/tools/lib/libstdc++.so.6:ro")));
  EXPECT_THAT(mounts.volumes, Contains(HasSubstr(":/.kiln/tools/lib/ld-linux-x86-64.so.2:ro")));
  EXPECT_THAT(mounts.volumes, Contains("/tmp/job/kiln:/.kiln/tools/bin/kiln:ro"));
  EXPECT_THAT(mounts.wrapper_script,
              HasSubstr("exec /.kiln/tools/lib/ld-linux-x86-64.so.2 --library-path "
                        "/.kiln/tools/lib /.kiln/tools/libexec/kiln \"$@\""));
  auto plain = tool_mounts("/opt/kiln/bin/kiln", {}, "/tmp/job/kiln");
  EXPECT_THAT(plain.wrapper_script, HasSubstr("exec /.kiln/tools/libexec/kiln \"$@\""));
}

}  // namespace
}  // namespace kiln::container
