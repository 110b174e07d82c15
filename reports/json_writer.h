// The one JSON writer of every report and export. A document is built from
// nlohmann::ordered_json values (members stay in the order they are set) and
// dumped by nlohmann with every invalid UTF-8 sequence replaced by U+FFFD:
// names come from binaries, perf maps and thread names and may hold any bytes
// (nlohmann's default would throw on them).
//
// A document whose arrays grow with the capture (speedscope's samples, the
// xtree's nodes) is written with JsonStream: each element is still an
// ordered_json dumped by nlohmann, but the whole document is never held in
// memory at once, so a big export needs about what its largest element needs.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace arcprof::reports {

using Json = nlohmann::ordered_json;

// `value` as JSON text (indent < 0: one line), invalid UTF-8 as U+FFFD.
std::string DumpJson(const Json& value, int indent = -1);

// Writes one JSON document to `out` piece by piece; it places the commas and
// colons, nlohmann writes every key and value.
class JsonStream {
 public:
  explicit JsonStream(std::ostream& out) : out_(out) {}
  ~JsonStream() { Flush(); }
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;

  // `one_per_line`: a newline before each element (a readable big array).
  JsonStream& BeginObject();
  JsonStream& BeginArray(bool one_per_line = false);
  // Closes the innermost open object or array.
  JsonStream& End();
  // The key of the next member of the open object.
  JsonStream& Key(std::string_view key);
  JsonStream& Value(const Json& value);
  // Every member of `object` as a member of the open object.
  JsonStream& Members(const Json& object);
  // Writes what is buffered to the stream (done when the document is closed
  // and every 64 KiB: a stream such as std::cout may lock on each write).
  void Flush();

 private:
  struct Open {
    char close;
    bool one_per_line;
    bool empty;
  };
  void BeforeValue();

  static constexpr size_t kFlushBytes = 1 << 16;
  std::ostream& out_;
  std::string buffer_;
  std::vector<Open> open_;
  bool after_key_ = false;
};

}  // namespace arcprof::reports
