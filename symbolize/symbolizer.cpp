#include "symbolize/symbolizer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <spdlog/spdlog.h>

#include "spaces/mapped_elf.h"
#include "spaces/timeline.h"
#include "spaces/vdso_image.h"
#include "symbolize/elf_resolver.h"
#include "symbolize/jit_resolver.h"
#include "symbolize/kernel_resolver.h"
#include "symbolize/module_cache.h"
#include "symbolize/name_pool.h"
#include "symbolize/vdso_resolver.h"

namespace arcprof {
namespace {

constexpr std::string_view kUnknownModule = "[unknown]";

uint64_t FileCacheSlot(uint32_t file_id, uint64_t offset, uint32_t bits) {
  uint64_t h = (offset ^ (uint64_t{file_id} * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return h >> (64 - bits);
}

uint64_t CacheSlot(uint32_t pid, uint64_t addr, size_t bits) {
  uint64_t h = (addr ^ (uint64_t{pid} * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return h >> (64 - bits);
}

DebugSearchOptions DebugOptions(const SymbolizerOptions& options) {
  DebugSearchOptions debug;
  debug.debug_dirs = options.debug_dirs;
  debug.verify_debuglink_crc = options.verify_debuglink_crc;
  debug.debuginfod = options.debuginfod;
  return debug;
}

}  // namespace

// The symbolizer composes the symbol tables of the address spaces' files
// (module cache) and one resolver per source of names; it routes each address
// to the resolver of the mapping's kind and caches user answers. It follows
// the address spaces as their listener: a forgotten process's answers and
// JIT source go, and the tables of closed files.
struct Symbolizer::Impl : AddressSpaces::Listener {
  struct UserCacheEntry {
    uint64_t addr = 0;
    uint64_t valid_from = 0;
    uint64_t valid_until = 0;  // 0: empty slot
    const TimelineProcess* process = nullptr;  // nullptr: cached "no process"
    uint64_t version = 0;
    uint32_t pid = 0;
    uint32_t epoch = 0;  // Impl::cache_epoch when filled (in pid's padding)
    SymbolizedFrame frame;
  };

  Impl(AddressSpaces& spaces, SymbolizerOptions opts)
      : spaces(spaces),
        options(std::move(opts)),
        modules(options.symbol_budget_bytes),
        elf(DebugOptions(options), names),
        kernel(options.kallsyms_path),
        jit(names),
        user_cache_bits(std::clamp<uint32_t>(options.answer_cache_bits, 8, 20)),
        user_cache(size_t{1} << user_cache_bits),
        file_cache_bits(std::max<uint32_t>(8, user_cache_bits - 3)),
        file_cache(size_t{1} << file_cache_bits) {}

  AddressSpaces& spaces;
  SymbolizerOptions options;
  SymbolizerStats stats;
  NamePool names;  // before the resolvers that hand them out
  ModuleCache modules;
  ElfResolver elf;
  VdsoResolver vdso;
  KernelResolver kernel;
  JitResolver jit;
  uint32_t user_cache_bits;
  std::vector<UserCacheEntry> user_cache;
  // Named native answers by (file id, file offset). File ids are never
  // reused, so only a release of the name pool (names_epoch) drops them.
  struct FileCacheEntry {
    uint64_t offset = 0;
    uint64_t vaddr = 0;
    uint64_t address = 0;
    std::string_view symbol;
    uint32_t file_id = 0;
    uint32_t epoch = 0;  // names_epoch when filled; 0: empty
  };
  uint32_t file_cache_bits;  // an eighth of the answer cache's slots
  std::vector<FileCacheEntry> file_cache;
  std::vector<std::pair<const void*, Symbolizer::JitFrameRefiner>> jit_refiners;  // by owner
  // Bumped to drop every cached user answer at once (cheaper than touching
  // the 64 Ki slots: a forget pass runs every 5 s under churn).
  uint32_t cache_epoch = 1;
  uint32_t names_epoch = 1;

  void ImageReplaced(uint32_t pid) override { jit.Forget(pid); }

  void Exited(const std::vector<std::pair<uint32_t, uint64_t>>& exited, uint64_t t_ns) override {
    size_t jit_released = 0;
    for (const auto& [pid, exit_ns] : exited)
      if (exit_ns + options.exited_jit_retention_ns <= t_ns) jit_released += jit.Release(pid);
    if (jit_released > 0) spdlog::debug("symbolizer: let go of {} JIT sources of exited processes", jit_released);
  }

  void Forgot(const std::vector<uint32_t>& pids) override {
    for (uint32_t pid : pids) jit.Forget(pid);
    // Symbol tables of the files the address spaces closed.
    modules.DropClosed([this](uint32_t id) { return spaces.FileOpen(id); });
    spdlog::debug("symbolizer: {} names, {} jit sources after the forget pass", names.size(), jit.size());
    // Cached answers point at removed processes.
    ++cache_epoch;
  }

  SymbolizedFrame ResolveMapping(uint32_t pid, const TimelineMapping* m, uint64_t addr,
                                 uint64_t t_ns, bool* cacheable) {
    if (!m) {
      SymbolizedFrame frame;
      frame.offset = addr;
      frame.module = kUnknownModule;
      frame.reason = UnknownReason::kUnmapped;
      return frame;
    }
    switch (m->kind) {
      case MappingKind::kFile: {
        ElfFile* file = modules.Get(m->file_id, spaces.File(m->file_id));
        const bool was_loaded = file && file->symbols_loaded();
        // Named answers by (file, offset), shared by every process mapping
        // the file: a new process (hundreds a second under churn) misses
        // the per-process cache on every frame of its first samples.
        const uint64_t file_offset = addr - m->start + m->pgoff;
        FileCacheEntry& cached = file_cache[FileCacheSlot(m->file_id, file_offset, file_cache_bits)];
        if (cached.epoch == names_epoch && cached.file_id == m->file_id && cached.offset == file_offset) {
          ++stats.file_cache_hits;
          if (file) modules.NoteSymbolsUsed(m->file_id, was_loaded);
          SymbolizedFrame frame;
          frame.module = m->module;
          frame.kind = FrameKind::kNative;
          frame.symbol = cached.symbol;
          frame.address = cached.address;
          frame.offset = cached.vaddr;
          return frame;
        }
        SymbolizedFrame frame = elf.Resolve(file, *m, addr);
        if (file) modules.NoteSymbolsUsed(m->file_id, was_loaded);
        if (!frame.symbol.empty() && frame.reason == UnknownReason::kNone && frame.inlined == nullptr &&
            frame.kind == FrameKind::kNative) {
          cached = FileCacheEntry{file_offset, frame.offset, frame.address, frame.symbol, m->file_id, names_epoch};
        }
        return frame;
      }
      case MappingKind::kVdso:
        return vdso.Resolve(elf, spaces.File(VdsoImage::kFileId), *m, addr);
      case MappingKind::kAnonExec:
        break;
    }
    return jit.Resolve(spaces.Info(pid), addr, t_ns, cacheable);
  }
};

Symbolizer::Symbolizer(AddressSpaces& spaces, SymbolizerOptions options)
    : spaces_(spaces), impl_(std::make_unique<Impl>(spaces, std::move(options))) {
  spaces_.SetListener(impl_.get());
}

Symbolizer::~Symbolizer() { spaces_.SetListener(nullptr); }

SymbolizedFrame Symbolizer::ResolveUser(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  Impl& impl = *impl_;
  ++impl.stats.lookups;
  Impl::UserCacheEntry& slot = impl.user_cache[CacheSlot(pid, addr, impl.user_cache_bits)];
  if (slot.valid_until != 0 && slot.epoch == impl.cache_epoch && slot.addr == addr && slot.pid == pid &&
      t_ns >= slot.valid_from &&
      t_ns < slot.valid_until &&
      (slot.process ? slot.process->version == slot.version
                    : impl.spaces.creations() == slot.version)) {
    ++impl.stats.cache_hits;
    return slot.frame;
  }

  impl.spaces.EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl.spaces.TimelineOf(pid);
  SymbolizedFrame frame;
  Timeline::Hit hit;
  bool cacheable = true;
  if (!process) {
    frame.module = kUnknownModule;
    frame.reason = UnknownReason::kNoProcess;
    frame.offset = addr;
  } else {
    hit = Timeline::Lookup(*process, addr, t_ns);
    frame = impl.ResolveMapping(pid, hit.mapping, addr, t_ns, &cacheable);
  }
  if (cacheable && hit.valid_until > hit.valid_from) {
    slot.addr = addr;
    slot.pid = pid;
    slot.valid_from = hit.valid_from;
    slot.valid_until = hit.valid_until;
    slot.epoch = impl.cache_epoch;
    slot.process = process;
    slot.version = process ? process->version : impl.spaces.creations();
    slot.frame = frame;
  }
  return frame;
}

SymbolizedFrame Symbolizer::ResolveKernel(uint64_t addr) {
  ++impl_->stats.lookups;
  bool cache_hit = false;
  SymbolizedFrame frame = impl_->kernel.Resolve(addr, &cache_hit);
  if (cache_hit) ++impl_->stats.cache_hits;
  return frame;
}

std::optional<JitSymbol> Symbolizer::FindJitCode(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  Impl& impl = *impl_;
  impl.spaces.EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl.spaces.TimelineOf(pid);
  if (!process) return std::nullopt;
  const Timeline::Hit hit = Timeline::Lookup(*process, addr, t_ns);
  if (!hit.mapping || hit.mapping->kind != MappingKind::kAnonExec) return std::nullopt;
  auto code = impl.jit.Find(impl.spaces.Info(pid), addr, t_ns);
  if (code) {
    for (auto& [owner, refine] : impl.jit_refiners) refine(pid, *code);
  }
  return code;
}

std::optional<std::string_view> Symbolizer::InterpretedMethodName(uint32_t pid, uint64_t method, uint64_t t_ns) {
  Impl& impl = *impl_;
  if (!impl.spaces.KnowsProcess(pid)) return std::nullopt;
  return impl.jit.MethodName(impl.spaces.Info(pid), method, t_ns);
}

void Symbolizer::SetJitSymbolSourceFactory(JitSymbolSourceFactory factory) {
  impl_->jit.SetFactory(std::move(factory));
  // Cached kJitNoMap answers predate the source.
  ++impl_->cache_epoch;
}

void Symbolizer::SetJitFrameRefiner(const void* owner, JitFrameRefiner refiner) {
  auto& all = impl_->jit_refiners;
  std::erase_if(all, [owner](const auto& o) { return o.first == owner; });
  if (refiner) all.emplace_back(owner, std::move(refiner));
}

size_t Symbolizer::ReleaseNames(size_t budget_bytes) {
  if (impl_->names.bytes() <= budget_bytes)
    return 0;
  const size_t n = impl_->names.size();
  ++impl_->cache_epoch; // cached answers hold views into the pool
  ++impl_->names_epoch;
  impl_->jit.NamesReleased();
  impl_->names.Clear();
  impl_->stats.names_released += n;
  return n;
}

SymbolizerHeld Symbolizer::Held() const {
  const Impl& impl = *impl_;
  SymbolizerHeld h;
  h.symbol_bytes = impl.modules.symbol_bytes();
  h.kernel_bytes = impl.kernel.bytes();
  h.answer_cache_bytes = impl.user_cache.capacity() * sizeof(Impl::UserCacheEntry) +
                         impl.file_cache.capacity() * sizeof(Impl::FileCacheEntry);
  h.name_bytes = impl.names.bytes();
  h.process_bytes = impl.spaces.bytes();
  h.jit_bytes = impl.jit.bytes();
  h.processes = impl.spaces.processes();
  h.exited_processes = impl.spaces.exited_processes();
  h.jit_sources = impl.jit.live_sources();
  return h;
}

const SymbolizerStats& Symbolizer::stats() const {
  impl_->stats.name_bytes = impl_->names.bytes();
  impl_->stats.elf_files_loaded = impl_->elf.files_loaded();
  impl_->stats.processes_forgotten = spaces_.stats().processes_forgotten;
  impl_->stats.files_closed = spaces_.stats().files_closed;
  impl_->stats.open_files = spaces_.open_files();
  impl_->stats.processes = spaces_.processes();
  impl_->stats.symbol_bytes = impl_->modules.symbol_bytes();
  impl_->stats.symbol_tables_released = impl_->modules.symbol_tables_released();
  return impl_->stats;
}

}  // namespace arcprof
