#include "kiln/exec/masker.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace kiln::exec {
namespace {

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
  });
}

}  // namespace

void Masker::add_one(std::string_view value) {
  if (value.size() < min_length_ || blank(value)) return;
  // Keep values_ sorted longest first (then by text) and without duplicates.
  auto before = [](const std::string& a, std::string_view b) {
    return a.size() != b.size() ? a.size() > b.size() : std::string_view(a) < b;
  };
  auto it = std::lower_bound(values_.begin(), values_.end(), value, before);
  if (it != values_.end() && *it == value) return;
  values_.insert(it, std::string(value));
  for (auto& bucket : by_first_byte_) bucket.clear();
  for (std::size_t i = 0; i < values_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(values_[i][0])].push_back(i);
}

void Masker::add(std::string_view secret) {
  std::unique_lock lock(mutex_);
  add_one(secret);
  if (secret.find('\n') == std::string_view::npos) return;
  std::size_t start = 0;
  while (start <= secret.size()) {
    auto end = secret.find('\n', start);
    if (end == std::string_view::npos) end = secret.size();
    auto line = secret.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    add_one(line);
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
  std::shared_lock lock(mutex_);
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
  std::shared_lock lock(mutex_);
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
  std::shared_lock lock(mutex_);
  return values_.size();
}

}  // namespace kiln::exec
