#include "tests/model/test_profiles.h"

#include <stdlib.h>

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

uint32_t Frame(Profile& p, std::string module, std::string symbol, FrameKind kind,
               UnknownReason reason = UnknownReason::kNone, bool inlined = false,
               uint64_t address = 0) {
  FrameRecord f;
  f.module = p.frames.InternModule(module);
  f.symbol = std::move(symbol);
  f.kind = kind;
  f.reason = reason;
  f.inlined = inlined;
  f.address = address;
  return p.frames.Intern(f);
}

uint32_t Thread(Profile& p, uint32_t pid, uint32_t tid, std::string comm, std::string process_comm,
                std::string cmdline) {
  const uint32_t index = p.ThreadIndex(pid, tid);
  ThreadRecord& t = p.threads[index];
  t.comm = std::move(comm);
  t.process_comm = std::move(process_comm);
  t.cmdline = std::move(cmdline);
  return index;
}

}  // namespace

uint32_t SourceFrame(Profile& p, const std::string& file, const std::string& symbol, FrameKind kind, uint32_t line) {
  FrameRecord f;
  f.symbol = symbol;
  f.kind = kind;
  f.address = SourceAddress(line);
  return p.frames.Intern(file, f);
}

Profile SampleProfile() {
  Profile p;
  p.meta.host = "testhost";
  p.meta.kernel = "6.18.0-test";
  p.meta.start_monotonic_ns = 1'000'000'000;
  p.meta.end_monotonic_ns = 11'000'000'000;
  p.meta.start_unix_ns = 1'700'000'000'000'000'000;
  p.meta.event = "cpu-clock";
  p.meta.frequency_hz = 999;
  p.meta.command_line = "arcprof record -a -d 10";
  p.meta.target = "system";
  p.meta.call_graph = "fp";
  p.meta.arcprof_version = "0.1.0";

  const uint32_t k_entry = Frame(p, "vmlinux", "entry_SYSCALL_64", FrameKind::kKernel,
                                 UnknownReason::kNone, false, 0xffffffff81a00000ull);
  const uint32_t k_spin = Frame(p, "vmlinux", "_raw_spin_unlock_irqrestore", FrameKind::kKernel,
                                UnknownReason::kNone, false, 0xffffffff81b12340ull);
  const uint32_t libc_start =
      Frame(p, "/usr/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main", FrameKind::kNative,
            UnknownReason::kNone, false, 0x27200);
  const uint32_t jvm_run = Frame(p, "/usr/lib/jvm/lib/server/libjvm.so", "JavaThread::run()",
                                 FrameKind::kNative, UnknownReason::kNone, false, 0x8a1000);
  const uint32_t jvm_compile =
      Frame(p, "/usr/lib/jvm/lib/server/libjvm.so", "C2Compiler::compile_method(ciEnv*)",
            FrameKind::kNative, UnknownReason::kNone, false, 0x5b2000);
  const uint32_t jit_run = Frame(p, "JITCODE", "Lcom/acme/App;.run()V", FrameKind::kJit,
                                 UnknownReason::kNone, false, 0x7f3a10004000ull);
  const uint32_t anon = Frame(p, "//anon", "", FrameKind::kUnknown, UnknownReason::kJitNoMap, false,
                              0x7f3a20000000ull);
  const uint32_t main_fn =
      Frame(p, "/usr/bin/busy", "main", FrameKind::kNative, UnknownReason::kNone, false, 0x1130);
  const uint32_t f_heavy =
      Frame(p, "/usr/bin/busy", "f_heavy", FrameKind::kNative, UnknownReason::kNone, false, 0x1180);
  const uint32_t f_light =
      Frame(p, "/usr/bin/busy", "f_light", FrameKind::kNative, UnknownReason::kNone, false, 0x11c0);
  const uint32_t inline_helper = Frame(p, "/usr/bin/busy", "inline_helper", FrameKind::kNative,
                                       UnknownReason::kNone, true, 0x1190);
  const uint32_t stripped = Frame(p, "/opt/app/libstripped.so", "", FrameKind::kNative,
                                  UnknownReason::kStripped, false, 0x4000);
  const uint32_t truncated =
      Frame(p, "", "", FrameKind::kUnknown, UnknownReason::kTruncated, false, 0);

  const uint32_t java_main = Thread(p, 4156, 4156, "java", "java", "java -jar app.jar");
  const uint32_t java_c2 = Thread(p, 4156, 4170, "C2 CompilerThre", "java", "java -jar app.jar");
  const uint32_t busy = Thread(p, 900, 900, "busy loop", "busy loop", "./busy loop 10");
  const uint32_t systemd = Thread(p, 1, 1, "systemd", "systemd", "/sbin/init");

  auto add = [&](uint32_t thread, std::vector<uint32_t> stack, uint64_t count) {
    p.threads[thread].tree.AddStack(stack, count);
  };
  add(java_main, {libc_start, jvm_run, jit_run}, 500);
  add(java_main, {libc_start, jvm_run, jit_run, k_entry, k_spin}, 120);
  add(java_main, {libc_start, jvm_run, anon}, 30);
  add(java_c2, {libc_start, jvm_run, jvm_compile}, 200);
  add(java_c2, {libc_start, jvm_run, jvm_compile, k_entry, k_spin}, 40);
  add(busy, {libc_start, main_fn, f_heavy}, 750);
  add(busy, {libc_start, main_fn, f_heavy, inline_helper}, 60);
  add(busy, {libc_start, main_fn, f_light}, 250);
  add(busy, {libc_start, main_fn, stripped}, 25);
  add(busy, {truncated, f_heavy}, 5);
  add(systemd, {k_entry, k_spin}, 15);

  p.counters["lost_samples"] = 7;
  p.counters["samples_total"] = 2002;
  p.counters["unknown_frames.stripped"] = 25;
  p.counters["unknown_frames.anonymous/JIT without a map"] = 30;
  return p;
}

Profile LargeProfile(uint64_t samples, int distinct_stacks, int depth) {
  Profile p;
  p.meta.host = "bighost";
  p.meta.start_monotonic_ns = 5;
  p.meta.end_monotonic_ns = 3600'000'000'000;
  std::vector<uint32_t> frames;
  for (int i = 0; i < distinct_stacks + depth; ++i) {
    frames.push_back(Frame(p, "/usr/lib/libbig" + std::to_string(i % 7) + ".so",
                           "function_number_" + std::to_string(i), FrameKind::kNative,
                           UnknownReason::kNone, false, 0x1000 + 0x40 * static_cast<uint64_t>(i)));
  }
  for (uint32_t t = 0; t < 4; ++t) Thread(p, 100 + t, 100 + t, "worker", "big", "big --run");
  const uint64_t per_stack = samples / static_cast<uint64_t>(distinct_stacks);
  for (int s = 0; s < distinct_stacks; ++s) {
    std::vector<uint32_t> stack;
    // Stacks share prefixes as real ones do: the first frames depend on s / 16.
    for (int d = 0; d < depth; ++d) {
      stack.push_back(frames[static_cast<size_t>(d < depth / 2 ? (s / 16 + d) : (s + d))]);
    }
    const uint64_t count = s == 0 ? samples - per_stack * static_cast<uint64_t>(distinct_stacks - 1) : per_stack;
    p.threads[static_cast<size_t>(s % 4)].tree.AddStack(stack, count);
  }
  p.counters["lost_samples"] = 0;
  return p;
}

TempDir::TempDir() {
  char name[] = "/tmp/arcprof-reports-test-XXXXXX";
  if (::mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = name;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> TempDir::Entries() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string Gunzip(const std::string& bytes) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return {};
  std::string out;
  char buf[65536];
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  s.avail_in = static_cast<uInt>(bytes.size());
  int rc;
  do {
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof(buf);
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - s.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&s);
  return rc == Z_STREAM_END ? out : std::string();
}

}  // namespace arcprof::testing
