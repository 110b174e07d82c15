// Text helpers shared by the export writers (SVG, HTML, text tables): symbol
// names come from binaries and runtimes, so they may hold any bytes. A single
// bad UTF-8 sequence makes an SVG unreadable as a whole, hence every name goes
// through ValidUtf8 before it is escaped. JSON has its own writer
// (reports/json_writer.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arcprof::reports {

// `text` with every invalid UTF-8 sequence (and code points XML 1.0 forbids:
// surrogates, U+FFFE, U+FFFF) replaced by U+FFFD, and C0 controls other than
// tab by '?'. Valid text is returned unchanged.
std::string ValidUtf8(std::string_view text);
// ValidUtf8, then & < > " ' as character references: safe in XML/HTML text and attributes.
std::string XmlEscape(std::string_view text);
// 1234567 -> "1,234,567" (FlameGraph's tooltips).
std::string WithThousands(uint64_t value);
// A fixed-point number with `decimals` digits, "C" locale ("75.63").
std::string Fixed(double value, int decimals);
// The folded name without its FlameGraph colour suffix ("_[k]", "_[j]", "_[i]", "_[w]").
std::string_view StripFoldedSuffix(std::string_view name);

}  // namespace arcprof::reports
