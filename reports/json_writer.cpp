#include "reports/json_writer.h"

namespace arcprof::reports {

std::string DumpJson(const Json& value, int indent) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

void JsonStream::Flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void JsonStream::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty()) return;
  Open& top = open_.back();
  if (!top.empty) buffer_ += ',';
  if (top.one_per_line) buffer_ += '\n';
  top.empty = false;
}

JsonStream& JsonStream::BeginObject() {
  BeforeValue();
  buffer_ += '{';
  open_.push_back({'}', false, true});
  return *this;
}

JsonStream& JsonStream::BeginArray(bool one_per_line) {
  BeforeValue();
  buffer_ += '[';
  open_.push_back({']', one_per_line, true});
  return *this;
}

JsonStream& JsonStream::End() {
  if (open_.empty()) return *this;
  const Open top = open_.back();
  open_.pop_back();
  if (top.one_per_line && !top.empty) buffer_ += '\n';
  buffer_ += top.close;
  if (open_.empty()) Flush();
  return *this;
}

JsonStream& JsonStream::Key(std::string_view key) {
  BeforeValue();
  buffer_ += DumpJson(Json(std::string(key)));
  buffer_ += ':';
  after_key_ = true;
  return *this;
}

JsonStream& JsonStream::Value(const Json& value) {
  BeforeValue();
  // What dump() does, appended to the buffer instead of a new string per value
  // (a big export writes millions of them).
  nlohmann::detail::serializer<Json> serializer(nlohmann::detail::output_adapter<char>(buffer_), ' ',
                                                nlohmann::json::error_handler_t::replace);
  serializer.dump(value, /*pretty_print=*/false, /*ensure_ascii=*/false, /*indent_step=*/0);
  if (buffer_.size() >= kFlushBytes) Flush();
  return *this;
}

JsonStream& JsonStream::Members(const Json& object) {
  for (auto it = object.begin(); it != object.end(); ++it) Key(it.key()).Value(it.value());
  return *this;
}

}  // namespace arcprof::reports
