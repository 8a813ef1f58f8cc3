#include "kiln/workflow/glob.h"

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <utility>

namespace kiln::workflow {

// The pattern compiles to a Thompson NFA that is simulated state-set by state-set, so matching
// costs O(|subject| * |states|) whatever the pattern: no backtracking, no blow-up on `**/**/**`.
//
// Every state has at most one consuming transition (a byte set, to `next`) and at most one
// epsilon edge. Epsilon edges only point forward, which keeps the closure a simple walk.
struct Atom;

struct Glob::Program {
  struct State {
    std::bitset<256> accepts;  // bytes the consuming transition takes
    int next = -1;             // target of the consuming transition; -1: none
    int eps = -1;              // target of the epsilon edge; -1: none
  };
  // A pattern is prefix · middle · suffix, where prefix and suffix are plain strings (most
  // patterns start with a directory or end with an extension). They are compared directly, and
  // only the middle runs through the NFA, or through a fast path when it is one wildcard.
  std::string prefix, suffix;
  enum class Middle { empty, double_star, star, nfa };
  Middle middle = Middle::empty;
  std::vector<State> states;  // state 0 is the start; the last state is the only final one

  bool run(std::string_view subject) const;
  bool run_nfa(std::string_view subject) const;
  static std::vector<State> build(const std::vector<Atom>& atoms);
};

namespace {

constexpr int k_max_pattern_length = 4096;

int range_kind(char c) {  // ranges may only stay within one of a-z, A-Z, 0-9
  if (c >= 'a' && c <= 'z') return 1;
  if (c >= 'A' && c <= 'Z') return 2;
  if (c >= '0' && c <= '9') return 3;
  return 0;
}

}  // namespace

// One element of a pattern: a set of bytes with a repetition, or a wildcard.
struct Atom {
  enum class Kind { one, optional, one_or_more, star, double_star, double_star_slash };
  Kind kind = Kind::one;
  std::bitset<256> set;  // for one / optional / one_or_more
};

namespace {

std::unexpected<Error> bad_pattern(std::string_view pattern, size_t column, std::string_view why) {
  return fail(ErrorCode::invalid_input, "invalid filter pattern '{}' at character {}: {}", pattern,
              column + 1, why);
}

Result<std::vector<Atom>> parse(std::string_view pattern) {
  std::vector<Atom> atoms;
  size_t i = 0;
  while (i < pattern.size()) {
    char c = pattern[i];
    if (c == '*') {
      Atom atom;
      if (i + 1 < pattern.size() && pattern[i + 1] == '*') {
        if (i + 2 < pattern.size() && pattern[i + 2] == '/') {
          atom.kind = Atom::Kind::double_star_slash;  // `**/`: no directory or any directories
          i += 3;
        } else {
          atom.kind = Atom::Kind::double_star;
          i += 2;
        }
      } else {
        atom.kind = Atom::Kind::star;
        i += 1;
      }
      atoms.push_back(atom);
      continue;
    }
    if (c == '?' || c == '+') {
      if (atoms.empty() || atoms.back().kind != Atom::Kind::one)
        return bad_pattern(pattern, i,
                           fmt::format("'{}' must follow a character or a [] class (escape it "
                                       "as '\\{}' to match it literally)",
                                       c, c));
      atoms.back().kind = c == '?' ? Atom::Kind::optional : Atom::Kind::one_or_more;
      ++i;
      continue;
    }
    Atom atom;
    if (c == '\\') {
      if (i + 1 >= pattern.size())
        return bad_pattern(pattern, i, "'\\' at the end escapes nothing");
      atom.set.set(static_cast<unsigned char>(pattern[i + 1]));
      i += 2;
    } else if (c == '[') {
      size_t open = i;
      ++i;
      if (i < pattern.size() && pattern[i] == ']')
        return bad_pattern(pattern, open, "empty character class '[]'");
      while (i < pattern.size() && pattern[i] != ']') {
        char first = pattern[i];
        if (first == '\\') {
          if (i + 1 >= pattern.size()) break;  // reported as unclosed below
          first = pattern[i + 1];
          atom.set.set(static_cast<unsigned char>(first));
          i += 2;
          continue;
        }
        if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
          char last = pattern[i + 2];
          if (range_kind(first) == 0 || range_kind(first) != range_kind(last) || first > last)
            return bad_pattern(pattern, i,
                               fmt::format("invalid range '{}-{}': ranges can only include "
                                           "a-z, A-Z and 0-9",
                                           first, last));
          for (int b = first; b <= last; ++b) atom.set.set(static_cast<unsigned char>(b));
          i += 3;
          continue;
        }
        atom.set.set(static_cast<unsigned char>(first));
        ++i;
      }
      if (i >= pattern.size()) return bad_pattern(pattern, open, "'[' is never closed by ']'");
      ++i;  // the ']'
    } else {
      atom.set.set(static_cast<unsigned char>(c));
      ++i;
    }
    atoms.push_back(atom);
  }
  return atoms;
}

}  // namespace

std::vector<Glob::Program::State> Glob::Program::build(const std::vector<Atom>& atoms) {
  std::vector<State> states;
  std::bitset<256> all;
  all.set();
  std::bitset<256> not_slash = all;
  not_slash.reset('/');
  auto add = [&]() {
    states.emplace_back();
    return static_cast<int>(states.size()) - 1;
  };
  for (const Atom& atom : atoms) {
    int s = add();
    switch (atom.kind) {
      case Atom::Kind::one:
        states[s].accepts = atom.set;
        states[s].next = s + 1;
        break;
      case Atom::Kind::optional:
        states[s].accepts = atom.set;
        states[s].next = s + 1;
        states[s].eps = s + 1;
        break;
      case Atom::Kind::one_or_more: {  // x then x*
        states[s].accepts = atom.set;
        states[s].next = s + 1;
        int loop = add();
        states[loop].accepts = atom.set;
        states[loop].next = loop;
        states[loop].eps = loop + 1;
        break;
      }
      case Atom::Kind::star:
        states[s].accepts = not_slash;
        states[s].next = s;
        states[s].eps = s + 1;
        break;
      case Atom::Kind::double_star:
        states[s].accepts = all;
        states[s].next = s;
        states[s].eps = s + 1;
        break;
      case Atom::Kind::double_star_slash: {  // (.+/)?
        int first = s, loop = add(), slash = add();
        states[first].accepts = all;  // at least one character before the slash
        states[first].next = loop;
        states[first].eps = slash + 1;  // or nothing at all
        states[loop].accepts = all;
        states[loop].next = loop;
        states[loop].eps = slash;
        states[slash].accepts.set('/');
        states[slash].next = slash + 1;
        break;
      }
    }
  }
  add();  // the final state
  return states;
}

// Scratch space reused across matches on one thread, so that matching does not allocate.
struct Scratch {
  std::vector<int> current, following;
  std::vector<uint32_t> mark;  // mark[s] == generation: s is already in the set being built
  uint32_t generation = 0;
};

bool Glob::Program::run(std::string_view subject) const {
  if (subject.size() < prefix.size() + suffix.size() || !subject.starts_with(prefix) ||
      !subject.ends_with(suffix))
    return false;
  std::string_view rest =
      subject.substr(prefix.size(), subject.size() - prefix.size() - suffix.size());
  switch (middle) {
    case Middle::empty:
      return rest.empty();
    case Middle::double_star:
      return true;
    case Middle::star:
      return rest.find('/') == std::string_view::npos;
    case Middle::nfa:
      return run_nfa(rest);
  }
  return false;
}

bool Glob::Program::run_nfa(std::string_view subject) const {
  thread_local Scratch scratch;
  auto& [current, following, mark, generation] = scratch;
  if (mark.size() < states.size()) mark.resize(states.size(), 0);
  auto next_generation = [&] {
    if (++generation == 0) {  // wrapped: forget every stamp
      std::fill(mark.begin(), mark.end(), 0);
      generation = 1;
    }
  };
  // Adds `s` and the states its epsilon chain reaches (one edge each, so no stack is needed).
  auto add = [&](std::vector<int>& set, int s) {
    while (s >= 0 && mark[s] != generation) {
      mark[s] = generation;
      set.push_back(s);
      s = states[s].eps;
    }
  };
  current.clear();
  next_generation();
  add(current, 0);
  for (char ch : subject) {
    if (current.empty()) return false;
    next_generation();
    following.clear();
    auto byte = static_cast<unsigned char>(ch);
    for (int s : current) {
      const State& state = states[s];
      if (state.next >= 0 && state.accepts[byte]) add(following, state.next);
    }
    current.swap(following);
  }
  const int final_state = static_cast<int>(states.size()) - 1;
  return std::ranges::find(current, final_state) != current.end();
}

Result<Glob> Glob::compile(std::string_view pattern) {
  if (pattern.size() > k_max_pattern_length)
    return fail(ErrorCode::invalid_input, "filter pattern is longer than {} characters",
                k_max_pattern_length);
  KILN_TRY(std::vector<Atom> atoms, parse(pattern));
  auto program = std::make_shared<Program>();
  // Peel plain characters off both ends (an atom matching exactly one fixed byte).
  auto single_byte = [](const Atom& atom) -> int {
    if (atom.kind != Atom::Kind::one || atom.set.count() != 1) return -1;
    for (int b = 0; b < 256; ++b)
      if (atom.set.test(static_cast<size_t>(b))) return b;
    return -1;
  };
  size_t begin = 0, end = atoms.size();
  for (int b; begin < end && (b = single_byte(atoms[begin])) >= 0; ++begin)
    program->prefix += static_cast<char>(b);
  for (int b; end > begin && (b = single_byte(atoms[end - 1])) >= 0; --end)
    program->suffix.insert(program->suffix.begin(), static_cast<char>(b));
  std::vector<Atom> middle(atoms.begin() + static_cast<long>(begin),
                           atoms.begin() + static_cast<long>(end));
  using Middle = Program::Middle;
  if (middle.empty())
    program->middle = Middle::empty;
  else if (middle.size() == 1 && middle[0].kind == Atom::Kind::double_star)
    program->middle = Middle::double_star;
  else if (middle.size() == 1 && middle[0].kind == Atom::Kind::star)
    program->middle = Middle::star;
  else {
    program->middle = Middle::nfa;
    program->states = Program::build(middle);
  }
  Glob glob;
  glob.pattern_ = std::string(pattern);
  glob.program_ = std::move(program);
  return glob;
}

bool Glob::matches(std::string_view subject) const { return program_ && program_->run(subject); }

Result<FilterList> FilterList::compile(const std::vector<std::string>& patterns) {
  FilterList list;
  for (const std::string& raw : patterns) {
    std::string_view pattern = raw;
    bool negated = !pattern.empty() && pattern.front() == '!';
    if (negated) pattern.remove_prefix(1);
    KILN_TRY(Glob glob, Glob::compile(pattern));
    list.patterns_.emplace_back(negated, std::move(glob));
  }
  return list;
}

bool FilterList::matches(std::string_view subject) const {
  // Walk backwards: the last pattern that matches decides.
  for (auto it = patterns_.rbegin(); it != patterns_.rend(); ++it)
    if (it->second.matches(subject)) return !it->first;
  return false;
}

}  // namespace kiln::workflow
