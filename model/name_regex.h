// The one regex helper: --root NAME|REGEX of the arcflow views and of every
// export matches frame display names (model/frame_name.h) with it.
#pragma once

#include <regex.h>

#include <string>

namespace arcprof::model {

// A POSIX extended regex (grep -E syntax) matched against whole names.
// glibc's matcher is used rather than std::regex, whose libstdc++ executor
// recurses once per character and backtracks exponentially: long C++ names
// overflowed the stack in fuzzing. The pattern is compiled anchored and with
// REG_NOSUB, which lets glibc match without tracking subexpressions (that
// tracking made a 200 kB name take a minute).
class WholeNameRegex {
 public:
  explicit WholeNameRegex(const std::string& pattern);
  ~WholeNameRegex();
  WholeNameRegex(const WholeNameRegex&) = delete;
  WholeNameRegex& operator=(const WholeNameRegex&) = delete;

  // False for a pattern that did not compile (callers still compare names
  // exactly: "operator()(" is a name, not a regex) and for names holding NUL.
  bool Matches(const std::string& name) const;
  // The --root rule of every view and export: the name equals the pattern
  // exactly, or the pattern (as a regex) matches the whole name.
  bool MatchesName(const std::string& name) const { return name == pattern_ || Matches(name); }

 private:
  std::string pattern_;
  regex_t regex_{};
  bool ok_ = false;
};

}  // namespace arcprof::model
