#include "symbolize/jit_resolver.h"

namespace arcprof {

void JitResolver::SetFactory(JitSymbolSourceFactory factory) {
  factory_ = std::move(factory);
  sources_.clear();
}

SymbolizedFrame JitResolver::Resolve(const ProcessInfo& process, uint64_t addr, uint64_t t_ns,
                                     bool* cacheable) {
  SymbolizedFrame frame;
  frame.offset = addr;
  frame.module = kJitModule;
  frame.kind = FrameKind::kJit;
  frame.reason = UnknownReason::kJitNoMap;
  if (!factory_) return frame;
  Entry& entry = sources_[process.pid];
  if (!entry.tried) {
    entry.tried = true;
    entry.source = factory_(process);
  }
  if (!entry.source) return frame;
  *cacheable = false;
  if (std::optional<JitSymbol> symbol = entry.source->Find(addr, t_ns)) {
    frame.symbol = names_.Intern(symbol->name);
    frame.address = symbol->start;
    frame.reason = UnknownReason::kNone;
    frame.kind = symbol->kind;
    frame.inlined = symbol->inlined ? names_.InternList(*symbol->inlined) : nullptr;
  }
  return frame;
}

JitSymbolSource* JitResolver::Source(const ProcessInfo& process) {
  if (!factory_) return nullptr;
  Entry& entry = sources_[process.pid];
  if (!entry.tried) {
    entry.tried = true;
    entry.source = factory_(process);
  }
  return entry.source.get();
}

std::optional<JitSymbol> JitResolver::Find(const ProcessInfo& process, uint64_t addr, uint64_t t_ns) {
  JitSymbolSource* source = Source(process);
  return source ? source->Find(addr, t_ns) : std::nullopt;
}

std::optional<std::string_view> JitResolver::MethodName(const ProcessInfo& process, uint64_t method, uint64_t t_ns) {
  JitSymbolSource* source = Source(process);
  if (!source) return std::nullopt;
  std::optional<std::string_view> name = source->MethodName(method, t_ns);
  if (!name) return name;
  // Interned: outlives the source, like every frame name.
  Entry& entry = sources_[process.pid];
  auto [it, added] = entry.interned.try_emplace(name->data());
  if (added || it->second.size() != name->size()) it->second = names_.Intern(*name);
  return it->second;
}

size_t JitResolver::live_sources() const {
  size_t n = 0;
  for (const auto& [pid, entry] : sources_) n += entry.source != nullptr;
  return n;
}

size_t JitResolver::bytes() const {
  size_t n = sources_.size() * (2 * sizeof(void*) + sizeof(uint32_t) + sizeof(Entry));
  for (const auto& [pid, entry] : sources_) {
    n += entry.source ? entry.source->bytes() : 0;
    n += entry.interned.size() * (sizeof(const char*) + sizeof(std::string_view) + 2 * sizeof(void*));
  }
  return n;
}

}  // namespace arcprof
