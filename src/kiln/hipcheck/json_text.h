#pragma once
// The pieces of hipcheck's JSON and SARIF output, appended to a string by hand: a report of
// millions of findings builds no JSON object per finding, and a string is escaped once, as it is
// written.
//
// The bytes are those nlohmann::json's dump(-1 or 2, ' ', false, replace) has always written
// for the same values (report_test.cpp checks random strings against it): '"', '\\' and the
// control characters escaped (\b \t \n \f \r, else \u00XX with lower-case hex), DEL and
// every valid UTF-8 sequence kept as they are, and each ill-formed part of a string (a byte that
// starts no sequence, or the longest start of a sequence that stops being one) replaced by
// U+FFFD, written as its UTF-8 bytes.

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::hipcheck {

// `text` as a JSON string, with its quotes.
void append_json_string(std::string& out, std::string_view text);
void append_decimal(std::string& out, std::uint64_t value);
void append_decimal(std::string& out, std::int64_t value);
inline void append_decimal(std::string& out, int value) {
  append_decimal(out, static_cast<std::int64_t>(value));
}
// 16 lower-case hex digits (a finding's fingerprint), without quotes.
void append_hex16(std::string& out, std::uint64_t value);

}  // namespace kiln::hipcheck
