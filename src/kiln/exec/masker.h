#pragma once
// Masker: replaces secret values with "***" in everything a job prints. One Masker is shared by
// all steps of a job (and may be shared by a whole run), because `::add-mask::` in one step masks
// the value in every later line of the job. Thread-safe: steps of parallel jobs may read it while
// another adds a value.
//
// What is masked (decided here, following GitHub where it is documented):
//  - every value passed to add(), whole, and each of its lines on its own (a multi-line secret
//    printed line by line is masked line by line); a trailing "\r" of a line is dropped;
//  - values that are empty or only whitespace are ignored (masking "" or " " would destroy the
//    log and protects nothing); any other value is masked whatever its length, as GitHub does,
//    unless the Masker was made with a larger min_length;
//  - occurrences may overlap: the union of all matched ranges is replaced, each maximal range by
//    one "***", so a longer secret is never half revealed by a shorter one inside it;
//  - the encoded forms of each value (and line) that GitHub's runner masks too, so that
//    `echo -n "user:$TOKEN" | base64`, a secret inside a JSON string or in a URL is masked:
//    base64 at the three alignments a value can have inside a longer encoded text (the whole
//    4-character groups its bytes alone decide; plus the padded encoding of the value itself),
//    also in the URL-safe alphabet; the JSON string escape; percent encoding (upper- and
//    lowercase hex, and `+` for space). Encoded forms shorter than k_min_encoded characters
//    are left out: they would mask unrelated text.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/thread_annotations.h"

namespace kiln::exec {

class Masker {
 public:
  static constexpr std::string_view k_mask = "***";
  static constexpr std::size_t k_min_encoded = 6;

  explicit Masker(std::size_t min_length = 1) : min_length_(min_length == 0 ? 1 : min_length) {}
  Masker(const Masker&) = delete;
  Masker& operator=(const Masker&) = delete;

  // Registers a secret (see above for what is masked).
  void add(std::string_view secret) EXCLUDES(mutex_);

  // `text` with every registered value replaced by "***".
  std::string mask(std::string_view text) const EXCLUDES(mutex_);

  // A long line that arrives in pieces (core::LineCallback's partial pieces), for mask_piece().
  class Line {
    friend class Masker;
    std::string pending_;     // held back: it could begin a secret that a later piece completes
    std::size_t masked_ = 0;  // bytes at the start of pending_ inside a range already shown as ***
  };

  // Appends `piece` to `line` and returns what can be shown of it now, masked: the pieces'
  // results of one line, joined, are exactly mask() of the whole line. The end that could begin
  // a secret is held back for the next piece; a masked range that the cut goes through is
  // written as "***" once and stays masked into the next piece. last=true: the line's end, all
  // that is left is returned and `line` is empty again.
  std::string mask_piece(Line& line, std::string_view piece, bool last) const EXCLUDES(mutex_);

  // How many distinct values were registered (their encoded forms not counted).
  std::size_t size() const EXCLUDES(mutex_);

 private:
  using Range = std::pair<std::size_t, std::size_t>;  // [begin, end) of a match in a text
  void add_with_encodings(std::string_view value) REQUIRES(mutex_);
  bool add_one(std::string_view value, std::size_t min_length) REQUIRES(mutex_);  // true when new
  // The union of the matched ranges in `text`, each maximal range once, in order; the first
  // `masked` bytes count as matched.
  std::vector<Range> ranges(std::string_view text, std::size_t masked = 0) const
      REQUIRES_SHARED(mutex_);
  // How many bytes at the end of `text` could begin a secret.
  std::size_t hold_back(std::string_view text) const REQUIRES_SHARED(mutex_);

  std::size_t min_length_;
  mutable SharedMutex mutex_;
  std::size_t registered_ GUARDED_BY(mutex_) = 0;
  std::vector<std::string> values_ GUARDED_BY(mutex_);  // distinct, longest first
  // values_ indexes by first byte, so mask() looks only at values that can start at a position.
  std::vector<std::size_t> by_first_byte_[256] GUARDED_BY(mutex_);
};

}  // namespace kiln::exec
