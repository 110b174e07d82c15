#include "symbolize/debuginfod.h"

#include <elfutils/debuginfod.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/scoped_fd.h"

namespace arcprof {
namespace {

bool ValidBuildId(const std::string& id) {
  if (id.size() < 2 || id.size() > 128 || id.size() % 2 != 0) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<DebuginfodFetcher> DebuginfodFetcher::FromEnvironment(
    std::chrono::milliseconds budget) {
  const char* urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
  if (!urls || urls[0] == '\0' || strspn(urls, " \t") == strlen(urls)) return nullptr;
  return std::unique_ptr<DebuginfodFetcher>(
      new DebuginfodFetcher(std::chrono::steady_clock::now() + budget));
}

DebuginfodFetcher::DebuginfodFetcher(std::chrono::steady_clock::time_point deadline)
    : deadline_(deadline) {
  worker_ = std::thread([this] { Run(); });
}

DebuginfodFetcher::~DebuginfodFetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void DebuginfodFetcher::Request(const std::string& build_id) {
  if (!ValidBuildId(build_id)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!states_.emplace(build_id, State::kPending).second) return;
    queue_.push_back(build_id);
  }
  cv_.notify_all();
}

DebuginfodFetcher::State DebuginfodFetcher::state(const std::string& build_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(build_id);
  return it == states_.end() ? State::kUnknown : it->second;
}

void DebuginfodFetcher::WaitForAll() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline_, [&] { return stop_ || (queue_.empty() && in_flight_ == 0); });
}

DebuginfodFetcher::Summary DebuginfodFetcher::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  Summary s;
  for (const auto& [id, state] : states_) {
    if (state == State::kFound) ++s.found;
    else if (state == State::kNotFound) ++s.not_found;
    else ++s.pending;
  }
  return s;
}

void DebuginfodFetcher::Run() {
  debuginfod_client* client = debuginfod_begin();
  if (client) {
    debuginfod_set_user_data(client, this);
    // Called while a transfer runs: a non-zero answer cancels it.
    debuginfod_set_progressfn(client, [](debuginfod_client* c, long, long) -> int {
      auto* self = static_cast<DebuginfodFetcher*>(debuginfod_get_user_data(c));
      if (std::chrono::steady_clock::now() >= self->deadline_) return 1;
      std::lock_guard<std::mutex> lock(self->mu_);
      return self->stop_ ? 1 : 0;
    });
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait_until(lock, deadline_, [&] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    const bool over_budget = std::chrono::steady_clock::now() >= deadline_;
    if (queue_.empty()) {
      if (over_budget) break;
      continue;
    }
    const std::string id = queue_.front();
    queue_.pop_front();
    if (over_budget || !client) {
      states_[id] = State::kNotFound;
      cv_.notify_all();
      continue;
    }
    ++in_flight_;
    lock.unlock();
    char* path = nullptr;
    // A build-id length of 0 means: the id is given as a hex string.
    const int fd = debuginfod_find_debuginfo(
        client, reinterpret_cast<const unsigned char*>(id.c_str()), 0, &path);
    std::string found;
    if (fd >= 0) {
      struct stat st;
      if (path && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) found = path;
      close(fd);
    }
    free(path);
    lock.lock();
    --in_flight_;
    states_[id] = found.empty() ? State::kNotFound : State::kFound;
    if (!found.empty()) paths_[id] = found;
    cv_.notify_all();
  }
  // What is still queued will not be looked up any more.
  for (const std::string& id : queue_) states_[id] = State::kNotFound;
  queue_.clear();
  cv_.notify_all();
  lock.unlock();
  if (client) debuginfod_end(client);
}

std::optional<DebuginfodFetcher::Named> DebuginfodFetcher::Find(const std::string& build_id,
                                                               uint64_t vaddr) {
  auto& table = tables_[build_id];
  if (!table) {
    std::string path;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = paths_.find(build_id);
      if (it == paths_.end()) {
        tables_.erase(build_id);
        return std::nullopt;
      }
      path = it->second;
    }
    table = std::make_unique<Table>();
    ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.valid()) {
      if (auto elf = OpenElfFd(fd.get()); elf.ok()) {
        auto header = ReadElfHeaderInfo(elf->get());
        // The server answered for this build-id; check the file says so too.
        if (header.ok() && (header->build_id.empty() || header->build_id == build_id)) {
          table->symbols = SymbolTable::Load(elf->get(), SymbolTable::Section::kSymtab);
        }
      }
    }
  }
  const ElfSymbol* s = table->symbols.Find(vaddr);
  if (!s) return std::nullopt;
  return Named{std::string(s->name), s->start};
}

}  // namespace arcprof
