#include "symbolize/kernel_resolver.h"

#include <spdlog/spdlog.h>

#include "spaces/process_registry.h"

namespace arcprof {
namespace {

constexpr std::string_view kUnknownKernelModule = "[kernel]";
constexpr size_t kCacheBits = 14;

}  // namespace

KernelResolver::KernelResolver(std::string kallsyms_path)
    : kallsyms_path_(std::move(kallsyms_path)), cache_(size_t{1} << kCacheBits) {}

const KernelSymbols* KernelResolver::Symbols() {
  if (tried_) return symbols_ ? &*symbols_ : nullptr;
  tried_ = true;
  auto text = ReadWholeFile(kallsyms_path_);
  if (!text.ok()) {
    spdlog::warn("kernel frames will be unknown: cannot read {}", text.error().message);
    return nullptr;
  }
  auto parsed = KernelSymbols::Parse(*text);
  if (!parsed.ok()) {
    spdlog::warn("kernel frames will be unknown: {}: {}", kallsyms_path_, parsed.error().message);
    return nullptr;
  }
  if (parsed->addresses_hidden()) {
    spdlog::warn(
        "kernel frames will be unknown: {} shows only zero addresses (kernel.kptr_restrict); "
        "run as root or set sysctl kernel.kptr_restrict=0",
        kallsyms_path_);
  }
  symbols_.emplace(std::move(parsed).value());
  return &*symbols_;
}

SymbolizedFrame KernelResolver::Resolve(uint64_t addr, bool* cache_hit) {
  const uint64_t h = addr * 0xff51afd7ed558ccdULL;
  CacheEntry& slot = cache_[h >> (64 - kCacheBits)];
  if (slot.used && slot.addr == addr) {
    *cache_hit = true;
    return slot.frame;
  }
  SymbolizedFrame frame;
  frame.kind = FrameKind::kKernel;
  frame.offset = addr;
  frame.module = kUnknownKernelModule;
  frame.reason = UnknownReason::kKernelUnknown;
  if (const KernelSymbols* kernel = Symbols()) {
    if (const std::optional<KernelSymbol> symbol = kernel->Find(addr)) {
      frame.module = symbol->module;
      frame.symbol = symbol->name;
      frame.address = symbol->start;
      frame.reason = UnknownReason::kNone;
    }
  }
  slot.used = true;
  slot.addr = addr;
  slot.frame = frame;
  return frame;
}

size_t KernelResolver::bytes() const {
  return cache_.capacity() * sizeof(CacheEntry) + (symbols_ ? symbols_->bytes() : 0);
}

}  // namespace arcprof
