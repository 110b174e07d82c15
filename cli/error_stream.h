// The one way the command line prints errors and warnings: text from outside
// (thread and process names, paths, symbols, perf maps, attach replies,
// capture contents) never reaches the terminal raw, so it cannot set the
// window title, move the cursor or forge a line. The escaper is
// arcprof::EscapeControl (common/text.h): "\xNN" per control byte.
#pragma once

#include <memory>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

#include "common/text.h"

namespace arcprof::cli {

// One error line, the message escaped whole (common/text.h).
using arcprof::ErrorLine;

// An ostream over `target` that escapes every control character of what is
// written to it except the newlines that end lines (line by line, so a UTF-8
// character is never split). main() writes stderr only through one of these;
// ReportCommands wraps the stream it is given in one too.
class SafeErrorStream : public std::ostream {
 public:
  explicit SafeErrorStream(std::ostream& target);
  ~SafeErrorStream() override;
  SafeErrorStream(const SafeErrorStream&) = delete;
  SafeErrorStream& operator=(const SafeErrorStream&) = delete;

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::ostream& target) : target_(target) {}
    void Emit(bool newline);

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    std::ostream& target_;
    std::string line_;
    std::mutex mutex_;
  };
  Buffer buffer_;
};

// Routes spdlog (every layer's warnings) to stderr with each message escaped
// whole, in the format "arcprof: MESSAGE".
void InstallEscapingLogger();

}  // namespace arcprof::cli
