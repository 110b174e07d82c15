// C++ signatures without their parameter lists (report/export --no-params, like
// c++filt -p): overloads of one function then read alike.
#pragma once

#include <string>
#include <string_view>

#include "model/profile.h"

namespace arcprof::model {

// "ns::Foo<int>::bar(std::vector<int> const&) const [clone .cold]" ->
// "ns::Foo<int>::bar [clone .cold]": the last top-level parameter list is cut
// together with the cv/ref qualifiers after it; clone suffixes stay. Names
// without a parameter list (C functions, kernel symbols) are returned as is.
std::string WithoutParams(std::string_view name);

// Renames every native frame to WithoutParams of its symbol (addresses stay,
// so overloads remain separate frames; frames that become equal merge, with
// their call-tree nodes: Profile::RenameFrames).
void DropParams(Profile& profile);

}  // namespace arcprof::model
