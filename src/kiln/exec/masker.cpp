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

std::string Masker::mask(std::string_view text) const {
  std::shared_lock lock(mutex_);
  if (values_.empty() || text.empty()) return std::string(text);
  // Collect every matched range, then replace the union of them.
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[pos])];
    for (std::size_t index : bucket) {
      const auto& value = values_[index];
      if (text.substr(pos, value.size()) == value) {
        ranges.emplace_back(pos, pos + value.size());
        break;  // longest first: a shorter one here lies inside this range
      }
    }
  }
  if (ranges.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  std::size_t i = 0;
  while (i < ranges.size()) {
    auto [start, end] = ranges[i];
    for (++i; i < ranges.size() && ranges[i].first < end; ++i)
      end = std::max(end, ranges[i].second);
    out.append(text.substr(copied, start - copied));
    out.append(k_mask);
    copied = end;
  }
  out.append(text.substr(copied));
  return out;
}

std::size_t Masker::hold_back(std::string_view text) const {
  std::shared_lock lock(mutex_);
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

std::size_t Masker::size() const {
  std::shared_lock lock(mutex_);
  return values_.size();
}

}  // namespace kiln::exec
