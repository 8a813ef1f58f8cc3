#include "kiln/core/text.h"

namespace kiln::core {

std::string_view trim(std::string_view text) {
  constexpr std::string_view k_space = " \t\n\v\f\r";
  const auto begin = text.find_first_not_of(k_space);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(k_space) - begin + 1);
}

std::string base64(std::string_view bytes, bool url_safe, bool pad) {
  const char* alphabet = url_safe
                             ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                             : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 |
                       static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[(v >> shift) & 63];
  }
  if (i == bytes.size()) return out;
  const bool two = i + 2 == bytes.size();
  const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 |
                     (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0u);
  out += alphabet[(v >> 18) & 63];
  out += alphabet[(v >> 12) & 63];
  if (two) out += alphabet[(v >> 6) & 63];
  if (pad) out.append(two ? 1 : 2, '=');
  return out;
}

}  // namespace kiln::core
