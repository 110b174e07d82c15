// arcprof's JVMTI agent: writes every piece of JIT code the JVM installs to a
// jitdump file (`jit-<pid>.dump`, perf's format, CLOCK_MONOTONIC) and what
// jitdump cannot carry (inlining chains, unloads, Java thread names, whether
// -XX:+PreserveFramePointer is on) to the side file `jit-<pid>.arcprof`.
// Optionally also the plain `perf-<pid>.map`.
//
// Rules this file keeps: it runs inside somebody else's JVM, so it never
// throws (built with -fno-exceptions), never calls exit, never waits for
// anything but its own short write lock, logs each failure once on stderr and
// turns it into a return value. Only the Agent_* entry points are exported.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jvmti.h>
#include <jvmticmlr.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "symbolize/jitdump_format.h"
#include "trace_agent.h"

namespace {

namespace jd = arcprof::jitdump;

struct Options {
  std::string dir = "/tmp";
  bool perfmap = false;   // also write perf-<pid>.map
  bool signatures = false;  // append the JVM signature to method names
  bool quiet = false;     // no notes on stderr (errors are still printed)
  // Remove the files at VM death (arcprof's runtime attach asks for it: a
  // reader that has them open still reads to the end, and a machine whose
  // daemon attaches every JVM would otherwise collect one pair per JVM in /tmp).
  bool unlink_at_exit = false;
  // CODE_LOAD records without the code bytes, and the header says so
  // (jitdump_format.h kFlagNoCode). Only perf inject reads the bytes, and
  // files removed at VM death never reach it; arcprof's attach asks for
  // both. A 4 s JVM compiling its source wrote 2 MB of code bytes a run,
  // which the daemon read and the kernel dropped again.
  bool no_code = false;
};

struct Agent {
  jvmtiEnv* jvmti = nullptr;
  Options options;
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  int dump_fd = -1;
  int side_fd = -1;
  int map_fd = -1;
  void* marker = nullptr;
  size_t marker_len = 0;
  bool active = false;      // files open and events enabled
  bool closed = false;      // VMDeath seen: no more writes
  uint64_t next_code_index = 1;
  std::unordered_map<uint64_t, uint64_t> index_by_addr;  // live code -> its CODE_LOAD index
  uint32_t pid = 0;
  std::string dir;  // where the files are (options.dir, or a private folder in it)
  uint64_t records = 0;
  uint64_t write_errors = 0;
  uint64_t frames_unknown = 0;  // compiled methods whose CodeBlob was not found
  uint64_t methods_named = 0;
  uint64_t methods_renamed = 0;  // Method*s replaced by class redefinition, named again
};

// Every method the agent has named, by its jmethodID and the Method* it
// pointed at then. Class redefinition and retransformation give a method a
// new Method* (the jmethodID follows it); the watcher thread notices and
// names the new one. Its own lock: class preparation appends from any thread.
struct Watch {
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  std::vector<jmethodID> ids;
  std::vector<uint64_t> methods;
  jrawMonitorID monitor = nullptr;  // the watcher sleeps on it; VMDeath and the hook wake it
  // Classes being redefined right now (ClassFileLoadHook): their methods'
  // jmethodIDs and Method*s before, watched closely until they change.
  struct Pending {
    uint64_t t_ns = 0;  // the hook's time: the new Method*s exist only after it
    std::string prefix;
    std::vector<jmethodID> ids;
    std::vector<uint64_t> before;
  };
  std::vector<Pending> pending;
};

Watch g_watch;

Agent g_agent;  // one per loaded copy of the library: JVMTI hands us no other place

void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Log(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = static_cast<size_t>(n) < sizeof(line) - 1 ? static_cast<size_t>(n) : sizeof(line) - 2;
  line[len++] = '\n';
  // Straight to fd 2: stdio locks could be held by the thread we interrupted.
  ssize_t ignored = write(2, "arcprof agent: ", 15);
  ignored = write(2, line, len);
  (void)ignored;
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

void Put32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void Put64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

// Writes all of iov to fd (append mode); false after logging on failure.
bool WriteAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    ssize_t n = writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    size_t left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

void NoteWriteError(const char* what) {
  if (g_agent.write_errors++ == 0) Log("cannot write %s: %s (further errors not shown)", what, strerror(errno));
}

// Creates a file of ours in the JVM's temp directory: never through a
// symlink, never into an existing file. A leftover of an earlier process with
// the same pid (containers reuse pid 1) is replaced when it is ours. *taken
// is set when the name is held by something that is not ours (another user
// can plant it in /tmp): the caller then writes somewhere private instead.
int CreateExclusive(const std::string& path, bool readable, bool* taken = nullptr) {
  const int flags = (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND;
  if (taken) *taken = false;
  int fd = open(path.c_str(), flags, 0600);
  if (fd >= 0 || errno != EEXIST) {
    if (fd < 0) Log("cannot create %s: %s", path.c_str(), strerror(errno));
    return fd;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      unlink(path.c_str()) == 0) {
    fd = open(path.c_str(), flags, 0600);
  }
  if (fd < 0 && errno == EEXIST && taken) {
    *taken = true;
    return -1;
  }
  if (fd < 0) Log("cannot create %s: %s (remove it if it is stale)", path.c_str(), strerror(errno));
  return fd;
}

// Whether another copy of this agent already writes our jitdump: an
// executable mapping named jit-<pid>.dump is in our address space (in /tmp
// or in a private folder).
bool DumpAlreadyMapped(uint32_t pid) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (!maps) return false;
  char name[64];
  snprintf(name, sizeof(name), "/jit-%u.dump", pid);
  const size_t name_len = strlen(name);
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof(line), maps)) {
    const char* perms = strchr(line, ' ');
    const char* p = strchr(line, '/');
    if (!p || !perms || perms[3] != 'x') continue;
    size_t len = strcspn(p, "\n");
    found = len >= name_len && memcmp(p + len - name_len, name, name_len) == 0;
  }
  fclose(maps);
  return found;
}

// -XX:[+-]PreserveFramePointer from where HotSpot reads flags, in its order:
// JAVA_TOOL_OPTIONS, then the command line (JDK_JAVA_OPTIONS is merged into
// it by the launcher but not into /proc/self/cmdline), then _JAVA_OPTIONS.
// The last one wins; the default is off.
bool PreserveFramePointerOn() {
  int state = 0;
  auto scan = [&](const char* text, size_t len) {
    static const char kOn[] = "-XX:+PreserveFramePointer";
    static const char kOff[] = "-XX:-PreserveFramePointer";
    for (size_t i = 0; i + sizeof(kOn) - 1 <= len; ++i) {
      if (memcmp(text + i, kOn, sizeof(kOn) - 1) == 0) state = 1;
      if (memcmp(text + i, kOff, sizeof(kOff) - 1) == 0) state = 0;
    }
  };
  auto scan_env = [&](const char* name) {
    if (const char* v = getenv(name)) scan(v, strlen(v));
  };
  scan_env("JAVA_TOOL_OPTIONS");
  scan_env("JDK_JAVA_OPTIONS");
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::string cmdline;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0 && cmdline.size() < (1u << 20)) cmdline.append(buf, static_cast<size_t>(n));
    close(fd);
    scan(cmdline.data(), cmdline.size());
  }
  scan_env("_JAVA_OPTIONS");
  return state == 1;
}

// ---- HotSpot's own description of its structures ----
//
// libjvm exports gHotSpotVMStructs, a table of (type, field, offset) entries
// for the serviceability agent; we read the few CodeBlob fields that give a
// compiled method's frame size. Reading HotSpot memory goes through
// process_vm_readv on ourselves, so a wrong guess returns an error instead
// of crashing the JVM.

struct VmLayout {
  bool ok = false;
  // CodeBlob fields (offsets from the blob's start).
  int size = -1;             // int
  int header_size = -1;      // int (17) or u2 (21+)
  bool header_size_u2 = false;
  int frame_size = -1;       // int, in words
  int frame_complete = -1;   // int (17) or int16_t (21+)
  bool frame_complete_i16 = false;
  int code_begin = -1;       // address (17): absolute
  int code_offset = -1;      // int (21+): from the blob's start
};

VmLayout g_layout;

bool SafeRead(uint64_t addr, void* out, size_t len) {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  static const pid_t self = getpid();
  return process_vm_readv(self, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

void ReadVmLayout() {
  void* jvm = dlopen("libjvm.so", RTLD_NOLOAD | RTLD_NOW);
  if (!jvm) return;
  auto sym = [jvm](const char* name) -> uint64_t {
    void* p = dlsym(jvm, name);
    uint64_t v = 0;
    if (p) memcpy(&v, p, sizeof(v));
    return v;
  };
  const uint64_t entries = sym("gHotSpotVMStructs");
  const uint64_t stride = sym("gHotSpotVMStructEntryArrayStride");
  const uint64_t type_off = sym("gHotSpotVMStructEntryTypeNameOffset");
  const uint64_t field_off = sym("gHotSpotVMStructEntryFieldNameOffset");
  const uint64_t tstr_off = sym("gHotSpotVMStructEntryTypeStringOffset");
  const uint64_t offset_off = sym("gHotSpotVMStructEntryOffsetOffset");
  dlclose(jvm);
  if (!entries || stride == 0 || stride > 256) return;
  // The table and its strings are libjvm's own static data: read directly,
  // but bounded (the table ends with a NULL type name).
  for (uint64_t e = entries, n = 0; n < 100000; e += stride, ++n) {
    const char* type = *reinterpret_cast<const char* const*>(e + type_off);
    if (!type) break;
    if (strcmp(type, "CodeBlob") != 0) continue;
    const char* field = *reinterpret_cast<const char* const*>(e + field_off);
    const char* tstr = *reinterpret_cast<const char* const*>(e + tstr_off);
    const uint64_t offset = *reinterpret_cast<const uint64_t*>(e + offset_off);
    const char* field_name = field ? field : "";
    const char* type_string = tstr ? tstr : "";
    const int off = offset < 4096 ? static_cast<int>(offset) : -1;
    if (!strcmp(field_name, "_size")) g_layout.size = off;
    else if (!strcmp(field_name, "_header_size")) {
      g_layout.header_size = off;
      g_layout.header_size_u2 = strcmp(type_string, "int") != 0;
    } else if (!strcmp(field_name, "_frame_size")) g_layout.frame_size = off;
    else if (!strcmp(field_name, "_frame_complete_offset")) {
      g_layout.frame_complete = off;
      g_layout.frame_complete_i16 = strcmp(type_string, "int") != 0;
    } else if (!strcmp(field_name, "_code_begin")) g_layout.code_begin = off;
    else if (!strcmp(field_name, "_code_offset")) g_layout.code_offset = off;
  }
  g_layout.ok = g_layout.size >= 0 && g_layout.header_size >= 0 && g_layout.frame_size >= 0 &&
                g_layout.frame_complete >= 0 && (g_layout.code_begin >= 0 || g_layout.code_offset >= 0);
}

struct BlobFrame {
  int32_t frame_size = 0;  // bytes
  int32_t frame_complete = -1;
};

// The CodeBlob whose code starts at code_addr: its header lies shortly
// before the code (header, relocations, constants, then the instructions),
// within max_back bytes. Candidates are checked field by field against what
// we know of the code. One read of the window (smaller ones near the start
// of the code cache, where less may be readable).
bool FindBlobFrame(uint64_t code_addr, uint64_t code_size, uint64_t max_back, BlobFrame* out) {
  if (!g_layout.ok || code_addr < max_back) return false;
  static thread_local std::vector<char> window;
  window.resize(max_back + 64);
  // Smaller windows where less before the code is readable. A blob may start
  // right at the beginning of a code heap segment, with unmapped memory just
  // before it (native wrappers often do): the last tries start at the code's
  // own page and the page before it.
  const uint64_t in_page = code_addr & 4095;
  uint64_t back = max_back;
  while (!SafeRead(code_addr - back, window.data(), back + 64)) {
    if (back / 2 > in_page + 4096) back /= 2;
    else if (back > in_page + 4096) back = in_page + 4096;
    else if (back > in_page && in_page >= 64) back = in_page;
    else return false;
  }
  const uint64_t lo = code_addr - back;
  const int field_end = g_layout.code_begin >= 0 ? g_layout.code_begin + 8 : g_layout.code_offset + 4;
  for (uint64_t slot = (back - 64) / 8 + 1; slot-- > 0;) {
    const uint64_t at = slot * 8;
    const uint64_t blob = lo + at;
    const char* b = window.data() + at;
    if (at + static_cast<uint64_t>(field_end) > back + 64) continue;
    bool match;
    if (g_layout.code_begin >= 0) {
      uint64_t begin;
      memcpy(&begin, b + g_layout.code_begin, 8);
      match = begin == code_addr;
    } else {
      int32_t off;
      memcpy(&off, b + g_layout.code_offset, 4);
      match = off > 0 && static_cast<uint64_t>(off) == code_addr - blob;
    }
    if (!match) continue;
    int32_t size = 0, frame_words = 0;
    uint32_t header = 0;
    if (!SafeRead(blob + g_layout.size, &size, 4) || !SafeRead(blob + g_layout.frame_size, &frame_words, 4)) continue;
    if (g_layout.header_size_u2) {
      uint16_t h = 0;
      SafeRead(blob + g_layout.header_size, &h, 2);
      header = h;
    } else {
      SafeRead(blob + g_layout.header_size, &header, 4);
    }
    if (size <= 0 || blob + static_cast<uint64_t>(size) < code_addr + code_size || header == 0 ||
        blob + header > code_addr || frame_words < 0 || frame_words > (1 << 20)) {
      continue;
    }
    int32_t complete = -1;
    if (g_layout.frame_complete_i16) {
      int16_t c = -1;
      SafeRead(blob + g_layout.frame_complete, &c, 2);
      complete = c;
    } else {
      SafeRead(blob + g_layout.frame_complete, &complete, 4);
    }
    out->frame_size = frame_words * 8;
    out->frame_complete = complete;
    return true;
  }
  return false;
}

// How far before its code a blob's header may be: a compiled method's
// relocations and constants sit in between; a runtime stub has few.
constexpr uint64_t kMethodHeaderWindow = 64 * 1024;
constexpr uint64_t kStubHeaderWindow = 4 * 1024;

// ---- records (callers hold g_agent.lock) ----

void WriteRecordHeader(std::string& out, uint32_t id, uint32_t total, uint64_t t_ns) {
  Put32(out, id);
  Put32(out, total);
  Put64(out, t_ns);
}

void WriteSide(const std::string& record) {
  if (g_agent.side_fd < 0) return;
  iovec iov{const_cast<char*>(record.data()), record.size()};
  if (!WriteAll(g_agent.side_fd, &iov, 1)) NoteWriteError("the side file");
}

// One CODE_LOAD with the code bytes (perf inject builds an ELF from them),
// or without them under `nocode`. Returns the code index.
uint64_t WriteCodeLoad(const char* name, uint64_t addr, uint64_t size, uint64_t t_ns) {
  const uint64_t index = g_agent.next_code_index++;
  const size_t name_len = strlen(name) + 1;
  const uint64_t bytes = g_agent.options.no_code ? 0 : size;
  const uint64_t total = jd::kCodeLoadFixedSize + name_len + bytes;
  if (total > 0xffffffffull) return index;  // cannot be described in a u32 record
  std::string fixed;
  fixed.reserve(jd::kCodeLoadFixedSize);
  WriteRecordHeader(fixed, jd::kCodeLoad, static_cast<uint32_t>(total), t_ns);
  Put32(fixed, g_agent.pid);
  Put32(fixed, Tid());
  Put64(fixed, addr);
  Put64(fixed, addr);
  Put64(fixed, size);
  Put64(fixed, index);
  iovec iov[3] = {{fixed.data(), fixed.size()},
                  {const_cast<char*>(name), name_len},
                  {reinterpret_cast<void*>(addr), bytes}};
  if (!WriteAll(g_agent.dump_fd, iov, bytes > 0 ? 3 : 2)) NoteWriteError("the jitdump");
  ++g_agent.records;
  g_agent.index_by_addr[addr] = index;
  if (g_agent.map_fd >= 0) {
    char line[64];
    int n = snprintf(line, sizeof(line), "%llx %llx ", static_cast<unsigned long long>(addr),
                     static_cast<unsigned long long>(size));
    iovec map_iov[3] = {{line, static_cast<size_t>(n)},
                        {const_cast<char*>(name), name_len - 1},
                        {const_cast<char*>("\n"), 1}};
    if (!WriteAll(g_agent.map_fd, map_iov, 3)) NoteWriteError("the perf map");
  }
  return index;
}

void WriteFrame(uint64_t addr, uint64_t index, const BlobFrame& frame, uint64_t t_ns) {
  std::string record;
  WriteRecordHeader(record, jd::kSideFrame, jd::kSideFrameSize, t_ns);
  Put64(record, addr);
  Put64(record, index);
  Put32(record, static_cast<uint32_t>(frame.frame_size));
  Put32(record, static_cast<uint32_t>(frame.frame_complete));
  WriteSide(record);
}

class Locked {
 public:
  Locked() { pthread_mutex_lock(&g_agent.lock); }
  ~Locked() { pthread_mutex_unlock(&g_agent.lock); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
};

// ---- names ----

void Deallocate(jvmtiEnv* jvmti, void* p) {
  if (p) jvmti->Deallocate(static_cast<unsigned char*>(p));
}

// "com.example.Burn.heavy" (with the signature appended when asked for).
// Never fails: unnamed pieces become "?".
std::string MethodName(jvmtiEnv* jvmti, jmethodID method) {
  std::string out;
  jclass klass = nullptr;
  char* class_sig = nullptr;
  if (jvmti->GetMethodDeclaringClass(method, &klass) == JVMTI_ERROR_NONE &&
      jvmti->GetClassSignature(klass, &class_sig, nullptr) == JVMTI_ERROR_NONE && class_sig) {
    const char* s = class_sig;
    size_t len = strlen(s);
    if (len >= 2 && s[0] == 'L' && s[len - 1] == ';') {
      ++s;
      len -= 2;
    }
    // JVMTI gives a hidden class's signature with '.' before its address
    // suffix ("LFoo$$Lambda$6.0x0000000800c01234;"); HotSpot prints the class
    // as Foo$$Lambda$6/0x0000000800c01234 (Class.getName()), and so do we.
    // Ordinary class signatures never contain '.'.
    for (size_t i = 0; i < len; ++i) out.push_back(s[i] == '/' ? '.' : s[i] == '.' ? '/' : s[i]);
  } else {
    out = "?";
  }
  Deallocate(jvmti, class_sig);
  char* name = nullptr;
  char* sig = nullptr;
  if (jvmti->GetMethodName(method, &name, &sig, nullptr) == JVMTI_ERROR_NONE) {
    out.push_back('.');
    out.append(name ? name : "?");
    if (g_agent.options.signatures && sig) out.append(sig);
  } else {
    out.append(".?");
  }
  Deallocate(jvmti, name);
  Deallocate(jvmti, sig);
  return out;
}

// The INLINE side record for one compiled method, or "" when nothing was inlined.
std::string InlineRecord(jvmtiEnv* jvmti, uint64_t code_addr, uint64_t code_size, uint64_t index,
                         const void* compile_info, uint64_t t_ns) {
  const jvmtiCompiledMethodLoadInlineRecord* inline_info = nullptr;
  for (auto* h = static_cast<const jvmtiCompiledMethodLoadRecordHeader*>(compile_info); h; h = h->next) {
    if (h->kind == JVMTI_CMLR_INLINE_INFO) {
      inline_info = reinterpret_cast<const jvmtiCompiledMethodLoadInlineRecord*>(h);
      break;
    }
  }
  if (!inline_info || inline_info->numpcs <= 0 || !inline_info->pcinfo) return {};
  bool any_inlined = false;
  for (jint i = 0; i < inline_info->numpcs && !any_inlined; ++i) {
    any_inlined = inline_info->pcinfo[i].numstackframes > 1;
  }
  if (!any_inlined) return {};

  std::unordered_map<jmethodID, uint32_t> name_index;
  std::string names;
  uint32_t name_count = 0;
  std::string entries;
  uint32_t entry_count = 0;
  std::vector<uint32_t> previous, chain;
  uint32_t previous_offset = 0;
  bool pending = false;
  for (jint i = 0; i < inline_info->numpcs; ++i) {
    const PCStackInfo& pc = inline_info->pcinfo[i];
    const uint64_t pc_addr = reinterpret_cast<uint64_t>(pc.pc);
    if (pc_addr < code_addr || pc_addr - code_addr > code_size || pc.numstackframes <= 0 || !pc.methods) continue;
    chain.clear();
    for (jint f = 0; f < pc.numstackframes; ++f) {
      auto [it, added] = name_index.emplace(pc.methods[f], name_count);
      if (added) {
        names += MethodName(jvmti, pc.methods[f]);
        names.push_back('\0');
        ++name_count;
      }
      chain.push_back(it->second);
    }
    const uint32_t offset = static_cast<uint32_t>(pc_addr - code_addr);
    // Consecutive pcs with the same chain describe one range: keep the last.
    if (pending && chain != previous) {
      Put32(entries, previous_offset);
      Put32(entries, static_cast<uint32_t>(previous.size()));
      for (uint32_t n : previous) Put32(entries, n);
      ++entry_count;
    }
    previous.swap(chain);
    previous_offset = offset;
    pending = true;
  }
  if (pending) {
    Put32(entries, previous_offset);
    Put32(entries, static_cast<uint32_t>(previous.size()));
    for (uint32_t n : previous) Put32(entries, n);
    ++entry_count;
  }
  const uint64_t total = jd::kSideInlineFixedSize + names.size() + entries.size();
  if (total > (64u << 20)) return {};
  std::string record;
  record.reserve(total);
  WriteRecordHeader(record, jd::kSideInline, static_cast<uint32_t>(total), t_ns);
  Put64(record, code_addr);
  Put64(record, index);
  Put32(record, name_count);
  Put32(record, entry_count);
  record += names;
  record += entries;
  return record;
}

// ---- JVMTI callbacks ----

void JNICALL OnCompiledMethodLoad(jvmtiEnv* jvmti, jmethodID method, jint code_size, const void* code_addr,
                                  jint map_length, const jvmtiAddrLocationMap* map, const void* compile_info) {
  if (!code_addr || code_size < 0) return;
  const std::string name = MethodName(jvmti, method);
  const uint64_t addr = reinterpret_cast<uint64_t>(code_addr);
  // Names are looked up before taking the write lock; the index and the
  // time are patched in under it.
  std::string inline_record =
      compile_info ? InlineRecord(jvmti, addr, static_cast<uint64_t>(code_size), 0, compile_info, 0) : std::string();
  BlobFrame frame;
  const bool have_frame =
      FindBlobFrame(addr, static_cast<uint64_t>(code_size), kMethodHeaderWindow, &frame) && frame.frame_size > 0;
  Locked lock;
  if (!g_agent.active || g_agent.closed) return;
  const uint64_t t_ns = MonotonicNs();
  const uint64_t index = WriteCodeLoad(name.c_str(), addr, static_cast<uint64_t>(code_size), t_ns);
  if (have_frame) WriteFrame(addr, index, frame, t_ns);
  else ++g_agent.frames_unknown;
  if (!inline_record.empty()) {
    memcpy(inline_record.data() + 8, &t_ns, 8);
    memcpy(inline_record.data() + 24, &index, 8);
    WriteSide(inline_record);
  }
}

void JNICALL OnCompiledMethodUnload(jvmtiEnv* jvmti, jmethodID method, const void* code_addr) {
  const uint64_t addr = reinterpret_cast<uint64_t>(code_addr);
  Locked lock;
  if (!g_agent.active || g_agent.closed) return;
  uint64_t index = 0;
  if (auto it = g_agent.index_by_addr.find(addr); it != g_agent.index_by_addr.end()) {
    index = it->second;
    g_agent.index_by_addr.erase(it);
  }
  std::string record;
  WriteRecordHeader(record, jd::kSideUnload, jd::kSideUnloadSize, MonotonicNs());
  Put64(record, addr);
  Put64(record, index);
  WriteSide(record);
}

void JNICALL OnDynamicCodeGenerated(jvmtiEnv* jvmti, const char* name, const void* address, jint length) {
  if (!address || length < 0) return;
  // Stubs that are blobs of their own (runtime stubs, adapters) have a fixed
  // frame like compiled methods; the interpreter and the stubs inside a
  // shared buffer (call_stub, ...) keep rbp as their frame pointer.
  BlobFrame frame;
  const bool have_frame =
      name && strcmp(name, "Interpreter") != 0 &&
      FindBlobFrame(reinterpret_cast<uint64_t>(address), static_cast<uint64_t>(length), kStubHeaderWindow, &frame) &&
      frame.frame_size > 0;
  Locked lock;
  if (!g_agent.active || g_agent.closed) return;
  const uint64_t t_ns = MonotonicNs();
  const uint64_t index = WriteCodeLoad(name ? name : "[stub]", reinterpret_cast<uint64_t>(address),
                                       static_cast<uint64_t>(length), t_ns);
  if (have_frame) WriteFrame(reinterpret_cast<uint64_t>(address), index, frame, t_ns);
}

// "com.example.Burn." for a class: the first part of its methods' names.
std::string ClassPrefix(jvmtiEnv* jvmti, jclass klass) {
  std::string prefix;
  char* class_sig = nullptr;
  if (jvmti->GetClassSignature(klass, &class_sig, nullptr) == JVMTI_ERROR_NONE && class_sig) {
    const char* sig = class_sig;
    size_t len = strlen(sig);
    if (len >= 2 && sig[0] == 'L' && sig[len - 1] == ';') {
      ++sig;
      len -= 2;
    }
    for (size_t i = 0; i < len; ++i) prefix.push_back(sig[i] == '/' ? '.' : sig[i]);
  } else {
    prefix = "?";
  }
  Deallocate(jvmti, class_sig);
  prefix.push_back('.');
  return prefix;
}

// Appends one method's Method* and name to a METHODS record under way.
bool AddMethodName(jvmtiEnv* jvmti, jmethodID id, uint64_t method, const std::string& prefix, std::string* addrs,
                   std::string* names) {
  char* name = nullptr;
  char* sig = nullptr;
  if (jvmti->GetMethodName(id, &name, g_agent.options.signatures ? &sig : nullptr, nullptr) != JVMTI_ERROR_NONE) {
    return false;
  }
  Put64(*addrs, method);
  *names += prefix;
  *names += name ? name : "?";
  if (sig) *names += sig;
  names->push_back('\0');
  Deallocate(jvmti, name);
  Deallocate(jvmti, sig);
  return true;
}

// One METHODS record, stamped t_ns.
void WriteMethods(uint32_t count, const std::string& addrs, const std::string& names, uint64_t t_ns) {
  if (count == 0) return;
  std::string record;
  const uint64_t total = jd::kSideMethodsFixedSize + addrs.size() + names.size();
  if (total > (16u << 20)) return;
  Locked lock;
  if (!g_agent.active || g_agent.closed) return;
  WriteRecordHeader(record, jd::kSideMethods, static_cast<uint32_t>(total), t_ns);
  Put32(record, count);
  Put32(record, 0);
  record += addrs;
  record += names;
  WriteSide(record);
  g_agent.methods_named += count;
}

// Method* -> name for every method of a class: the interpreter's frames hold
// the Method* of the method they run. A jmethodID points at its Method*.
void WriteClassMethods(jvmtiEnv* jvmti, jclass klass) {
  jint count = 0;
  jmethodID* methods = nullptr;
  if (jvmti->GetClassMethods(klass, &count, &methods) != JVMTI_ERROR_NONE || count <= 0) {
    Deallocate(jvmti, methods);
    return;
  }
  // The class part of every name once, then each method's own name.
  const std::string prefix = ClassPrefix(jvmti, klass);
  std::string addrs, names;
  uint32_t written = 0;
  std::vector<std::pair<jmethodID, uint64_t>> watched;
  for (jint i = 0; i < count; ++i) {
    uint64_t method = 0;
    if (!methods[i] || !SafeRead(reinterpret_cast<uint64_t>(methods[i]), &method, 8) || method == 0) continue;
    if (!AddMethodName(jvmti, methods[i], method, prefix, &addrs, &names)) continue;
    watched.emplace_back(methods[i], method);
    ++written;
  }
  Deallocate(jvmti, methods);
  WriteMethods(written, addrs, names, MonotonicNs());
  pthread_mutex_lock(&g_watch.lock);
  for (const auto& [id, method] : watched) {
    g_watch.ids.push_back(id);
    g_watch.methods.push_back(method);
  }
  pthread_mutex_unlock(&g_watch.lock);
}

// ---- class redefinition ----
//
// RedefineClasses and RetransformClasses replace a class's methods with new
// Method*s and point the methods' jmethodIDs at them; no JVMTI event says so
// after the fact (ClassFileLoadHook comes before, and only to environments
// that ask for every class load). The watcher thread re-reads every
// jmethodID it knows, in batches of one process_vm_readv each, and names the
// Method*s that changed. The record is stamped with the time of the previous
// scan, the earliest the new Method* can exist: a sample in between that
// hits the new Method* gets its name, and no sample before it can (the
// address held nothing that ran). The interval adapts to the scan's CPU
// cost (100 times it, between 250 ms and 2 s), so the watch costs at most 1%
// of one CPU however many methods the JVM has.

constexpr size_t kWatchBatch = 1024;  // IOV_MAX

// Reads the Method* behind ids[0..n) into out; a jmethodID that cannot be
// read gives 0.
void ReadMethods(const jmethodID* ids, size_t n, uint64_t* out) {
  static const pid_t self = getpid();
  iovec remote[kWatchBatch];
  size_t done = 0;
  while (done < n) {
    const size_t count = n - done;
    for (size_t i = 0; i < count; ++i) remote[i] = {reinterpret_cast<void*>(ids[done + i]), 8};
    iovec local{out + done, count * 8};
    const ssize_t got = process_vm_readv(self, &local, 1, remote, count, 0);
    // A partial read stops at the first jmethodID that could not be read.
    const size_t whole = got > 0 ? static_cast<size_t>(got) / 8 : 0;
    done += whole;
    if (done < n) out[done++] = 0;
  }
}

void ScanForRedefinedMethods(jvmtiEnv* jvmti, uint64_t since_ns) {
  std::vector<jmethodID> ids(kWatchBatch);
  std::vector<uint64_t> now(kWatchBatch);
  std::vector<std::pair<jmethodID, uint64_t>> changed;
  for (size_t start = 0;; start += kWatchBatch) {
    size_t n;
    pthread_mutex_lock(&g_watch.lock);
    n = start < g_watch.ids.size() ? std::min(kWatchBatch, g_watch.ids.size() - start) : 0;
    std::copy_n(g_watch.ids.begin() + static_cast<std::ptrdiff_t>(start), n, ids.begin());
    pthread_mutex_unlock(&g_watch.lock);
    if (n == 0) break;
    ReadMethods(ids.data(), n, now.data());
    pthread_mutex_lock(&g_watch.lock);
    for (size_t i = 0; i < n; ++i) {
      uint64_t& known = g_watch.methods[start + i];
      if (now[i] == known || known == 0) continue;
      // A class that was unloaded leaves its jmethodIDs pointing at nothing
      // (0 or a small marker): stop watching them.
      if (now[i] < 4096) {
        known = 0;
        continue;
      }
      known = now[i];
      changed.emplace_back(ids[i], now[i]);
    }
    pthread_mutex_unlock(&g_watch.lock);
  }
  if (changed.empty()) return;
  std::string addrs, names;
  uint32_t written = 0;
  for (const auto& [id, method] : changed) {
    jclass klass = nullptr;
    if (jvmti->GetMethodDeclaringClass(id, &klass) != JVMTI_ERROR_NONE) continue;
    if (AddMethodName(jvmti, id, method, ClassPrefix(jvmti, klass), &addrs, &names)) ++written;
  }
  WriteMethods(written, addrs, names, since_ns);
  Locked lock;
  g_agent.methods_renamed += written;
}

// The classes the hook announced: names their methods' new Method*s as soon
// as the redefinition has replaced them (within a millisecond or two, long
// before arcprof resolves the samples that hit them), stamped with the
// hook's time. Returns whether some are still waiting.
bool CheckPending(jvmtiEnv* jvmti) {
  std::vector<Watch::Pending> work;
  pthread_mutex_lock(&g_watch.lock);
  work.swap(g_watch.pending);
  pthread_mutex_unlock(&g_watch.lock);
  std::vector<Watch::Pending> still;
  const uint64_t now = MonotonicNs();
  for (Watch::Pending& p : work) {
    std::vector<uint64_t> after(p.ids.size());
    ReadMethods(p.ids.data(), p.ids.size(), after.data());
    std::string addrs, names;
    uint32_t written = 0;
    bool waiting = false;
    for (size_t i = 0; i < p.ids.size(); ++i) {
      if (after[i] == p.before[i]) {
        waiting = true;
        continue;
      }
      if (after[i] < 4096) continue;
      if (AddMethodName(jvmti, p.ids[i], after[i], p.prefix, &addrs, &names)) ++written;
      p.before[i] = after[i];
    }
    WriteMethods(written, addrs, names, p.t_ns);
    if (written) {
      Locked lock;
      g_agent.methods_renamed += written;
    }
    // A redefinition that failed (or left a method as it was) stops being
    // watched after a second; the regular scan still sees later changes.
    if (waiting && now - p.t_ns < 1000000000ull) still.push_back(std::move(p));
  }
  pthread_mutex_lock(&g_watch.lock);
  for (Watch::Pending& p : still) g_watch.pending.push_back(std::move(p));
  const bool any = !g_watch.pending.empty();
  pthread_mutex_unlock(&g_watch.lock);
  return any;
}

void JNICALL OnClassFileLoadHook(jvmtiEnv* jvmti, JNIEnv* jni, jclass class_being_redefined, jobject loader,
                                 const char* name, jobject protection_domain, jint class_data_len,
                                 const unsigned char* class_data, jint* new_class_data_len,
                                 unsigned char** new_class_data) {
  if (!class_being_redefined) return;  // an ordinary class load: nothing to do
  Watch::Pending p;
  p.t_ns = MonotonicNs();
  jint count = 0;
  jmethodID* methods = nullptr;
  if (jvmti->GetClassMethods(class_being_redefined, &count, &methods) != JVMTI_ERROR_NONE || count <= 0) {
    Deallocate(jvmti, methods);
    return;
  }
  p.ids.assign(methods, methods + count);
  Deallocate(jvmti, methods);
  p.before.resize(p.ids.size());
  ReadMethods(p.ids.data(), p.ids.size(), p.before.data());
  p.prefix = ClassPrefix(jvmti, class_being_redefined);
  pthread_mutex_lock(&g_watch.lock);
  g_watch.pending.push_back(std::move(p));
  pthread_mutex_unlock(&g_watch.lock);
  if (g_watch.monitor && jvmti->RawMonitorEnter(g_watch.monitor) == JVMTI_ERROR_NONE) {
    jvmti->RawMonitorNotifyAll(g_watch.monitor);
    jvmti->RawMonitorExit(g_watch.monitor);
  }
}

void JNICALL WatchRedefinitions(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  uint64_t since = MonotonicNs();
  jlong interval_ms = 250;
  uint64_t next_scan = since + 250000000ull;
  bool fast = false;
  while (true) {
    jvmti->RawMonitorEnter(g_watch.monitor);
    jvmti->RawMonitorWait(g_watch.monitor, fast ? 1 : interval_ms);
    jvmti->RawMonitorExit(g_watch.monitor);
    {
      Locked lock;
      if (!g_agent.active || g_agent.closed) return;
    }
    fast = CheckPending(jvmti);
    if (MonotonicNs() < next_scan) continue;
    const uint64_t t0 = MonotonicNs();
    const uint64_t cpu0 = ThreadCpuNs();
    ScanForRedefinedMethods(jvmti, since);
    since = t0;
    // CPU time, not elapsed time: on a loaded machine a scan waits for a CPU.
    const uint64_t cost_us = (ThreadCpuNs() - cpu0) / 1000;
    interval_ms = static_cast<jlong>(std::min<uint64_t>(2000, std::max<uint64_t>(250, cost_us / 10)));
    next_scan = MonotonicNs() + static_cast<uint64_t>(interval_ms) * 1000000ull;
  }
}

void JNICALL OnClassPrepare(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jclass klass) {
  WriteClassMethods(jvmti, klass);
}

// Classes loaded before the agent (attached late, or before VMInit).
void WriteLoadedClasses(jvmtiEnv* jvmti, JNIEnv* jni) {
  jint count = 0;
  jclass* classes = nullptr;
  if (jvmti->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
  for (jint i = 0; i < count; ++i) {
    jint status = 0;
    // Methods exist once a class is prepared; arrays and primitives have none.
    if (jvmti->GetClassStatus(classes[i], &status) == JVMTI_ERROR_NONE && (status & JVMTI_CLASS_STATUS_PREPARED) &&
        !(status & (JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE))) {
      WriteClassMethods(jvmti, classes[i]);
    }
    if (jni) jni->DeleteLocalRef(classes[i]);
  }
  Deallocate(jvmti, classes);
}

void WriteThreadName(uint32_t tid, const char* name) {
  const size_t name_len = strlen(name) + 1;
  std::string record;
  WriteRecordHeader(record, jd::kSideThreadName, static_cast<uint32_t>(jd::kSideThreadNameFixedSize + name_len),
                    MonotonicNs());
  Put32(record, tid);
  Put32(record, 0);
  record.append(name, name_len);
  WriteSide(record);
}

void JNICALL OnThreadStart(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  jvmtiThreadInfo info{};
  if (jvmti->GetThreadInfo(thread, &info) != JVMTI_ERROR_NONE) return;
  const uint32_t tid = Tid();  // ThreadStart runs on the new thread itself
  {
    Locked lock;
    if (g_agent.active && !g_agent.closed && info.name) WriteThreadName(tid, info.name);
  }
  Deallocate(jvmti, info.name);
  if (jni) {
    if (info.thread_group) jni->DeleteLocalRef(info.thread_group);
    if (info.context_class_loader) jni->DeleteLocalRef(info.context_class_loader);
  }
}

void JNICALL OnThreadEnd(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  // The tid may be reused by a native thread: drop the Java name.
  Locked lock;
  if (g_agent.active && !g_agent.closed) WriteThreadName(Tid(), "");
}

// Stubs generated before the agent's events were live (started with
// -agentpath, the interpreter is generated before VMInit), and the names of
// the classes loaded so far.
void JNICALL ReplayAtStart(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  jvmti->GenerateEvents(JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
  WriteLoadedClasses(jvmti, jni);
}

// The agent thread started with -agentpath: the replay, then the watch.
void JNICALL ReplayThenWatch(jvmtiEnv* jvmti, JNIEnv* jni, void* arg) {
  ReplayAtStart(jvmti, jni, arg);
  WatchRedefinitions(jvmti, jni, arg);
}

// A Java thread of the agent's own ("arcprof agent", a daemon) running fn.
bool StartAgentThread(jvmtiEnv* jvmti, JNIEnv* jni, jvmtiStartFunction fn) {
  if (!jni) return false;
  bool started = false;
  if (jclass thread_class = jni->FindClass("java/lang/Thread")) {
    jmethodID init = jni->GetMethodID(thread_class, "<init>", "(Ljava/lang/String;)V");
    jstring name = jni->NewStringUTF("arcprof agent");
    jobject agent_thread = init && name ? jni->NewObject(thread_class, init, name) : nullptr;
    started = agent_thread &&
              jvmti->RunAgentThread(agent_thread, fn, nullptr, JVMTI_THREAD_NORM_PRIORITY) == JVMTI_ERROR_NONE;
  }
  if (jni->ExceptionCheck()) jni->ExceptionClear();
  return started;
}

void JNICALL OnVMInit(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  // On an agent thread of our own, not on the thread that goes on to run
  // main() (a few milliseconds of JVM start-up otherwise).
  if (!g_watch.monitor || !StartAgentThread(jvmti, jni, ReplayThenWatch)) {
    ReplayAtStart(jvmti, jni, nullptr);
    if (!g_agent.options.quiet) Log("no agent thread: redefined classes' interpreted frames will not be named");
  } else {
    // Only from the live phase on: classes loaded during start-up need no hook.
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
  }
  OnThreadStart(jvmti, jni, thread);
}

// Removes the files this agent created, each only while its name still
// refers to the file the agent holds open (never somebody else's file that
// took the name since), and the private folder when one was made.
void UnlinkOwnFiles() {
  const std::string base = g_agent.dir + "/jit-" + std::to_string(g_agent.pid);
  const std::pair<int, std::string> files[] = {
      {g_agent.dump_fd, base + ".dump"},
      {g_agent.side_fd, base + ".arcprof"},
      {g_agent.map_fd, g_agent.options.dir + "/perf-" + std::to_string(g_agent.pid) + ".map"}};
  for (const auto& [fd, path] : files) {
    struct stat held {}, named {};
    if (fd < 0 || fstat(fd, &held) != 0 || lstat(path.c_str(), &named) != 0) continue;
    if (held.st_dev == named.st_dev && held.st_ino == named.st_ino) unlink(path.c_str());
  }
  if (g_agent.dir != g_agent.options.dir) rmdir(g_agent.dir.c_str());  // the private folder, once empty
}

void JNICALL OnVMDeath(jvmtiEnv* jvmti, JNIEnv* jni) {
  Locked lock;
  if (!g_agent.active || g_agent.closed) return;
  std::string record;
  WriteRecordHeader(record, jd::kCodeClose, jd::kRecordHeaderSize, MonotonicNs());
  iovec iov{record.data(), record.size()};
  if (!WriteAll(g_agent.dump_fd, &iov, 1)) NoteWriteError("the jitdump");
  g_agent.closed = true;
  if (g_agent.options.unlink_at_exit) UnlinkOwnFiles();
  if (g_watch.monitor && jvmti->RawMonitorEnter(g_watch.monitor) == JVMTI_ERROR_NONE) {
    jvmti->RawMonitorNotifyAll(g_watch.monitor);
    jvmti->RawMonitorExit(g_watch.monitor);
  }
}

// Attached late, the agent saw no ThreadStart for the threads that already
// run, and JVMTI does not tell a thread's tid. HotSpot gives every thread it
// starts its Java name (cut to 15 characters) as the kernel's name, so a
// kernel name that matches exactly one Java name is that thread; the
// launcher's main thread keeps the name "java" (the leader, tid == pid, is
// the launcher waiting for it).
void NameExistingThreads(jvmtiEnv* jvmti, JNIEnv* jni) {
  jint count = 0;
  jthread* threads = nullptr;
  if (jvmti->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return;
  std::vector<std::string> names;
  for (jint i = 0; i < count; ++i) {
    jvmtiThreadInfo info{};
    if (jvmti->GetThreadInfo(threads[i], &info) == JVMTI_ERROR_NONE && info.name) names.emplace_back(info.name);
    Deallocate(jvmti, info.name);
    if (jni) {
      if (info.thread_group) jni->DeleteLocalRef(info.thread_group);
      if (info.context_class_loader) jni->DeleteLocalRef(info.context_class_loader);
      jni->DeleteLocalRef(threads[i]);
    }
  }
  Deallocate(jvmti, threads);
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return;
  std::vector<std::pair<uint32_t, std::string>> tasks;
  while (dirent* entry = readdir(dir)) {
    const uint32_t tid = static_cast<uint32_t>(strtoul(entry->d_name, nullptr, 10));
    if (tid == 0 || tid == g_agent.pid) continue;
    char path[64], comm[32] = {};
    snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (n <= 0) continue;
    comm[strcspn(comm, "\n")] = '\0';
    tasks.emplace_back(tid, comm);
  }
  closedir(dir);
  for (const std::string& name : names) {
    const std::string kernel_name = name == "main" ? "java" : name.substr(0, 15);
    uint32_t match = 0;
    int matches = 0;
    for (const auto& [tid, comm] : tasks) {
      if (comm == kernel_name) {
        match = tid;
        ++matches;
      }
    }
    int same_java_names = 0;
    for (const std::string& other : names) same_java_names += other.substr(0, 15) == name.substr(0, 15);
    if (matches != 1 || same_java_names != 1) continue;
    Locked lock;
    if (g_agent.active && !g_agent.closed) WriteThreadName(match, name.c_str());
  }
}

// ---- set-up ----

bool ParseOptions(const char* text, Options* out) {
  if (!text) return true;
  std::string all(text);
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t comma = all.find(',', pos);
    if (comma == std::string::npos) comma = all.size();
    std::string opt = all.substr(pos, comma - pos);
    pos = comma + 1;
    if (opt.empty()) continue;
    if (opt == "perfmap") out->perfmap = true;
    else if (opt == "sig") out->signatures = true;
    else if (opt == "quiet") out->quiet = true;
    else if (opt == "unlink") out->unlink_at_exit = true;
    else if (opt == "nocode") out->no_code = true;
    else if (opt.rfind("dir=", 0) == 0 && opt.size() > 4) out->dir = opt.substr(4);
    else {
      Log("unknown option '%s' (known: perfmap, sig, quiet, unlink, nocode, dir=PATH)", opt.c_str());
      return false;
    }
  }
  return true;
}

uint32_t ElfMachine() {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 62;
  unsigned char header[20] = {};
  ssize_t n = read(fd, header, sizeof(header));
  close(fd);
  if (n < 20) return 62;
  uint16_t machine;
  memcpy(&machine, header + 18, 2);
  return machine;
}

// Creates jit-<pid>.dump and jit-<pid>.arcprof in dir; false when a name
// there is taken by a file that is not ours (*taken) or on another error.
bool CreateBoth(const std::string& dir, bool* taken) {
  const std::string base = dir + "/jit-" + std::to_string(g_agent.pid);
  g_agent.dump_fd = CreateExclusive(base + ".dump", /*readable=*/true, taken);
  if (g_agent.dump_fd < 0) return false;
  g_agent.side_fd = CreateExclusive(base + ".arcprof", /*readable=*/false, taken);
  if (g_agent.side_fd < 0 && *taken) {
    close(g_agent.dump_fd);
    g_agent.dump_fd = -1;
    unlink((base + ".dump").c_str());
    return false;
  }
  return true;  // without a side file the jitdump still names code
}

bool OpenFiles(bool attached, bool preserve_fp) {
  if (DumpAlreadyMapped(g_agent.pid)) {
    if (!g_agent.options.quiet) Log("jit-%u.dump is already being written by an agent in this JVM", g_agent.pid);
    return false;
  }
  std::string dir = g_agent.options.dir;
  bool taken = false;
  if (!CreateBoth(dir, &taken)) {
    if (!taken) return false;
    // Somebody else's file holds our name (any user can create one in
    // /tmp): write into a folder of our own with an unguessable name.
    // Profilers find the jitdump by its executable mapping.
    std::string private_dir = dir + "/.arcprof-jit-" + std::to_string(g_agent.pid) + "-XXXXXX";
    if (!mkdtemp(private_dir.data())) {
      Log("cannot create a folder in %s: %s", dir.c_str(), strerror(errno));
      return false;
    }
    Log("%s/jit-%u.dump (or .arcprof) exists and is not ours: writing to %s instead", dir.c_str(), g_agent.pid,
        private_dir.c_str());
    dir = private_dir;
    if (!CreateBoth(dir, &taken)) return false;
  }
  g_agent.dir = dir;
  const std::string dump_path = dir + "/jit-" + std::to_string(g_agent.pid) + ".dump";
  std::string header;
  Put32(header, jd::kMagic);
  Put32(header, jd::kVersion);
  Put32(header, jd::kFileHeaderSize);
  Put32(header, ElfMachine());
  Put32(header, 0);
  Put32(header, g_agent.pid);
  Put64(header, MonotonicNs());
  Put64(header, g_agent.options.no_code ? jd::kFlagNoCode : 0);  // CLOCK_MONOTONIC timestamps
  iovec iov{header.data(), header.size()};
  if (!WriteAll(g_agent.dump_fd, &iov, 1)) {
    Log("cannot write %s: %s", dump_path.c_str(), strerror(errno));
    return false;
  }
  // perf learns the jitdump from this executable mapping (docs/formats.md §1.1).
  const long page = sysconf(_SC_PAGESIZE);
  g_agent.marker_len = page > 0 ? static_cast<size_t>(page) : 4096;
  void* marker = mmap(nullptr, g_agent.marker_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, g_agent.dump_fd, 0);
  if (marker == MAP_FAILED) {
    Log("cannot map %s executable (%s): perf will not find it; arcprof still will", dump_path.c_str(),
        strerror(errno));
  } else {
    g_agent.marker = marker;
  }
  if (g_agent.side_fd >= 0) {
    std::string side;
    side.append(jd::kSideMagic, sizeof(jd::kSideMagic));
    Put32(side, jd::kSideVersion);
    Put32(side, jd::kSideHeaderSize);
    const char* vm = "HotSpot";
    std::string vm_name = vm;
    char* prop = nullptr;
    if (g_agent.jvmti->GetSystemProperty("java.vm.version", &prop) == JVMTI_ERROR_NONE && prop) {
      vm_name += " ";
      vm_name += prop;
    }
    Deallocate(g_agent.jvmti, prop);
    const uint32_t flags = (preserve_fp ? jd::kVmPreserveFramePointer : 0) | (attached ? jd::kVmAttachedLate : 0);
    WriteRecordHeader(side, jd::kSideVmInfo, static_cast<uint32_t>(jd::kSideVmInfoFixedSize + vm_name.size() + 1),
                      MonotonicNs());
    Put32(side, g_agent.pid);
    Put32(side, flags);
    side.append(vm_name.c_str(), vm_name.size() + 1);
    WriteSide(side);
  }
  if (g_agent.options.perfmap) {
    g_agent.map_fd = CreateExclusive(g_agent.options.dir + "/perf-" + std::to_string(g_agent.pid) + ".map", false);
  }
  return true;
}

void CloseFiles() {
  if (g_agent.marker) munmap(g_agent.marker, g_agent.marker_len);
  g_agent.marker = nullptr;
  for (int* fd : {&g_agent.dump_fd, &g_agent.side_fd, &g_agent.map_fd}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

jint Start(JavaVM* vm, const char* options, bool attached) {
  {
    Locked lock;
    if (g_agent.active) {
      if (!g_agent.options.quiet) Log("already active in this JVM; writing jit-%u.dump", g_agent.pid);
      return JNI_OK;
    }
  }
  Options parsed;
  if (!ParseOptions(options, &parsed)) return JNI_ERR;
  jvmtiEnv* jvmti = nullptr;
  const jint env = vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_1_2);
  if (env == JNI_EDETACHED && attached) {
    // Attached while the JVM is still starting (not in its live phase):
    // arcprof tries again; nothing worth a line on the JVM's stderr.
    return JNI_EDETACHED;
  }
  if (env != JNI_OK || !jvmti) {
    Log("this JVM offers no JVMTI 1.2 environment (GetEnv: %d)", static_cast<int>(env));
    return JNI_ERR;
  }
  jvmtiCapabilities caps{};
  caps.can_generate_compiled_method_load_events = 1;
  if (jvmtiError err = jvmti->AddCapabilities(&caps); err != JVMTI_ERROR_NONE) {
    Log("the JVM refused the compiled-method capability (JVMTI error %d)", static_cast<int>(err));
    jvmti->DisposeEnvironment();
    return JNI_ERR;
  }
  // Optional: ClassFileLoadHook for RetransformClasses, not only for
  // RedefineClasses (the hook only announces them; the agent never changes a
  // class).
  jvmtiCapabilities retransform{};
  retransform.can_retransform_classes = 1;
  jvmti->AddCapabilities(&retransform);
  const bool preserve_fp = PreserveFramePointerOn();
  ReadVmLayout();
  if (!g_watch.monitor && jvmti->CreateRawMonitor("arcprof watch", &g_watch.monitor) != JVMTI_ERROR_NONE) {
    g_watch.monitor = nullptr;
  }
  {
    Locked lock;
    g_agent.jvmti = jvmti;
    g_agent.options = parsed;
    g_agent.pid = static_cast<uint32_t>(getpid());
    if (!OpenFiles(attached, preserve_fp)) {
      CloseFiles();
      jvmti->DisposeEnvironment();
      g_agent.jvmti = nullptr;
      return JNI_ERR;
    }
    g_agent.active = true;
  }
  if (!preserve_fp && !parsed.quiet) {
    if (g_layout.ok) {
      Log("-XX:+PreserveFramePointer is off: arcprof steps compiled frames by their frame size; "
          "frame-pointer profilers (perf) see Java stacks end at the first JIT frame");
    } else {
      Log("-XX:+PreserveFramePointer is off and this JVM's CodeBlob layout is unknown: Java stacks end at the "
          "first JIT frame; start the JVM with -XX:+PreserveFramePointer for complete stacks");
    }
  }
  jvmtiEventCallbacks callbacks{};
  callbacks.CompiledMethodLoad = OnCompiledMethodLoad;
  callbacks.CompiledMethodUnload = OnCompiledMethodUnload;
  callbacks.DynamicCodeGenerated = OnDynamicCodeGenerated;
  callbacks.ThreadStart = OnThreadStart;
  callbacks.ThreadEnd = OnThreadEnd;
  callbacks.VMInit = OnVMInit;
  callbacks.VMDeath = OnVMDeath;
  callbacks.ClassPrepare = OnClassPrepare;
  callbacks.ClassFileLoadHook = OnClassFileLoadHook;
  jvmtiError err = jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks));
  const jvmtiEvent events[] = {JVMTI_EVENT_COMPILED_METHOD_LOAD, JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
                               JVMTI_EVENT_DYNAMIC_CODE_GENERATED, JVMTI_EVENT_THREAD_START,
                               JVMTI_EVENT_THREAD_END, JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH,
                               JVMTI_EVENT_CLASS_PREPARE};
  for (jvmtiEvent e : events) {
    if (err != JVMTI_ERROR_NONE) break;
    if (attached && e == JVMTI_EVENT_VM_INIT) continue;
    err = jvmti->SetEventNotificationMode(JVMTI_ENABLE, e, nullptr);
  }
  if (err == JVMTI_ERROR_NONE && attached) {
    // What already exists: compiled methods and stubs, stamped now.
    err = jvmti->GenerateEvents(JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
    if (err == JVMTI_ERROR_NONE) err = jvmti->GenerateEvents(JVMTI_EVENT_COMPILED_METHOD_LOAD);
  }
  if (err != JVMTI_ERROR_NONE) {
    Log("cannot enable JIT events (JVMTI error %d); no jitdump will be written", static_cast<int>(err));
    for (jvmtiEvent e : events) jvmti->SetEventNotificationMode(JVMTI_DISABLE, e, nullptr);
    Locked lock;
    g_agent.active = false;
    CloseFiles();
    return JNI_ERR;
  }
  if (attached) {
    JNIEnv* jni = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) != JNI_OK) jni = nullptr;
    NameExistingThreads(jvmti, jni);
    WriteLoadedClasses(jvmti, jni);
    if (!g_watch.monitor || !StartAgentThread(jvmti, jni, WatchRedefinitions)) {
      if (!parsed.quiet) Log("no agent thread: redefined classes' interpreted frames will not be named");
    } else {
      jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
    }
  }
  if (!parsed.quiet && attached) {
    Locked lock;
    Log("writing %s/jit-%u.dump (%llu code records so far)", g_agent.dir.c_str(), g_agent.pid,
        static_cast<unsigned long long>(g_agent.records));
  }
  return JNI_OK;
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void* reserved) {
  // A failing profiler agent must not keep the JVM from starting.
  if (Start(vm, options, /*attached=*/false) != JNI_OK) Log("continuing without arcprof's JIT records");
  return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void* reserved) {
  // `arcprof trace` of a Java root (trace_agent.h): its own environment.
  if (options && strncmp(options, "trace=", 6) == 0) return arcprof::jtrace::StartTrace(vm, options);
  return Start(vm, options, /*attached=*/true);
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM* vm) {
  Locked lock;
  g_agent.active = false;
  CloseFiles();
}

}  // extern "C"
