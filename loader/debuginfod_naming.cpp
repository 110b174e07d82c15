#include "loader/debuginfod_naming.h"

#include <set>

namespace arcprof {
using namespace arcprof::model;
namespace {

bool Stripped(const FrameRecord& f) {
  return f.symbol.empty() && f.kind == FrameKind::kNative && f.reason == UnknownReason::kStripped &&
         !f.inlined && f.module != 0;
}

}  // namespace

DebuginfodNaming NameFramesFromDebuginfod(Profile& profile, DebuginfodFetcher& fetcher, bool wait) {
  DebuginfodNaming out;
  std::set<std::string> wanted;
  for (const FrameRecord& f : profile.frames.all()) {
    if (!Stripped(f)) continue;
    auto id = profile.build_ids.find(profile.frames.module_of(f));
    if (id != profile.build_ids.end() && !id->second.empty()) wanted.insert(id->second);
  }
  if (wanted.empty()) return out;
  for (const std::string& id : wanted) fetcher.Request(id);
  if (wait) fetcher.WaitForAll();
  for (const std::string& id : wanted) {
    const auto state = fetcher.state(id);
    if (state == DebuginfodFetcher::State::kFound) ++out.modules_named;
    else if (state == DebuginfodFetcher::State::kNotFound || wait) ++out.modules_not_found;
  }
  out.frames_named = profile.RenameFrames([&](const FrameRecord& f) -> std::optional<FrameRecord> {
    if (!Stripped(f)) return std::nullopt;
    auto id = profile.build_ids.find(profile.frames.module_of(f));
    if (id == profile.build_ids.end()) return std::nullopt;
    if (fetcher.state(id->second) != DebuginfodFetcher::State::kFound) return std::nullopt;
    auto named = fetcher.Find(id->second, f.address);
    if (!named) return std::nullopt;
    FrameRecord r = f;
    r.symbol = named->name;
    r.address = named->start;
    r.reason = UnknownReason::kNone;
    return r;
  });
  return out;
}

std::string DebuginfodSummaryLine(int64_t named, int64_t not_found) {
  if (named == 0 && not_found == 0) return "";
  return std::to_string(named) + (named == 1 ? " module" : " modules") +
         " named from debuginfod, " + std::to_string(not_found) + " not found";
}

}  // namespace arcprof
