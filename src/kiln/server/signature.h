#pragma once
// Webhook signatures: GitHub, Gitea and Forgejo sign the raw body with HMAC-SHA256 under the
// repository's webhook secret and send "sha256=<hex>" in X-Hub-Signature-256.

#include <string>
#include <string_view>

namespace kiln::server {

// The lowercase hex HMAC-SHA256 of `body` under `secret`.
std::string hmac_sha256_hex(std::string_view secret, std::string_view body);

// True when `header` is "sha256=" and the HMAC of `body` under `secret` in hex (either case).
// The digests are compared in constant time (CRYPTO_memcmp), so the time taken says nothing
// about how much of a forged signature was right. An empty secret never verifies.
bool signature_matches(std::string_view secret, std::string_view body, std::string_view header);

}  // namespace kiln::server
