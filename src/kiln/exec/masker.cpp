#include "kiln/exec/masker.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <utility>

#include "kiln/core/text.h"

namespace kiln::exec {
namespace {

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
  });
}

std::string json_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char k_hex[] = "0123456789abcdef";
          out += "\\u00";
          out += k_hex[(c >> 4) & 15];
          out += k_hex[c & 15];
        } else {
          out += c;
        }
    }
  }
  return out;
}

// RFC 3986 percent encoding of everything but the unreserved characters; `plus` writes a
// space as '+' (HTML forms, query strings).
std::string percent_encode(std::string_view text, bool lower, bool plus) {
  const char* hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else if (plus && c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 15];
    }
  }
  return out;
}

std::vector<std::string> encoded_forms(std::string_view value) {
  std::vector<std::string> forms;
  for (bool url_safe : {false, true}) {
    forms.push_back(core::base64(value, url_safe));
    // A value preceded by `shift` bytes of another text (mod 3): the groups its bytes decide.
    for (std::size_t shift = 0; shift < 3 && shift < value.size(); ++shift) {
      const auto rest = value.substr(shift);
      forms.push_back(core::base64(rest.substr(0, rest.size() / 3 * 3), url_safe));
    }
  }
  forms.push_back(json_escape(value));
  for (bool lower : {false, true})
    for (bool plus : {false, true}) forms.push_back(percent_encode(value, lower, plus));
  return forms;
}

}  // namespace

void Masker::add_with_encodings(std::string_view value) {
  if (add_one(value, min_length_)) ++registered_;
  for (const auto& form : encoded_forms(value))
    if (form != value) add_one(form, std::max(min_length_, k_min_encoded));
}

bool Masker::add_one(std::string_view value, std::size_t min_length) {
  if (value.size() < min_length || blank(value)) return false;
  // Keep values_ sorted longest first (then by text) and without duplicates.
  auto before = [](const std::string& a, std::string_view b) {
    return a.size() != b.size() ? a.size() > b.size() : std::string_view(a) < b;
  };
  auto it = std::lower_bound(values_.begin(), values_.end(), value, before);
  if (it != values_.end() && *it == value) return false;
  values_.insert(it, std::string(value));
  for (auto& bucket : by_first_byte_) bucket.clear();
  for (std::size_t i = 0; i < values_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(values_[i][0])].push_back(i);
  return true;
}

void Masker::add(std::string_view secret) {
  WriterLock lock(mutex_);
  add_with_encodings(secret);
  if (secret.find('\n') == std::string_view::npos) return;
  std::size_t start = 0;
  while (start <= secret.size()) {
    auto end = secret.find('\n', start);
    if (end == std::string_view::npos) end = secret.size();
    auto line = secret.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    add_with_encodings(line);
    start = end + 1;
  }
}

std::vector<Masker::Range> Masker::ranges(std::string_view text, std::size_t masked) const {
  // Every match, in order of its start (the longest value at each position: a shorter one there
  // lies inside it), then the union of them.
  std::vector<Range> matches;
  if (masked > 0) matches.emplace_back(0, masked);
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[pos])];
    for (std::size_t index : bucket) {
      const auto& value = values_[index];
      if (text.substr(pos, value.size()) == value) {
        matches.emplace_back(pos, pos + value.size());
        break;
      }
    }
  }
  std::vector<Range> merged;
  for (auto [start, end] : matches) {
    if (!merged.empty() && start < merged.back().second)
      merged.back().second = std::max(merged.back().second, end);
    else
      merged.emplace_back(start, end);
  }
  return merged;
}

std::size_t Masker::hold_back(std::string_view text) const {
  std::size_t hold = 0;
  for (const auto& value : values_) {
    // The longest proper prefix of `value` that is a suffix of `text`.
    std::size_t longest = std::min(value.size() - 1, text.size());
    for (std::size_t n = longest; n > hold; --n) {
      if (text.substr(text.size() - n) == std::string_view(value).substr(0, n)) {
        hold = n;
        break;
      }
    }
  }
  return hold;
}

std::string Masker::mask(std::string_view text) const {
  ReaderLock lock(mutex_);
  if (values_.empty() || text.empty()) return std::string(text);
  auto matched = ranges(text);
  if (matched.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (auto [start, end] : matched) {
    out.append(text.substr(copied, start - copied));
    out.append(k_mask);
    copied = end;
  }
  out.append(text.substr(copied));
  return out;
}

std::string Masker::mask_piece(Line& line, std::string_view piece, bool last) const {
  ReaderLock lock(mutex_);
  std::string text = std::move(line.pending_);
  text.append(piece);
  const std::size_t continued = line.masked_;
  line.pending_.clear();
  line.masked_ = 0;
  // Only the bytes before the cut are shown now. Every match that starts before it is complete
  // in `text` (a longer one would make the held-back end longer), so their masking is known.
  const std::size_t cut = last ? text.size() : text.size() - hold_back(text);
  if (cut == 0) {
    line.pending_ = std::move(text);
    line.masked_ = continued;
    return {};
  }
  std::string out;
  std::size_t copied = 0;
  for (auto [start, end] : ranges(text, continued)) {
    if (start >= cut) break;
    out.append(text, copied, start - copied);
    if (start != 0 || continued == 0) out.append(k_mask);  // else the last piece wrote it
    copied = std::min(end, cut);
    if (end > cut) line.masked_ = end - cut;
  }
  if (copied < cut) out.append(text, copied, cut - copied);
  line.pending_ = text.substr(cut);
  return out;
}

std::size_t Masker::size() const {
  ReaderLock lock(mutex_);
  return registered_;
}

}  // namespace kiln::exec
