// Builders of jitdump and side-file bytes for tests and fuzzer seeds, written
// independently of the agent so that the parser is checked against the format
// (docs/formats.md §1), not against itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "symbolize/jitdump_format.h"
#include "tests/layer_names.h"

namespace arcprof::testing {

inline void Put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
inline void Put64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

inline std::string JitdumpHeader(uint32_t pid, uint64_t flags = 0) {
  std::string s;
  Put32(s, jitdump::kMagic);
  Put32(s, 1);
  Put32(s, 40);
  Put32(s, 62);
  Put32(s, 0);
  Put32(s, pid);
  Put64(s, 1);
  Put64(s, flags);
  return s;
}

inline std::string CodeLoad(uint64_t t_ns, uint64_t addr, uint64_t size, uint64_t index, const std::string& name,
                            bool with_code = true) {
  std::string s;
  const uint64_t total = 56 + name.size() + 1 + (with_code ? size : 0);
  Put32(s, jitdump::kCodeLoad);
  Put32(s, static_cast<uint32_t>(total));
  Put64(s, t_ns);
  Put32(s, 1);
  Put32(s, 2);
  Put64(s, addr);
  Put64(s, addr);
  Put64(s, size);
  Put64(s, index);
  s += name;
  s.push_back('\0');
  if (with_code) s.append(size, '\x90');
  return s;
}

inline std::string CodeMove(uint64_t t_ns, uint64_t old_addr, uint64_t new_addr, uint64_t size, uint64_t index) {
  std::string s;
  Put32(s, jitdump::kCodeMove);
  Put32(s, 64);
  Put64(s, t_ns);
  Put32(s, 1);
  Put32(s, 2);
  Put64(s, new_addr);
  Put64(s, old_addr);
  Put64(s, new_addr);
  Put64(s, size);
  Put64(s, index);
  return s;
}

inline std::string SideHeader() {
  std::string s(jitdump::kSideMagic, 8);
  Put32(s, 1);
  Put32(s, 16);
  return s;
}

inline std::string SideVmInfo(uint64_t t_ns, uint32_t pid, uint32_t flags, const std::string& vm) {
  std::string s;
  Put32(s, jitdump::kSideVmInfo);
  Put32(s, static_cast<uint32_t>(24 + vm.size() + 1));
  Put64(s, t_ns);
  Put32(s, pid);
  Put32(s, flags);
  s += vm;
  s.push_back('\0');
  return s;
}

inline std::string SideThreadName(uint64_t t_ns, uint32_t tid, const std::string& name) {
  std::string s;
  Put32(s, jitdump::kSideThreadName);
  Put32(s, static_cast<uint32_t>(24 + name.size() + 1));
  Put64(s, t_ns);
  Put32(s, tid);
  Put32(s, 0);
  s += name;
  s.push_back('\0');
  return s;
}

inline std::string SideUnload(uint64_t t_ns, uint64_t addr, uint64_t index) {
  std::string s;
  Put32(s, jitdump::kSideUnload);
  Put32(s, 32);
  Put64(s, t_ns);
  Put64(s, addr);
  Put64(s, index);
  return s;
}

struct InlinePc {
  uint32_t pc_offset;
  std::vector<uint32_t> chain;  // innermost first, last = the compiled method
};

inline std::string SideMethods(uint64_t t_ns, const std::vector<std::pair<uint64_t, std::string>>& methods) {
  std::string addrs, names;
  for (const auto& [method, name] : methods) {
    Put64(addrs, method);
    names += name;
    names.push_back('\0');
  }
  std::string r;
  Put32(r, jitdump::kSideMethods);
  Put32(r, static_cast<uint32_t>(jitdump::kSideMethodsFixedSize + addrs.size() + names.size()));
  Put64(r, t_ns);
  Put32(r, static_cast<uint32_t>(methods.size()));
  Put32(r, 0);
  return r + addrs + names;
}

inline std::string SideFrame(uint64_t t_ns, uint64_t addr, uint64_t index, int32_t frame_size, int32_t complete) {
  std::string r;
  Put32(r, jitdump::kSideFrame);
  Put32(r, jitdump::kSideFrameSize);
  Put64(r, t_ns);
  Put64(r, addr);
  Put64(r, index);
  Put32(r, static_cast<uint32_t>(frame_size));
  Put32(r, static_cast<uint32_t>(complete));
  return r;
}

inline std::string SideInline(uint64_t t_ns, uint64_t addr, uint64_t index, const std::vector<std::string>& names,
                              const std::vector<InlinePc>& pcs) {
  std::string body;
  for (const std::string& n : names) {
    body += n;
    body.push_back('\0');
  }
  for (const InlinePc& pc : pcs) {
    Put32(body, pc.pc_offset);
    Put32(body, static_cast<uint32_t>(pc.chain.size()));
    for (uint32_t c : pc.chain) Put32(body, c);
  }
  std::string s;
  Put32(s, jitdump::kSideInline);
  Put32(s, static_cast<uint32_t>(40 + body.size()));
  Put64(s, t_ns);
  Put64(s, addr);
  Put64(s, index);
  Put32(s, static_cast<uint32_t>(names.size()));
  Put32(s, static_cast<uint32_t>(pcs.size()));
  return s + body;
}

}  // namespace arcprof::testing
