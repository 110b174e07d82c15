#include "model/name_regex.h"

namespace arcprof::model {

WholeNameRegex::WholeNameRegex(const std::string& pattern) : pattern_(pattern) {
  regex_t alone;
  // Checked on its own first: only a pattern with balanced groups keeps its
  // meaning inside "^(...)$".
  if (regcomp(&alone, pattern.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return;
  regfree(&alone);
  ok_ = regcomp(&regex_, ("^(" + pattern + ")$").c_str(), REG_EXTENDED | REG_NOSUB) == 0;
}

WholeNameRegex::~WholeNameRegex() {
  if (ok_) regfree(&regex_);
}

bool WholeNameRegex::Matches(const std::string& name) const {
  if (!ok_ || name.find('\0') != std::string::npos) return false;
  return regexec(&regex_, name.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace arcprof::model
