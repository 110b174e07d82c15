#include "trace_agent.h"

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "class_probes.h"

extern const uint8_t kProbeClassBytes[];
extern const size_t kProbeClassBytes_size;

namespace arcprof::jtrace {
namespace {

using classfile::CalledMethod;
using classfile::MethodProbe;

constexpr uint32_t kMaxMethods = 1u << 16;  // method ids, 0 the calibration's
constexpr uint32_t kMaxDepth = 512;         // frames of one thread's shadow stack
constexpr uint32_t kMaxNodes = 1u << 16;    // call-tree nodes of one thread
constexpr uint32_t kMaxProbed = 20000;      // methods probed by one trace
constexpr uint32_t kCalibrationId = 0;
constexpr size_t kMaxLine = 4096;

void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Log(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "arcprof agent: trace: %s\n", buf);
}

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// ---- what the probes run: per-thread shadow stacks and call trees ----

std::atomic<bool> g_active{false};
std::atomic<uint32_t> g_generation{1};
// Retransformations done so far in this trace. A root call remembers the
// epoch it started in; a method probed in a later epoch is not counted under
// it (its calls before the probes went in were not seen), so every counted
// root call has all or none of a method's calls.
std::atomic<uint32_t> g_epoch{1};
std::atomic<uint8_t> g_is_root[kMaxMethods];
std::atomic<uint32_t> g_since[kMaxMethods];   // epoch from which a method counts
std::atomic<uint8_t> g_reached[kMaxMethods];  // called under a root at least once

struct Frame {
  uint32_t method = 0;
  uint32_t node = 0;  // node index + 1; 0: not counted
  uint64_t start = 0;
};

struct Node {
  uint32_t parent = 0;  // node index + 1, 0 for a root call
  uint32_t method = 0;
  uint64_t calls = 0, ended = 0, thrown = 0, incl = 0, child = 0, unreturned = 0;
};

struct ThreadState {
  std::atomic<uint32_t> busy{0};
  std::atomic<bool> dead{false};
  uint32_t generation = 0;
  uint32_t tid = 0;
  uint32_t depth = 0;
  uint32_t overflow = 0;  // frames beyond kMaxDepth, not recorded
  uint32_t root_epoch = 0;
  Frame stack[kMaxDepth];
  std::vector<Node> nodes;
  std::vector<uint32_t> slots;  // open addressing over (parent, method): node index + 1
  uint64_t lost_calls = 0, depth_overflow = 0, mismatched = 0;
};

thread_local ThreadState* t_state = nullptr;
pthread_mutex_t g_threads_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<ThreadState*> g_threads;

ThreadState* State() {
  if (ThreadState* s = t_state) return s;
  ThreadState* s = new ThreadState();
  s->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  pthread_mutex_lock(&g_threads_lock);
  g_threads.push_back(s);
  pthread_mutex_unlock(&g_threads_lock);
  t_state = s;
  return s;
}

void Reset(ThreadState* s, uint32_t generation) {
  s->generation = generation;
  s->depth = s->overflow = 0;
  s->nodes.clear();
  s->slots.clear();
  s->lost_calls = s->depth_overflow = s->mismatched = 0;
}

uint32_t Slot(uint32_t parent, uint32_t method, size_t mask) {
  uint64_t h = (static_cast<uint64_t>(parent) << 32 | method) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>((h >> 32) & mask);
}

// The node (index + 1) of `method` called from node `parent` (+1), made when
// new; 0 when the thread's tree is full.
uint32_t NodeOf(ThreadState* s, uint32_t parent, uint32_t method) {
  if (s->slots.empty()) s->slots.assign(1024, 0);
  size_t mask = s->slots.size() - 1;
  uint32_t h = Slot(parent, method, mask);
  while (uint32_t at = s->slots[h]) {
    const Node& n = s->nodes[at - 1];
    if (n.parent == parent && n.method == method) return at;
    h = (h + 1) & mask;
  }
  if (s->nodes.size() >= kMaxNodes) return 0;
  if ((s->nodes.size() + 1) * 2 > s->slots.size()) {
    s->slots.assign(s->slots.size() * 2, 0);
    mask = s->slots.size() - 1;
    for (uint32_t i = 0; i < s->nodes.size(); ++i) {
      uint32_t k = Slot(s->nodes[i].parent, s->nodes[i].method, mask);
      while (s->slots[k]) k = (k + 1) & mask;
      s->slots[k] = i + 1;
    }
    h = Slot(parent, method, mask);
    while (s->slots[h]) h = (h + 1) & mask;
  }
  Node n;
  n.parent = parent;
  n.method = method;
  s->nodes.push_back(n);
  s->slots[h] = static_cast<uint32_t>(s->nodes.size());
  return static_cast<uint32_t>(s->nodes.size());
}

// Marks the thread busy while it touches its state; false when no trace runs.
bool Begin(ThreadState* s) {
  s->busy.store(1, std::memory_order_seq_cst);
  if (!g_active.load(std::memory_order_seq_cst)) {
    s->busy.store(0, std::memory_order_release);
    return false;
  }
  const uint32_t generation = g_generation.load(std::memory_order_relaxed);
  if (s->generation != generation) Reset(s, generation);
  return true;
}

void Done(ThreadState* s) { s->busy.store(0, std::memory_order_release); }

void JNICALL Enter(JNIEnv*, jclass, jint id) {
  const uint32_t m = static_cast<uint32_t>(id);
  if (m >= kMaxMethods) return;
  ThreadState* s = State();
  if (!Begin(s)) return;
  if (s->depth == 0) {
    // Outside any root call only a root is counted.
    if (!g_is_root[m].load(std::memory_order_relaxed)) return Done(s);
    s->root_epoch = g_epoch.load(std::memory_order_acquire);
  } else if (s->depth >= kMaxDepth || s->overflow) {
    ++s->overflow;
    ++s->depth_overflow;
    return Done(s);
  }
  Frame& f = s->stack[s->depth];
  f.method = m;
  f.node = 0;
  const uint32_t parent = s->depth ? s->stack[s->depth - 1].node : 0;
  const bool counted = s->depth == 0 || (parent != 0 && g_since[m].load(std::memory_order_acquire) <= s->root_epoch);
  if (counted) {
    f.node = NodeOf(s, parent, m);
    if (f.node) {
      ++s->nodes[f.node - 1].calls;
      if (!g_reached[m].load(std::memory_order_relaxed)) g_reached[m].store(1, std::memory_order_relaxed);
    } else {
      ++s->lost_calls;
    }
  }
  ++s->depth;
  f.start = NowNs();
  Done(s);
}

void End(jint id, bool thrown) {
  const uint64_t now = NowNs();
  const uint32_t m = static_cast<uint32_t>(id);
  ThreadState* s = t_state;
  if (!s || m >= kMaxMethods || !Begin(s)) return;
  if (s->overflow) {
    --s->overflow;
    return Done(s);
  }
  if (s->depth == 0) return Done(s);  // entered outside a root, or before the trace
  // The frame of this method: the top one, unless ends were missed above it
  // (a probe that could not run: counted as unreturned).
  uint32_t at = s->depth;
  for (uint32_t k = 0; k < 8 && at > 0; ++k, --at) {
    if (s->stack[at - 1].method == m) break;
  }
  if (at == 0 || s->stack[at - 1].method != m) {
    ++s->mismatched;
    return Done(s);
  }
  while (s->depth > at) {
    const Frame& lost = s->stack[--s->depth];
    if (lost.node) ++s->nodes[lost.node - 1].unreturned;
  }
  const Frame& f = s->stack[--s->depth];
  if (f.node) {
    Node& n = s->nodes[f.node - 1];
    const uint64_t took = now - f.start;
    ++n.ended;
    if (thrown) ++n.thrown;
    n.incl += took;
    if (n.parent) s->nodes[n.parent - 1].child += took;
  }
  Done(s);
}

void JNICALL Exit(JNIEnv*, jclass, jint id) { End(id, false); }
void JNICALL Thrown(JNIEnv*, jclass, jint id) { End(id, true); }

// ---- the methods of the trace (the agent thread and the hook) ----

struct MethodInfo {
  std::string klass, name, descriptor;  // internal class name
  bool probed = false;
  bool expanded = false;  // its callees were added
  std::vector<CalledMethod> calls;
};

pthread_mutex_t g_plan_lock = PTHREAD_MUTEX_INITIALIZER;
struct Plan {
  bool instrumenting = false;
  std::string root_class, root_method;
  std::vector<MethodInfo> methods;                                    // by id
  std::unordered_map<std::string, uint32_t> ids;                      // "class name desc" -> id
  std::unordered_map<std::string, std::vector<uint32_t>> by_class;    // class -> ids to probe
  uint64_t skipped = 0;
  std::string last_skip;
};
Plan g_plan;

class PlanLock {
 public:
  PlanLock() { pthread_mutex_lock(&g_plan_lock); }
  ~PlanLock() { pthread_mutex_unlock(&g_plan_lock); }
};

// The id of a method (made when new); 0 when the trace has too many.
uint32_t IdOf(const std::string& klass, const std::string& name, const std::string& descriptor) {
  const std::string key = klass + ' ' + name + descriptor;
  auto it = g_plan.ids.find(key);
  if (it != g_plan.ids.end()) return it->second;
  if (g_plan.methods.size() >= std::min<size_t>(kMaxMethods, kMaxProbed + 1)) return 0;
  const uint32_t id = static_cast<uint32_t>(g_plan.methods.size());
  g_plan.methods.push_back({klass, name, descriptor});
  g_plan.ids.emplace(key, id);
  g_since[id].store(UINT32_MAX, std::memory_order_relaxed);
  g_reached[id].store(0, std::memory_order_relaxed);
  g_is_root[id].store(0, std::memory_order_relaxed);
  return id;
}

// Classes never probed: the JDK's (their time stays in their callers' own
// time, as a native trace leaves libc alone) and the probe class.
bool Skipped(std::string_view klass) {
  for (std::string_view p : {"java/", "javax/", "jdk/", "sun/", "com/sun/", "arcprof/trace/"}) {
    if (klass.substr(0, p.size()) == p) return true;
  }
  return klass.empty() || klass[0] == '[';
}

void JNICALL Hook(jvmtiEnv* jvmti, JNIEnv*, jclass being_redefined, jobject, const char* name, jobject,
                  jint length, const unsigned char* data, jint* new_length, unsigned char** new_data) {
  if (!name || !data || length <= 0) return;
  std::vector<MethodProbe> probes;
  const std::span<const uint8_t> bytes(data, static_cast<size_t>(length));
  {
    PlanLock lock;
    if (!g_plan.instrumenting) return;
    if (g_plan.root_class == name && !g_plan.by_class.count(name)) {
      // The root's class, loaded after the trace started: its methods of the root's name.
      std::vector<classfile::DeclaredMethod> declared;
      if (classfile::ListMethods(bytes, &declared)) {
        for (const auto& d : declared) {
          if (d.name != g_plan.root_method || !d.has_code) continue;
          if (const uint32_t id = IdOf(name, d.name, d.descriptor)) {
            g_is_root[id].store(1, std::memory_order_relaxed);
            g_plan.by_class[name].push_back(id);
          }
        }
      }
    }
    auto it = g_plan.by_class.find(name);
    if (it == g_plan.by_class.end()) return;
    for (uint32_t id : it->second) {
      const MethodInfo& m = g_plan.methods[id];
      probes.push_back({m.name, m.descriptor, static_cast<int32_t>(id)});
    }
  }
  classfile::ProbeResult r = classfile::AddProbes(bytes, probes);
  {
    PlanLock lock;
    for (auto& p : r.probed) {
      MethodInfo& m = g_plan.methods[static_cast<uint32_t>(p.id)];
      m.calls = std::move(p.calls);
      // A class loaded with its probes: every call of it is seen.
      if (!being_redefined) {
        m.probed = true;
        g_since[p.id].store(0, std::memory_order_release);
      }
    }
    if (!r.error.empty()) {
      g_plan.skipped += r.skipped.size();
      g_plan.last_skip = std::string(name) + ": " + r.error;
    }
  }
  if (r.bytes.empty()) return;
  unsigned char* out = nullptr;
  if (jvmti->Allocate(static_cast<jlong>(r.bytes.size()), &out) != JVMTI_ERROR_NONE || !out) return;
  memcpy(out, r.bytes.data(), r.bytes.size());
  *new_length = static_cast<jint>(r.bytes.size());
  *new_data = out;
}

// ---- the agent thread ----

struct Trace {
  jvmtiEnv* jvmti = nullptr;
  jclass probe_class = nullptr;  // global ref
  int fd = -1;
  std::string in;  // bytes read, not yet a line
  bool running = false;
  bool peer_gone = false;
};
Trace g_trace;
pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;

void Send(const std::string& line) {
  if (g_trace.peer_gone) return;
  std::string out = line + "\n";
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = send(g_trace.fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      g_trace.peer_gone = true;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

// The next line from arcprof within timeout_ms; false on timeout, EOF or a
// line too long (the peer is then gone).
bool ReadLine(std::string* line, int timeout_ms) {
  const uint64_t until = NowNs() + static_cast<uint64_t>(timeout_ms) * 1000000ull;
  while (true) {
    if (size_t nl = g_trace.in.find('\n'); nl != std::string::npos) {
      *line = g_trace.in.substr(0, nl);
      g_trace.in.erase(0, nl + 1);
      return true;
    }
    if (g_trace.in.size() > kMaxLine || g_trace.peer_gone) {
      g_trace.peer_gone = true;
      return false;
    }
    const uint64_t now = NowNs();
    if (now >= until) return false;
    pollfd p{g_trace.fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>((until - now) / 1000000ull) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[1024];
    const ssize_t n = recv(g_trace.fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      g_trace.peer_gone = true;
      return false;
    }
    g_trace.in.append(buf, static_cast<size_t>(n));
  }
}

std::string Dotted(const std::string& klass) {
  std::string out = klass;
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

// A loaded class, with what the resolution of callees needs of it.
struct Loaded {
  jclass klass = nullptr;  // local ref of the agent thread
  std::string name;        // internal
  bool methods_read = false;
  std::vector<std::pair<std::string, std::string>> methods;  // name, descriptor (with code)
};

struct LoadedClasses {
  std::vector<Loaded> all;
  std::unordered_map<std::string, std::vector<size_t>> by_name;
  JNIEnv* jni = nullptr;

  void Read(jvmtiEnv* jvmti, JNIEnv* env) {
    jni = env;
    jint count = 0;
    jclass* classes = nullptr;
    if (jvmti->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
    for (jint i = 0; i < count; ++i) {
      char* sig = nullptr;
      jint status = 0;
      jboolean modifiable = false;
      bool keep = false;
      std::string name;
      if (jvmti->GetClassSignature(classes[i], &sig, nullptr) == JVMTI_ERROR_NONE && sig) {
        const size_t n = strlen(sig);
        if (n > 2 && sig[0] == 'L' && sig[n - 1] == ';') name.assign(sig + 1, n - 2);
      }
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(sig));
      if (!name.empty() && !Skipped(name) && name.find('.') == std::string::npos &&
          jvmti->GetClassStatus(classes[i], &status) == JVMTI_ERROR_NONE && (status & JVMTI_CLASS_STATUS_PREPARED) &&
          jvmti->IsModifiableClass(classes[i], &modifiable) == JVMTI_ERROR_NONE && modifiable) {
        keep = true;
      }
      if (keep) {
        by_name[name].push_back(all.size());
        all.push_back({classes[i], name});
      } else {
        env->DeleteLocalRef(classes[i]);
      }
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(classes));
  }
  void Release() {
    for (Loaded& l : all) jni->DeleteLocalRef(l.klass);
    all.clear();
    by_name.clear();
  }
  const std::vector<std::pair<std::string, std::string>>& Methods(jvmtiEnv* jvmti, Loaded& l) {
    if (l.methods_read) return l.methods;
    l.methods_read = true;
    jint count = 0;
    jmethodID* methods = nullptr;
    if (jvmti->GetClassMethods(l.klass, &count, &methods) != JVMTI_ERROR_NONE) return l.methods;
    for (jint i = 0; i < count; ++i) {
      char* name = nullptr;
      char* sig = nullptr;
      jint modifiers = 0;
      if (jvmti->GetMethodName(methods[i], &name, &sig, nullptr) == JVMTI_ERROR_NONE && name && sig &&
          jvmti->GetMethodModifiers(methods[i], &modifiers) == JVMTI_ERROR_NONE && !(modifiers & 0x0500) &&
          name[0] != '<') {
        l.methods.emplace_back(name, sig);
      }
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(name));
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(sig));
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(methods));
    return l.methods;
  }
  bool Declares(jvmtiEnv* jvmti, Loaded& l, const std::string& name, const std::string& descriptor) {
    for (const auto& [n, d] : Methods(jvmti, l)) {
      if (n == name && d == descriptor) return true;
    }
    return false;
  }
};

// Probes the methods `ids` (planned under the lock): retransforms each loaded
// class that declares one, one class at a time (a class the JVM refuses
// keeps its code); then a new epoch, from which they count.
void ProbeMethods(jvmtiEnv* jvmti, LoadedClasses& loaded, const std::vector<uint32_t>& ids) {
  std::unordered_set<std::string> classes;
  {
    PlanLock lock;
    for (uint32_t id : ids) {
      const std::string& klass = g_plan.methods[id].klass;
      auto& planned = g_plan.by_class[klass];
      if (std::find(planned.begin(), planned.end(), id) == planned.end()) planned.push_back(id);
      classes.insert(klass);
    }
  }
  std::vector<uint32_t> done;
  for (const std::string& klass : classes) {
    auto it = loaded.by_name.find(klass);
    if (it == loaded.by_name.end()) continue;  // probed when it loads (the hook)
    for (size_t i : it->second) {
      jclass c = loaded.all[i].klass;
      const jvmtiError err = jvmti->RetransformClasses(1, &c);
      PlanLock lock;
      if (err != JVMTI_ERROR_NONE) {
        ++g_plan.skipped;
        g_plan.last_skip = klass + ": the JVM refused the probed class (JVMTI error " + std::to_string(err) + ")";
        continue;
      }
      for (uint32_t id : g_plan.by_class[klass]) {
        if (!g_plan.methods[id].probed && g_since[id].load() == UINT32_MAX) done.push_back(id);
      }
    }
  }
  const uint32_t epoch = g_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  PlanLock lock;
  for (uint32_t id : done) {
    g_plan.methods[id].probed = true;
    g_since[id].store(epoch, std::memory_order_release);
  }
}

// The methods a reached method may call, as ids to probe: the named method
// (or the superclass's it inherits), and for a virtual or interface call its
// overrides in every loaded class below the named one.
std::vector<uint32_t> Callees(jvmtiEnv* jvmti, LoadedClasses& loaded, const std::vector<CalledMethod>& calls) {
  std::vector<uint32_t> out;
  auto add = [&](const std::string& klass, const std::string& name, const std::string& descriptor) {
    PlanLock lock;
    const uint32_t id = IdOf(klass, name, descriptor);
    if (id && !g_plan.methods[id].probed && g_since[id].load() == UINT32_MAX &&
        std::find(out.begin(), out.end(), id) == out.end()) {
      out.push_back(id);
    }
  };
  for (const CalledMethod& c : calls) {
    if (Skipped(c.owner)) continue;
    auto it = loaded.by_name.find(c.owner);
    if (it == loaded.by_name.end()) {
      add(c.owner, c.name, c.descriptor);  // probed when it loads
      continue;
    }
    for (size_t i : it->second) {
      // Up to the class that declares it.
      jclass owner = loaded.all[i].klass;
      jclass k = static_cast<jclass>(loaded.jni->NewLocalRef(owner));
      for (int up = 0; k && up < 32; ++up) {
        char* sig = nullptr;
        std::string name;
        if (jvmti->GetClassSignature(k, &sig, nullptr) == JVMTI_ERROR_NONE && sig && strlen(sig) > 2) {
          name.assign(sig + 1, strlen(sig) - 2);
        }
        jvmti->Deallocate(reinterpret_cast<unsigned char*>(sig));
        auto found = loaded.by_name.find(name);
        if (name.empty() || Skipped(name) || found == loaded.by_name.end()) break;
        if (loaded.Declares(jvmti, loaded.all[found->second[0]], c.name, c.descriptor)) {
          add(name, c.name, c.descriptor);
          break;
        }
        jclass super = loaded.jni->GetSuperclass(k);
        loaded.jni->DeleteLocalRef(k);
        k = super;
      }
      if (k) loaded.jni->DeleteLocalRef(k);
      if (c.opcode != 0xb6 && c.opcode != 0xb9) continue;
      for (Loaded& l : loaded.all) {
        if (l.klass == owner || !loaded.jni->IsAssignableFrom(l.klass, owner)) continue;
        if (loaded.Declares(jvmti, l, c.name, c.descriptor)) add(l.name, c.name, c.descriptor);
      }
    }
  }
  return out;
}

// Adds the callees of every method reached since the last call.
void Expand(jvmtiEnv* jvmti, JNIEnv* jni) {
  std::vector<CalledMethod> calls;
  {
    PlanLock lock;
    for (uint32_t id = 1; id < g_plan.methods.size(); ++id) {
      MethodInfo& m = g_plan.methods[id];
      if (m.expanded || !g_reached[id].load(std::memory_order_relaxed)) continue;
      m.expanded = true;
      for (const CalledMethod& c : m.calls) {
        if (std::find(calls.begin(), calls.end(), c) == calls.end()) calls.push_back(c);
      }
    }
  }
  if (calls.empty()) return;
  LoadedClasses loaded;
  loaded.Read(jvmti, jni);
  const std::vector<uint32_t> ids = Callees(jvmti, loaded, calls);
  if (!ids.empty()) ProbeMethods(jvmti, loaded, ids);
  loaded.Release();
}

// Times the probes on Probe.calibTarget (probed, id 0): the cost of a
// probed call, the part the probes measure inside it and the rest.
void Calibrate(JNIEnv* jni, double* in_ns, double* out_ns) {
  *in_ns = *out_ns = 0;
  jmethodID calibrate = jni->GetStaticMethodID(g_trace.probe_class, "calibrate", "(IZ)J");
  if (!calibrate) {
    jni->ExceptionClear();
    return;
  }
  constexpr int kCalls = 20000;
  g_is_root[kCalibrationId].store(1);
  g_since[kCalibrationId].store(0);
  g_active.store(true);
  ThreadState* s = State();
  double bare = 1e18, probed = 1e18, inside = 1e18;
  for (int round = 0; round < 12; ++round) {
    const jlong t_bare = jni->CallStaticLongMethod(g_trace.probe_class, calibrate, kCalls, JNI_FALSE);
    uint64_t incl0 = 0, ended0 = 0;
    for (const Node& n : s->nodes) incl0 += n.incl, ended0 += n.ended;
    const jlong t_probed = jni->CallStaticLongMethod(g_trace.probe_class, calibrate, kCalls, JNI_TRUE);
    uint64_t incl1 = 0, ended1 = 0;
    for (const Node& n : s->nodes) incl1 += n.incl, ended1 += n.ended;
    if (jni->ExceptionCheck()) {
      jni->ExceptionClear();
      break;
    }
    if (round < 4) continue;  // the JIT compiles the loop meanwhile
    bare = std::min(bare, static_cast<double>(t_bare) / kCalls);
    probed = std::min(probed, static_cast<double>(t_probed) / kCalls);
    if (ended1 > ended0) inside = std::min(inside, static_cast<double>(incl1 - incl0) / static_cast<double>(ended1 - ended0));
  }
  g_active.store(false);
  g_is_root[kCalibrationId].store(0);
  Reset(s, 0);
  if (probed >= 1e18) return;
  const double total = std::max(0.0, probed - bare);
  *in_ns = std::min(total, inside >= 1e18 ? 0.0 : std::max(0.0, inside));
  *out_ns = total - *in_ns;
}

// Defines arcprof/trace/Probe in the bootstrap loader (once per JVM; another
// copy of the agent may have defined it already) and binds its natives here.
bool DefineProbeClass(JNIEnv* jni) {
  if (g_trace.probe_class) return true;
  const MethodProbe calib{"calibTarget", "()V", static_cast<int32_t>(kCalibrationId)};
  classfile::ProbeResult r = classfile::AddProbes(
      std::span<const uint8_t>(kProbeClassBytes, kProbeClassBytes_size), std::span<const MethodProbe>(&calib, 1));
  if (r.bytes.empty()) {
    Log("cannot probe the calibration method: %s", r.error.c_str());
    return false;
  }
  jclass c = jni->DefineClass("arcprof/trace/Probe", nullptr, reinterpret_cast<const jbyte*>(r.bytes.data()),
                              static_cast<jsize>(r.bytes.size()));
  if (!c) {
    jni->ExceptionClear();
    c = jni->FindClass("arcprof/trace/Probe");  // defined by another copy of the agent
    if (!c) {
      jni->ExceptionClear();
      Log("cannot define the probe class in the bootstrap loader");
      return false;
    }
  }
  JNINativeMethod natives[] = {
      {const_cast<char*>("enter"), const_cast<char*>("(I)V"), reinterpret_cast<void*>(Enter)},
      {const_cast<char*>("exit"), const_cast<char*>("(I)V"), reinterpret_cast<void*>(Exit)},
      {const_cast<char*>("thrown"), const_cast<char*>("(I)V"), reinterpret_cast<void*>(Thrown)},
  };
  if (jni->RegisterNatives(c, natives, 3) != JNI_OK) {
    jni->ExceptionClear();
    Log("cannot bind the probe class's natives");
    return false;
  }
  g_trace.probe_class = static_cast<jclass>(jni->NewGlobalRef(c));
  jni->DeleteLocalRef(c);
  return g_trace.probe_class != nullptr;
}

// Probes the root's methods in its loaded classes; the count probed.
// *loaded_class: whether its class is loaded.
size_t ProbeRoot(jvmtiEnv* jvmti, JNIEnv* jni, bool* loaded_class) {
  LoadedClasses loaded;
  loaded.Read(jvmti, jni);
  std::vector<uint32_t> ids;
  auto it = loaded.by_name.find(g_plan.root_class);
  *loaded_class = it != loaded.by_name.end();
  if (it != loaded.by_name.end()) {
    for (size_t i : it->second) {
      for (const auto& [name, descriptor] : loaded.Methods(jvmti, loaded.all[i])) {
        if (name != g_plan.root_method) continue;
        PlanLock lock;
        if (const uint32_t id = IdOf(g_plan.root_class, name, descriptor)) {
          g_is_root[id].store(1);
          if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        }
      }
    }
  }
  if (!ids.empty()) ProbeMethods(jvmti, loaded, ids);
  loaded.Release();
  PlanLock lock;
  size_t probed = 0;
  for (uint32_t id : ids) probed += g_plan.methods[id].probed;
  return probed;
}

// Every probe out: the classes retransformed without them.
void RemoveProbes(jvmtiEnv* jvmti, JNIEnv* jni) {
  std::unordered_set<std::string> classes;
  {
    PlanLock lock;
    g_plan.instrumenting = false;
    for (const auto& [klass, ids] : g_plan.by_class) classes.insert(klass);
  }
  LoadedClasses loaded;
  loaded.Read(jvmti, jni);
  for (const std::string& klass : classes) {
    auto it = loaded.by_name.find(klass);
    if (it == loaded.by_name.end()) continue;
    for (size_t i : it->second) {
      jclass c = loaded.all[i].klass;
      if (jvmtiError err = jvmti->RetransformClasses(1, &c); err != JVMTI_ERROR_NONE) {
        Log("cannot take the probes out of %s (JVMTI error %d)", klass.c_str(), static_cast<int>(err));
      }
    }
  }
  loaded.Release();
  jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
}

// Sends the call trees of every thread and the counters, then forgets them.
void SendResults() {
  std::vector<ThreadState*> threads;
  pthread_mutex_lock(&g_threads_lock);
  threads = g_threads;
  pthread_mutex_unlock(&g_threads_lock);
  const uint32_t generation = g_generation.load();
  uint64_t lost = 0, overflow = 0, mismatched = 0, busy = 0;
  std::unordered_set<uint32_t> seen;
  char line[256];
  for (ThreadState* s : threads) {
    // A thread inside a probe finishes it within microseconds; one that
    // does not within a second (stopped) is left out and counted.
    const uint64_t until = NowNs() + 1000000000ull;
    while (s->busy.load(std::memory_order_seq_cst) && NowNs() < until) sched_yield();
    if (s->busy.load(std::memory_order_seq_cst)) {
      ++busy;
      continue;
    }
    if (s->generation != generation) continue;
    // Calls still under way are unreturned.
    for (uint32_t d = 0; d < s->depth; ++d) {
      if (s->stack[d].node) ++s->nodes[s->stack[d].node - 1].unreturned;
    }
    for (uint32_t i = 0; i < s->nodes.size(); ++i) {
      const Node& n = s->nodes[i];
      snprintf(line, sizeof(line), "n %u %u %u %u %llu %llu %llu %llu %llu %llu", s->tid, i, n.parent, n.method,
               static_cast<unsigned long long>(n.calls), static_cast<unsigned long long>(n.ended),
               static_cast<unsigned long long>(n.thrown), static_cast<unsigned long long>(n.incl),
               static_cast<unsigned long long>(n.incl > n.child ? n.incl - n.child : 0),
               static_cast<unsigned long long>(n.unreturned));
      Send(line);
      seen.insert(n.method);
    }
    lost += s->lost_calls;
    overflow += s->depth_overflow;
    mismatched += s->mismatched;
    Reset(s, 0);
  }
  {
    PlanLock lock;
    for (uint32_t id : seen) {
      if (id >= g_plan.methods.size()) continue;
      const MethodInfo& m = g_plan.methods[id];
      Send("m " + std::to_string(id) + " " + Dotted(m.klass) + "." + m.name);
    }
    size_t probed = 0;
    for (const MethodInfo& m : g_plan.methods) probed += m.probed;
    Send("c methods_probed " + std::to_string(probed));
    Send("c methods_skipped " + std::to_string(g_plan.skipped));
    if (!g_plan.last_skip.empty()) Send("c last_skip 0 " + g_plan.last_skip.substr(0, 300));
  }
  Send("c lost_calls " + std::to_string(lost));
  Send("c depth_overflow " + std::to_string(overflow));
  Send("c mismatched_ends " + std::to_string(mismatched));
  Send("c threads_busy " + std::to_string(busy));
  // Dead threads' states go; the others are reused by the next trace.
  pthread_mutex_lock(&g_threads_lock);
  std::vector<ThreadState*> keep;
  for (ThreadState* s : g_threads) {
    if (s->dead.load()) delete s;
    else keep.push_back(s);
  }
  g_threads.swap(keep);
  pthread_mutex_unlock(&g_threads_lock);
}

void JNICALL OnThreadEnd(jvmtiEnv*, JNIEnv*, jthread) {
  if (ThreadState* s = t_state) {
    // Kept for the results; freed after them.
    s->dead.store(true);
    t_state = nullptr;
  }
}

void Finish(jvmtiEnv* jvmti, JNIEnv* jni) {
  g_active.store(false, std::memory_order_seq_cst);
  RemoveProbes(jvmti, jni);
  SendResults();
  Send("end");
  {
    PlanLock lock;
    g_plan = Plan();
  }
  for (uint32_t i = 0; i < kMaxMethods; ++i) g_is_root[i].store(0, std::memory_order_relaxed);
  close(g_trace.fd);
  g_trace.fd = -1;
  g_trace.in.clear();
  pthread_mutex_lock(&g_start_lock);
  g_trace.running = false;
  pthread_mutex_unlock(&g_start_lock);
}

void JNICALL TraceMain(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  Send("hello " + std::to_string(getpid()));
  std::string line;
  if (!ReadLine(&line, 10000) || line.rfind("root ", 0) != 0) {
    Log("no root from arcprof");
    Finish(jvmti, jni);
    return;
  }
  const size_t space = line.find(' ', 5);
  if (space == std::string::npos || space == 5 || space + 1 >= line.size()) {
    Send("error bad root line");
    Finish(jvmti, jni);
    return;
  }
  {
    PlanLock lock;
    g_plan = Plan();
    g_plan.root_class = line.substr(5, space - 5);
    g_plan.root_method = line.substr(space + 1);
    g_plan.methods.push_back({"arcprof/trace/Probe", "calibTarget", "()V"});  // id 0
  }
  if (!DefineProbeClass(jni)) {
    Send("error cannot define the probe class in this JVM");
    Finish(jvmti, jni);
    return;
  }
  double in_ns = 0, out_ns = 0;
  Calibrate(jni, &in_ns, &out_ns);
  char calib[96];
  snprintf(calib, sizeof(calib), "calib %.2f %.2f", in_ns, out_ns);
  Send(calib);
  g_generation.fetch_add(1);
  g_epoch.store(1);
  {
    PlanLock lock;
    g_plan.instrumenting = true;
  }
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
  g_active.store(true, std::memory_order_seq_cst);
  bool loaded_class = false;
  const size_t roots = ProbeRoot(jvmti, jni, &loaded_class);
  if (roots == 0 && loaded_class) {
    std::string why;
    {
      PlanLock lock;
      why = g_plan.by_class.count(g_plan.root_class)
                ? "no method " + g_plan.root_method + " of " + Dotted(g_plan.root_class) + " could be probed" +
                      (g_plan.last_skip.empty() ? "" : ": " + g_plan.last_skip)
                : "class " + Dotted(g_plan.root_class) + " has no method " + g_plan.root_method;
    }
    Send("error " + why);
    Finish(jvmti, jni);
    return;
  }
  Send("started " + std::to_string(roots));
  while (true) {
    if (ReadLine(&line, 50)) {
      if (line == "stop") break;
      continue;
    }
    if (g_trace.peer_gone) break;  // arcprof is gone: take everything out
    Expand(jvmti, jni);
  }
  Finish(jvmti, jni);
}

bool StartThread(jvmtiEnv* jvmti, JNIEnv* jni) {
  bool started = false;
  if (jclass thread_class = jni->FindClass("java/lang/Thread")) {
    jmethodID init = jni->GetMethodID(thread_class, "<init>", "(Ljava/lang/String;)V");
    jstring name = jni->NewStringUTF("arcprof trace");
    jobject thread = init && name ? jni->NewObject(thread_class, init, name) : nullptr;
    started = thread && jvmti->RunAgentThread(thread, TraceMain, nullptr, JVMTI_THREAD_NORM_PRIORITY) == JVMTI_ERROR_NONE;
  }
  if (jni->ExceptionCheck()) jni->ExceptionClear();
  return started;
}

}  // namespace

jint StartTrace(JavaVM* vm, const char* options) {
  const std::string opts = options ? options : "";
  if (opts.rfind("trace=", 0) != 0 || opts.size() <= 6 || opts.size() - 6 >= sizeof(sockaddr_un::sun_path)) {
    Log("bad options");
    return JNI_ERR;
  }
  JNIEnv* jni = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) != JNI_OK || !jni) return JNI_ERR;
  pthread_mutex_lock(&g_start_lock);
  if (g_trace.running) {
    pthread_mutex_unlock(&g_start_lock);
    Log("a trace already runs in this JVM");
    return JNI_ERR;
  }
  if (!g_trace.jvmti) {
    // An environment of its own: its hook and capabilities come and go
    // with traces, apart from the naming agent's.
    jvmtiEnv* jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_1_2) != JNI_OK || !jvmti) {
      pthread_mutex_unlock(&g_start_lock);
      return JNI_ERR;
    }
    jvmtiCapabilities caps{};
    caps.can_retransform_classes = 1;
    jvmtiEventCallbacks callbacks{};
    callbacks.ClassFileLoadHook = Hook;
    callbacks.ThreadEnd = OnThreadEnd;
    if (jvmti->AddCapabilities(&caps) != JVMTI_ERROR_NONE ||
        jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks)) != JVMTI_ERROR_NONE ||
        jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_THREAD_END, nullptr) != JVMTI_ERROR_NONE) {
      Log("this JVM cannot retransform classes");
      jvmti->DisposeEnvironment();
      pthread_mutex_unlock(&g_start_lock);
      return JNI_ERR;
    }
    g_trace.jvmti = jvmti;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, opts.c_str() + 6, opts.size() - 6);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Log("cannot connect to arcprof: %s", strerror(errno));
    if (fd >= 0) close(fd);
    pthread_mutex_unlock(&g_start_lock);
    return JNI_ERR;
  }
  g_trace.fd = fd;
  g_trace.peer_gone = false;
  g_trace.in.clear();
  g_trace.running = true;
  pthread_mutex_unlock(&g_start_lock);
  if (!StartThread(g_trace.jvmti, jni)) {
    Log("cannot start the trace thread");
    close(fd);
    pthread_mutex_lock(&g_start_lock);
    g_trace.fd = -1;
    g_trace.running = false;
    pthread_mutex_unlock(&g_start_lock);
    return JNI_ERR;
  }
  return JNI_OK;
}

}  // namespace arcprof::jtrace
