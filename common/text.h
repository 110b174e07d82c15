// Text from outside (thread and process names, symbols from perf maps, paths,
// capture contents) made safe for a terminal: control characters would let
// whoever chose the text move the cursor, set the window title or forge lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arcprof {

// Replaces C0 controls (including newline and tab), DEL, C1 controls (U+0080 to
// U+009F in UTF-8) and bytes that are not valid UTF-8 by "\xNN" escapes, one
// per byte. Valid printable UTF-8 passes unchanged.
inline std::string EscapeControl(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  };
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // The length of a well-formed UTF-8 sequence starting with c, or 0.
    size_t length = 0;
    uint32_t min = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4, min = 0x10000;
    }
    uint32_t code = length == 2 ? (c & 0x1f) : length == 3 ? (c & 0x0f) : (c & 0x07);
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0) == 0x80;
      code = (code << 6) | (next & 0x3f);
    }
    valid = valid && code >= min && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    if (!valid || (code >= 0x80 && code <= 0x9f)) {
      // Invalid UTF-8 or a C1 control (CSI is U+009B): escape its bytes.
      const size_t n = valid ? length : 1;
      for (size_t k = 0; k < n; ++k) escape(static_cast<unsigned char>(text[i + k]));
      i += n;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

// The one form of an error or warning line: "arcprof COMMAND: MESSAGE\n"
// ("arcprof: MESSAGE\n" without a command), the message escaped whole, its
// newlines too, so text from outside in it is one inert line. Every layer that
// prints an error builds it here (the CLI's stderr is also a SafeErrorStream,
// cli/error_stream.h).
inline std::string ErrorLine(std::string_view command, std::string_view message) {
  std::string line = "arcprof";
  if (!command.empty()) {
    line += ' ';
    line += EscapeControl(command);
  }
  line += ": ";
  line += EscapeControl(message);
  line += '\n';
  return line;
}

}  // namespace arcprof
