#pragma once
// Webhook signatures: GitHub, Gitea and Forgejo sign the raw body with HMAC-SHA256 under the
// repository's webhook secret and send "sha256=<hex>" in X-Hub-Signature-256.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::server {

// The lowercase hex HMAC-SHA256 of `body` under `secret`.
std::string hmac_sha256_hex(std::string_view secret, std::string_view body);

// True when `header` is "sha256=" and the HMAC of `body` under `secret` in hex (either case).
// The digests are compared in constant time (CRYPTO_memcmp), so the time taken says nothing
// about how much of a forged signature was right. An empty secret never verifies.
bool signature_matches(std::string_view secret, std::string_view body, std::string_view header);

// The HMAC-SHA256 of one body given in pieces, under several secrets at once: the webhook
// route checks a body against every configured repository's secret while it is read, so an
// unsigned body is refused without being kept or parsed.
class StreamingSignatures {
 public:
  explicit StreamingSignatures(const std::vector<std::string>& secrets);
  ~StreamingSignatures();
  StreamingSignatures(const StreamingSignatures&) = delete;
  StreamingSignatures& operator=(const StreamingSignatures&) = delete;

  void update(std::string_view piece);
  // Per secret, in the constructor's order: whether `header` is its signature of everything
  // given (as signature_matches). Ends the computation; call once.
  std::vector<bool> matches(std::string_view header);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The lowercase hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace kiln::server
