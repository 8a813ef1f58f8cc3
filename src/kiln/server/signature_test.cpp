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

TEST(Signature, StreamingMatchesEachSecretOverPieces) {
  StreamingSignatures signatures(
      {"another secret", std::string(k_secret), "", std::string(k_secret)});
  signatures.update("Hello, ");
  signatures.update("");
  signatures.update("World!");
  EXPECT_EQ(signatures.matches("sha256=" + std::string(k_hex)),
            (std::vector<bool>{false, true, false, true}));
}

TEST(Signature, StreamingRejectsWhatDoesNotMatch) {
  StreamingSignatures changed({std::string(k_secret)});
  changed.update("Hello, World?");
  EXPECT_EQ(changed.matches("sha256=" + std::string(k_hex)), std::vector<bool>{false});
  StreamingSignatures unprefixed({std::string(k_secret)});
  unprefixed.update(k_body);
  EXPECT_EQ(unprefixed.matches(k_hex), std::vector<bool>{false});
}

TEST(Signature, Sha256Hex) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace kiln::server
