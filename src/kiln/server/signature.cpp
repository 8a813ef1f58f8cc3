#include "kiln/server/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <optional>

namespace kiln::server {
namespace {

constexpr std::string_view k_prefix = "sha256=";
constexpr std::size_t k_digest_size = 32;

using Digest = std::array<unsigned char, k_digest_size>;

Digest hmac(std::string_view secret, std::string_view body) {
  Digest digest{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest.data(), &size);
  return digest;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<Digest> parse_hex(std::string_view hex) {
  if (hex.size() != 2 * k_digest_size) return std::nullopt;
  Digest digest{};
  for (std::size_t i = 0; i < k_digest_size; ++i) {
    int high = hex_value(hex[2 * i]), low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    digest[i] = static_cast<unsigned char>(high * 16 + low);
  }
  return digest;
}

}  // namespace

std::string hmac_sha256_hex(std::string_view secret, std::string_view body) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : hmac(secret, body)) {
    hex += k_digits[byte >> 4];
    hex += k_digits[byte & 15];
  }
  return hex;
}

bool signature_matches(std::string_view secret, std::string_view body, std::string_view header) {
  if (secret.empty() || !header.starts_with(k_prefix)) return false;
  auto given = parse_hex(header.substr(k_prefix.size()));
  if (!given) return false;
  auto expected = hmac(secret, body);
  return CRYPTO_memcmp(given->data(), expected.data(), k_digest_size) == 0;
}

}  // namespace kiln::server
