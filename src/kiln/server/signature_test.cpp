#include "kiln/server/signature.h"

#include <gtest/gtest.h>

namespace kiln::server {
namespace {

// GitHub's documented example: secret "It's a Secret to Everybody", body "Hello, World!".
constexpr std::string_view k_secret = "It's a Secret to Everybody";
constexpr std::string_view k_body = "Hello, World!";
constexpr std::string_view k_hex =
    "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

TEST(Signature, MatchesGithubsExample) {
  EXPECT_EQ(hmac_sha256_hex(k_secret, k_body), k_hex);
  EXPECT_TRUE(signature_matches(k_secret, k_body, "sha256=" + std::string(k_hex)));
}

TEST(Signature, UppercaseHexIsAccepted) {
  std::string upper(k_hex);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(signature_matches(k_secret, k_body, "sha256=" + upper));
}

TEST(Signature, RejectsWhatDoesNotMatch) {
  const std::string good = "sha256=" + std::string(k_hex);
  EXPECT_FALSE(signature_matches(k_secret, "Hello, World?", good));
  EXPECT_FALSE(signature_matches("another secret", k_body, good));
  EXPECT_FALSE(signature_matches("", k_body, good));
  EXPECT_FALSE(signature_matches(k_secret, k_body, ""));
  EXPECT_FALSE(signature_matches(k_secret, k_body, std::string(k_hex)));  // no prefix
  EXPECT_FALSE(signature_matches(k_secret, k_body, "sha1=" + std::string(k_hex)));
  EXPECT_FALSE(signature_matches(k_secret, k_body, good.substr(0, good.size() - 2)));
  EXPECT_FALSE(signature_matches(k_secret, k_body, good + "00"));
  std::string flipped = good;
  flipped.back() = flipped.back() == '7' ? '8' : '7';
  EXPECT_FALSE(signature_matches(k_secret, k_body, flipped));
  std::string not_hex = good;
  not_hex[10] = 'g';
  EXPECT_FALSE(signature_matches(k_secret, k_body, not_hex));
}

}  // namespace
}  // namespace kiln::server
