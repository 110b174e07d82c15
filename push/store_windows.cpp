#include "push/store_windows.h"

#include <sys/stat.h>

namespace arcprof::push {
using namespace arcprof::model;
using namespace arcprof::store;

std::vector<WindowInfo> ToWindowInfos(const std::vector<UnsentWindow>& unsent) {
  std::vector<WindowInfo> out;
  out.reserve(unsent.size());
  for (const UnsentWindow& w : unsent) {
    WindowInfo info;
    info.id = w.number;
    info.stable_id = w.id;
    info.start_unix_ns = w.start_unix_ns;
    info.end_unix_ns = w.end_unix_ns;
    out.push_back(std::move(info));
  }
  return out;
}

bool IsStoreDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::unique_ptr<StoreWindows>> StoreWindows::Open(const std::string& dir) {
  auto store = WindowStore::OpenForReading(dir);
  if (!store) return store.error();
  return std::unique_ptr<StoreWindows>(new StoreWindows(std::move(*store)));
}

Result<std::vector<WindowInfo>> StoreWindows::Unsent(const std::string& destination) {
  auto unsent = store_.Unsent(destination);
  if (!unsent) return unsent.error();
  return ToWindowInfos(*unsent);
}

Result<Profile> StoreWindows::Read(const WindowInfo& window) {
  {
    std::lock_guard lock(kept_mutex_);
    if (!kept_id_.empty() && kept_id_ == window.stable_id) {
      kept_id_.clear();
      Profile kept = std::move(kept_);
      kept_ = Profile();
      return kept;
    }
  }
  return store_.Read(window.stable_id);
}

void StoreWindows::Keep(const std::string& id, Profile&& window) {
  Profile dropped;
  std::lock_guard lock(kept_mutex_);
  dropped = std::move(kept_);  // freed on the caller's thread, after the lock
  kept_ = std::move(window);
  kept_id_ = id;
}

Result<void> StoreWindows::MarkSent(const WindowInfo& window, const std::string& destination) {
  return store_.MarkSent(window.stable_id, destination);
}

}  // namespace arcprof::push
