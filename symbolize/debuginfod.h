// Debug files by build-id from debuginfod servers (elfutils' libdebuginfod),
// for modules whose own file is stripped. Lookups run on a thread of their
// own: whoever asks never waits on the network. Each build-id is looked up
// once; files land in the client's cache ($DEBUGINFOD_CACHE_PATH, else
// ~/.cache/debuginfod_client), so a later run finds them without a request.
// A time budget bounds the whole: requests not answered by the deadline are
// cancelled (libdebuginfod's progress callback) and count as not found.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "symbolize/elf_symbols.h"

namespace arcprof {

class DebuginfodFetcher {
 public:
  // A fetcher when DEBUGINFOD_URLS names at least one server, else nullptr.
  // The budget starts now.
  static std::unique_ptr<DebuginfodFetcher> FromEnvironment(std::chrono::milliseconds budget);
  // Cancels what is in flight and joins the thread.
  ~DebuginfodFetcher();
  DebuginfodFetcher(const DebuginfodFetcher&) = delete;
  DebuginfodFetcher& operator=(const DebuginfodFetcher&) = delete;

  // Queues a lookup of a build-id (lowercase hex); once per id, never blocks.
  void Request(const std::string& build_id);

  enum class State { kUnknown, kPending, kFound, kNotFound };
  State state(const std::string& build_id) const;

  // Waits until every queued lookup has an answer or the budget is spent.
  void WaitForAll();

  // The function covering vaddr (ELF vaddr of the module with this build-id)
  // in the fetched debug file; nullopt when not fetched or not covered.
  // Not thread-safe with itself: one caller at a time.
  struct Named {
    std::string name;
    uint64_t start = 0;
  };
  std::optional<Named> Find(const std::string& build_id, uint64_t vaddr);

  struct Summary {
    uint64_t found = 0;
    uint64_t not_found = 0;  // including lookups cut by the budget
    uint64_t pending = 0;
  };
  Summary summary() const;

 private:
  explicit DebuginfodFetcher(std::chrono::steady_clock::time_point deadline);
  void Run();

  const std::chrono::steady_clock::time_point deadline_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::map<std::string, State> states_;
  std::map<std::string, std::string> paths_;  // build-id -> debug file in the cache
  uint64_t in_flight_ = 0;
  bool stop_ = false;
  std::thread worker_;

  // Symbol tables of fetched files, loaded on the first Find.
  struct Table {
    SymbolTable symbols;
  };
  std::map<std::string, std::unique_ptr<Table>> tables_;
};

}  // namespace arcprof
