#include "cli/error_stream.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/text.h"

namespace arcprof::cli {

SafeErrorStream::SafeErrorStream(std::ostream& target) : std::ostream(nullptr), buffer_(target) {
  rdbuf(&buffer_);
}

SafeErrorStream::~SafeErrorStream() { buffer_.pubsync(); }

void SafeErrorStream::Buffer::Emit(bool newline) {
  if (line_.empty() && !newline) return;
  std::string escaped = EscapeControl(line_);
  if (newline) escaped += '\n';
  line_.clear();
  target_.write(escaped.data(), static_cast<std::streamsize>(escaped.size()));
  target_.flush();
}

SafeErrorStream::Buffer::int_type SafeErrorStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  std::lock_guard<std::mutex> lock(mutex_);
  if (traits_type::to_char_type(c) == '\n') {
    Emit(true);
  } else {
    line_ += traits_type::to_char_type(c);
  }
  return c;
}

std::streamsize SafeErrorStream::Buffer::xsputn(const char* s, std::streamsize n) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string_view text(s, static_cast<size_t>(n));
  size_t start = 0;
  while (start < text.size()) {
    const size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos) {
      line_.append(text.substr(start));
      break;
    }
    line_.append(text.substr(start, newline - start));
    Emit(true);
    start = newline + 1;
  }
  return n;
}

int SafeErrorStream::Buffer::sync() {
  std::lock_guard<std::mutex> lock(mutex_);
  Emit(false);
  return target_ ? 0 : -1;
}

namespace {

// spdlog's messages with their text escaped whole (one line each), to stderr.
class EscapingStderrSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string escaped = EscapeControl(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    spdlog::memory_buf_t formatted;
    formatter_->format(copy, formatted);
    fwrite(formatted.data(), 1, formatted.size(), stderr);
  }
  void flush_() override { fflush(stderr); }
};

}  // namespace

void InstallEscapingLogger() {
  auto logger = std::make_shared<spdlog::logger>("arcprof", std::make_shared<EscapingStderrSink>());
  logger->set_level(spdlog::default_logger()->level());
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace arcprof::cli
