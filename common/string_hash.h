// Lets unordered containers of std::string be searched by a string_view
// without building a std::string (C++20 heterogeneous lookup): use with
// std::equal_to<>.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace arcprof {

struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

}  // namespace arcprof
