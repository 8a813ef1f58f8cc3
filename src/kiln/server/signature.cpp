#include "kiln/server/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/sha.h>

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

std::string to_hex(const unsigned char* data, std::size_t size) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string hex;
  for (std::size_t i = 0; i < size; ++i) {
    hex += k_digits[data[i] >> 4];
    hex += k_digits[data[i] & 15];
  }
  return hex;
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
  const auto digest = hmac(secret, body);
  return to_hex(digest.data(), digest.size());
}

bool signature_matches(std::string_view secret, std::string_view body, std::string_view header) {
  if (secret.empty() || !header.starts_with(k_prefix)) return false;
  auto given = parse_hex(header.substr(k_prefix.size()));
  if (!given) return false;
  auto expected = hmac(secret, body);
  return CRYPTO_memcmp(given->data(), expected.data(), k_digest_size) == 0;
}

struct StreamingSignatures::State {
  EVP_MAC* mac = nullptr;
  std::vector<EVP_MAC_CTX*> contexts;  // nullptr for an empty secret (it never verifies)
};

StreamingSignatures::StreamingSignatures(const std::vector<std::string>& secrets)
    : state_(std::make_unique<State>()) {
  state_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest_name, 0),
                               OSSL_PARAM_construct_end()};
  for (const auto& secret : secrets) {
    EVP_MAC_CTX* context = state_->mac && !secret.empty() ? EVP_MAC_CTX_new(state_->mac) : nullptr;
    if (context && EVP_MAC_init(context, reinterpret_cast<const unsigned char*>(secret.data()),
                                secret.size(), params) != 1) {
      EVP_MAC_CTX_free(context);
      context = nullptr;
    }
    state_->contexts.push_back(context);
  }
}

StreamingSignatures::~StreamingSignatures() {
  for (auto* context : state_->contexts) EVP_MAC_CTX_free(context);
  EVP_MAC_free(state_->mac);
}

void StreamingSignatures::update(std::string_view piece) {
  for (auto* context : state_->contexts)
    if (context)
      EVP_MAC_update(context, reinterpret_cast<const unsigned char*>(piece.data()), piece.size());
}

std::vector<bool> StreamingSignatures::matches(std::string_view header) {
  std::vector<bool> result(state_->contexts.size(), false);
  std::optional<Digest> given;
  if (header.starts_with(k_prefix)) given = parse_hex(header.substr(k_prefix.size()));
  for (std::size_t i = 0; i < state_->contexts.size(); ++i) {
    auto* context = state_->contexts[i];
    if (!context) continue;
    Digest digest{};
    std::size_t size = 0;
    const bool done = EVP_MAC_final(context, digest.data(), &size, digest.size()) == 1;
    EVP_MAC_CTX_free(context);
    state_->contexts[i] = nullptr;
    result[i] = given && done && size == k_digest_size &&
                CRYPTO_memcmp(given->data(), digest.data(), k_digest_size) == 0;
  }
  return result;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return to_hex(digest, sizeof digest);
}

}  // namespace kiln::server
