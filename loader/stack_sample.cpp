#include "loader/stack_sample.h"

#include <cstring>

#include "events.h"
#include "runtimes.h"

namespace arcprof {

std::optional<StackSample> DecodeStackSample(const void* data, size_t size) {
  sample_event e;
  if (data == nullptr || size < sizeof(e)) return std::nullopt;
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) return std::nullopt;
  memcpy(&e, data, sizeof(e));
  if (e.kstack_len > ARCPROF_MAX_STACK || e.ustack_len > ARCPROF_MAX_STACK) return std::nullopt;
  // A value source's record carries its words between the header and the frames.
  const bool from_source = (e.flags & ARCPROF_SAMPLE_SOURCE) != 0;
  const size_t frames_at = sizeof(e) + (from_source ? sizeof(source_info) : 0);
  const size_t nframes = static_cast<size_t>(e.kstack_len) + e.ustack_len;
  const size_t frames_end = frames_at + nframes * sizeof(uint64_t);
  if (frames_end > size) return std::nullopt;

  const auto* bytes = static_cast<const uint8_t*>(data);
  const auto* pcs = reinterpret_cast<const uint64_t*>(bytes + frames_at);
  StackSample s;
  if (from_source) {
    source_info info;
    memcpy(&info, bytes + sizeof(e), sizeof(info));
    if (info.source == 0) return std::nullopt;  // 0 is a sample
    s.source = info.source;
    s.source_key = info.key;
    s.source_arg = info.arg;
    s.source_values[0] = info.values[0];
    s.source_values[1] = info.values[1];
  }
  s.timestamp_ns = e.timestamp_ns;
  s.pid = e.pid;
  s.tid = e.tid;
  s.cpu = e.cpu;
  s.flags = e.flags;
  s.comm = std::string_view(reinterpret_cast<const char*>(bytes) + offsetof(sample_event, comm),
                            strnlen(e.comm, ARCPROF_COMM_LEN));
  s.kernel_pcs = {pcs, e.kstack_len};
  s.user_pcs = {pcs + e.kstack_len, e.ustack_len};
  // Interpreter frames (bpf/runtimes.h) sit between the frames and the registers.
  size_t regs_at = frames_end;
  if ((e.flags & ARCPROF_SAMPLE_HAS_RUNTIME) && e.pid != 0) {
    runtime_frames_header h;
    if (size - frames_end < sizeof(h)) return std::nullopt;
    memcpy(&h, bytes + frames_end, sizeof(h));
    if (h.count > ARCPROF_RUNTIME_MAX_FRAMES) return std::nullopt;
    const size_t block = sizeof(h) + size_t{h.count} * sizeof(runtime_frame);
    if (size - frames_end < block) return std::nullopt;
    s.runtime = h.runtime;
    s.runtime_status = h.status;
    s.runtime_frames = {reinterpret_cast<const runtime_frame*>(bytes + frames_end + sizeof(h)), h.count};
    regs_at = frames_end + block;
  }
  // The idle task has no user stack; a register block there is ignored.
  if ((e.flags & ARCPROF_SAMPLE_HAS_REGS) && e.pid != 0) {
    if (size - regs_at < sizeof(user_regs_block)) return std::nullopt;
    user_regs_block regs;
    memcpy(&regs, bytes + regs_at, sizeof(regs));
    if (regs.stack_len > size - regs_at - sizeof(regs)) return std::nullopt;
    s.user_regs = {reinterpret_cast<const uint64_t*>(bytes + regs_at), ARCPROF_USER_REGS};
    s.user_stack = {bytes + regs_at + sizeof(regs), regs.stack_len};
  }
  return s;
}

}  // namespace arcprof
