#include "runtimes/java/java_attach.h"
#include "common/clock.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <spdlog/fmt/fmt.h>
#include <thread>

#include "common/scoped_fd.h"
#include "spaces/proc_parse.h"

namespace arcprof {
namespace {

std::string ReadText(const std::string& path, size_t cap = 8u << 20) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  if (!fd.valid()) return out;
  char buf[16384];
  ssize_t n;
  while ((n = read(fd.get(), buf, sizeof(buf))) > 0 && out.size() < cap) out.append(buf, static_cast<size_t>(n));
  return out;
}

// "SigCgt:\t0000000000004a0c" -> whether signal `sig` has a handler.
bool CatchesSignal(std::string_view status, int sig) {
  const size_t at = status.find("SigCgt:");
  if (at == std::string_view::npos) return false;
  const uint64_t mask = std::strtoull(std::string(status.substr(at + 7, 32)).c_str(), nullptr, 16);
  return (mask >> (sig - 1)) & 1;
}

uint32_t StatusField(std::string_view status, std::string_view key, int index) {
  const size_t at = status.find(key);
  if (at == std::string_view::npos) return 0;
  std::string rest(status.substr(at + key.size(), 64));
  const char* p = rest.c_str();
  char* end = nullptr;
  unsigned long v = 0;
  for (int i = 0; i <= index; ++i) {
    v = std::strtoul(p, &end, 10);
    if (end == p) return 0;
    p = end;
  }
  return static_cast<uint32_t>(v);
}

// One JVM mapping counts only when executable: a profiler (another arcprof)
// maps libjvm.so and our agent read-only to read their symbols.
bool MapsExecutable(const procfs::MapsEntry& e) { return (e.prot & procfs::kProtExec) != 0; }

struct Exchange {
  // Inputs, prepared before the helper thread starts.
  uint32_t pid = 0, ns_pid = 0, uid = 0, gid = 0;
  std::string root;  // /proc/PID/root
  std::string request;  // the protocol bytes
  uint64_t deadline_ns = 0;
  // Outputs.
  bool ok = false;
  std::string answer;
  std::string error;
};

// Seconds after which another attach's trigger file is taken as left behind
// (an attach signals right after creating it; a busy JVM may take a few
// seconds to bring its listener up).
constexpr time_t kStaleTriggerS = 5;

void Fail(Exchange& x, std::string message) {
  x.ok = false;
  x.error = std::move(message);
}

// Runs on its own thread: the raw syscalls change this thread's credentials
// only (glibc's setuid would change every thread of the recorder).
void RunExchange(Exchange& x) {
  if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, x.gid, x.gid, x.gid) != 0 ||
      syscall(SYS_setresuid, x.uid, x.uid, x.uid) != 0) {
    return Fail(x, fmt::format("cannot take the JVM's uid {} / gid {}: {}", x.uid, x.gid, std::strerror(errno)));
  }
  const std::string socket_path = fmt::format("{}/tmp/.java_pid{}", x.root, x.ns_pid);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return Fail(x, "attach socket path too long: " + socket_path);
  }
  memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ScopedFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Fail(x, fmt::format("cannot create a socket: {}", std::strerror(errno)));
  // The trigger file this attach created (somebody else's is left alone):
  // removed once connected, or however the attach ends.
  struct Trigger {
    std::string path;
    void Remove() {
      if (!path.empty()) unlink(path.c_str());
      path.clear();
    }
    ~Trigger() { Remove(); }
  } trigger;
  bool asked = false;        // the JVM was asked to start its attach listener
  std::string others_trigger;  // the trigger of another attach we wait on
  bool socket_seen = false;  // ...and its socket file was there (but refused)
  // One wait, backing off from 5 to 200 ms until the deadline, for both ways
  // of not being able to connect yet: no socket file (the listener is not
  // started), or a socket file nobody listens on (the JVM binds it before it
  // calls listen(), or it is an earlier process's with the same pid: a fresh
  // trigger makes this JVM bind the name anew).
  for (int delay_ms = 5;; delay_ms = std::min(delay_ms * 2, 200)) {
    struct stat st {};
    if (lstat(socket_path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) return Fail(x, fmt::format("{} is not a socket: not attaching", socket_path));
      // Anybody can create a socket by that name in /tmp before the JVM
      // does: only one owned by the JVM's user is its attach listener.
      if (st.st_uid != x.uid) {
        return Fail(x, fmt::format("{} is owned by uid {}, not by the JVM's uid {}: not trusting it", socket_path,
                                   st.st_uid, x.uid));
      }
      socket_seen = true;
      if (connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
      if (errno != ECONNREFUSED) {
        return Fail(x, fmt::format("cannot connect to {}: {}", socket_path, std::strerror(errno)));
      }
    }
    // Somebody else's trigger (another arcprof, jcmd) is an attach in
    // progress that has signalled the JVM: once its listener runs, one more
    // SIGQUIT would print a thread dump on the JVM's stdout, so its socket is
    // waited for. Not forever: a trigger older than kStaleTriggerS was left by
    // an attacher that died before signalling, and one that goes away while
    // we still cannot connect was not answered.
    auto stale = [](const std::string& path) {
      struct stat trigger_st {};
      return lstat(path.c_str(), &trigger_st) == 0 && time(nullptr) - trigger_st.st_mtime >= kStaleTriggerS;
    };
    if (!others_trigger.empty()) {
      if (access(others_trigger.c_str(), F_OK) != 0) {
        asked = false;  // ask ourselves, at once
        others_trigger.clear();
        continue;
      }
      if (stale(others_trigger)) {
        others_trigger.clear();
        if (kill(static_cast<pid_t>(x.pid), SIGQUIT) != 0) {
          return Fail(x, fmt::format("cannot signal the JVM: {}", std::strerror(errno)));
        }
      }
    } else if (!asked) {
      // Ask the JVM to start its attach listener: a trigger file it checks
      // for when it gets SIGQUIT (in its cwd or /tmp; /tmp is where we can
      // write). Without the file a SIGQUIT would only make it print its threads.
      const std::string path = fmt::format("{}/tmp/.attach_pid{}", x.root, x.ns_pid);
      ScopedFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (fd.valid()) {
        trigger.path = path;
      } else if (errno != EEXIST) {
        return Fail(x, fmt::format("cannot create {}: {}", path, std::strerror(errno)));
      }
      if (!fd.valid() && !stale(path)) {
        others_trigger = path;
      } else if (kill(static_cast<pid_t>(x.pid), SIGQUIT) != 0) {
        return Fail(x, fmt::format("cannot signal the JVM: {}", std::strerror(errno)));
      }
      asked = true;
    }
    if (MonotonicNs() > x.deadline_ns) {
      if (socket_seen) return Fail(x, fmt::format("cannot connect to {}: {}", socket_path, std::strerror(ECONNREFUSED)));
      return Fail(x, "the JVM did not open its attach socket in time (started with "
                     "-XX:+DisableAttachMechanism, or too busy?)");
    }
    usleep(static_cast<useconds_t>(delay_ms) * 1000);
  }
  trigger.Remove();
  // The listener must be the JVM itself (the kernel gives its pid as seen
  // from our namespace).
  ucred peer{};
  socklen_t peer_len = sizeof(peer);
  if (getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0) {
    return Fail(x, fmt::format("cannot check who listens on {}: {}", socket_path, std::strerror(errno)));
  }
  if (peer.uid != x.uid || static_cast<uint32_t>(peer.pid) != x.pid) {
    return Fail(x, fmt::format("{} is served by pid {} uid {}, not by the JVM (pid {} uid {}): not trusting it",
                               socket_path, peer.pid, peer.uid, x.pid, x.uid));
  }
  size_t sent = 0;
  while (sent < x.request.size()) {
    ssize_t n = send(sock.get(), x.request.data() + sent, x.request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Fail(x, fmt::format("cannot send the attach request: {}", std::strerror(errno)));
    sent += static_cast<size_t>(n);
  }
  // The JVM answers and closes the connection.
  std::string answer;
  for (;;) {
    const uint64_t now = MonotonicNs();
    if (now > x.deadline_ns) return Fail(x, "the JVM did not answer the attach request in time");
    pollfd p{sock.get(), POLLIN, 0};
    const int wait_ms = static_cast<int>(std::min<uint64_t>((x.deadline_ns - now) / 1000000 + 1, 1000));
    if (poll(&p, 1, wait_ms) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(sock.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() >= kMaxAttachReply) break;  // a JVM's answer to `load` is a few bytes
  }
  if (answer.size() > kMaxAttachReply) answer.resize(kMaxAttachReply);
  x.answer = SanitizeAttachText(answer);
  // "<status>\n<text>": status 0 means the command ran; for `load` the text
  // is "return code: N" (JDK 9+) or just N (JDK 8), N being Agent_OnAttach's.
  const size_t nl = answer.find('\n');
  const std::string status = answer.substr(0, nl);
  std::string text = nl == std::string::npos ? "" : answer.substr(nl + 1);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (status != "0") {
    return Fail(x, text.empty() ? fmt::format("the JVM refused the attach request (status {})",
                                              SanitizeAttachText(status))
                                : fmt::format("the JVM refused: {}", SanitizeAttachText(text)));
  }
  std::string code = text.rfind("return code: ", 0) == 0 ? text.substr(13) : text;
  if (code.find('\n') != std::string::npos) code = code.substr(0, code.find('\n'));
  if (code == "-2") return Fail(x, std::string(kJvmNotLiveYet) + " (not in its live phase); try again");
  if (!code.empty() && code != "0") {
    const bool numeric = code.find_first_not_of("-0123456789") == std::string::npos;
    return Fail(x, numeric ? fmt::format("the agent failed to start in the JVM (Agent_OnAttach returned {}; "
                                         "see the JVM's stderr)", SanitizeAttachText(code))
                           : fmt::format("the JVM refused: {}", SanitizeAttachText(text)));
  }
  x.ok = true;
}

}  // namespace

std::string SanitizeAttachText(std::string_view text, size_t max_chars) {
  std::string out;
  bool cut = false;
  for (unsigned char c : text) {
    if (out.size() >= max_chars) {
      cut = true;
      break;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c >= 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (cut) out += "...";
  return out;
}

Result<void> CheckAgentFile(const std::string& path) {
  if (path.empty() || path.front() != '/') return MakeError("the agent path must be absolute: " + path);
  // Every component from / down, as the JVM will resolve it: a file anybody
  // but root could replace would run as the JVM's user.
  char real[PATH_MAX];
  if (!realpath(path.c_str(), real)) {
    return MakeError(fmt::format("cannot read the agent {}: {}; build it with `make build`", path,
                                 std::strerror(errno)));
  }
  std::string resolved(real);
  std::string at = resolved;
  bool file = true;
  while (true) {
    struct stat st {};
    if (lstat(at.c_str(), &st) != 0) {
      return MakeError(fmt::format("cannot check the agent path {}: {}", at, std::strerror(errno)));
    }
    if (file && !S_ISREG(st.st_mode)) return MakeError(fmt::format("the agent {} is not a regular file", resolved));
    if (st.st_uid != 0) {
      return MakeError(fmt::format("not loading the agent {}: {} is owned by uid {}, not root", resolved, at,
                                   st.st_uid));
    }
    // A sticky folder (like /tmp) lets nobody else replace root's entry.
    const bool sticky_dir = !file && (st.st_mode & S_ISVTX);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_dir) {
      return MakeError(fmt::format("not loading the agent {}: {} is writable by {}", resolved, at,
                                   (st.st_mode & S_IWOTH) ? "everyone" : "its group"));
    }
    if (at == "/") break;
    const size_t slash = at.rfind('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
    file = false;
  }
  return {};
}

void NoteJvmMapping(std::string_view path, JvmMappings* maps) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name == "libjvm.so") maps->hotspot = true;
  else if (name.starts_with("libj9vm")) maps->other_jvm = true;
  else if (name == "libarcprof_jvmti.so") maps->agent_loaded = true;
}

Result<JvmProcess> InspectJvmWith(uint32_t pid, const JvmMappings& maps, const std::string& proc_root) {
  // Not a JVM: nothing else to read.
  if (!maps.hotspot && !maps.other_jvm) return MakeError(fmt::format("process {} is not a JVM (no libjvm.so mapped)", pid));
  const std::string status_text = ReadText(fmt::format("{}/{}/status", proc_root, pid));
  auto status = procfs::ParseStatus(status_text);
  if (!status.ok()) return MakeError(fmt::format("process {} is not running", pid));
  JvmProcess jvm;
  jvm.pid = pid;
  jvm.ns_pid = status->nspid.empty() ? pid : status->nspid.back();
  jvm.uid = status->euid;
  jvm.gid = StatusField(status_text, "Gid:", 1);
  jvm.catches_sigquit = CatchesSignal(status_text, SIGQUIT);
  jvm.hotspot = maps.hotspot;
  jvm.other_jvm = maps.other_jvm;
  jvm.agent_loaded = maps.agent_loaded;
  return jvm;
}

Result<JvmProcess> InspectJvm(uint32_t pid, const std::string& proc_root) {
  const std::string maps_text = ReadText(fmt::format("{}/{}/maps", proc_root, pid));
  JvmMappings maps;
  for (const procfs::MapsEntry& e : procfs::ParseMaps(maps_text)) {
    if (MapsExecutable(e)) NoteJvmMapping(e.path, &maps);
  }
  if (maps_text.empty()) {
    // Gone (or no maps to read): say so as the status does.
    if (!procfs::ParseStatus(ReadText(fmt::format("{}/{}/status", proc_root, pid))).ok()) {
      return MakeError(fmt::format("process {} is not running", pid));
    }
  }
  return InspectJvmWith(pid, maps, proc_root);
}

std::optional<bool> CatchesSigquit(uint32_t pid, const std::string& proc_root) {
  const std::string status_text = ReadText(fmt::format("{}/{}/status", proc_root, pid));
  if (!procfs::ParseStatus(status_text).ok()) return std::nullopt;
  return CatchesSignal(status_text, SIGQUIT);
}

std::vector<uint32_t> ListPids(const std::string& proc_root) {
  std::vector<uint32_t> out;
  DIR* dir = opendir(proc_root.c_str());
  if (!dir) return out;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && pid != 0) out.push_back(static_cast<uint32_t>(pid));
  }
  closedir(dir);
  return out;
}

std::vector<uint32_t> FindJvmPids(const std::string& proc_root) {
  std::vector<uint32_t> out;
  for (uint32_t pid : ListPids(proc_root)) {
    // Kernel threads have empty maps; other processes are ruled out quickly.
    const std::string maps = ReadText(fmt::format("{}/{}/maps", proc_root, pid), 4u << 20);
    if (maps.find("/libjvm.so\n") == std::string::npos && maps.find("/libj9vm") == std::string::npos) continue;
    for (const procfs::MapsEntry& e : procfs::ParseMaps(maps)) {
      if (MapsExecutable(e) && (e.path.ends_with("/libjvm.so") || e.path.find("/libj9vm") != std::string::npos)) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

std::string DefaultAgentPath() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "libarcprof_jvmti.so";
  std::string path(exe, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return path.substr(0, slash + 1) + "libarcprof_jvmti.so";
}

namespace {

// Whether pid lives in another mount namespace than arcprof (a container):
// then the agent must be copied to where the JVM can open it.
bool OtherMountNamespace(const std::string& proc_root, uint32_t pid) {
  struct stat ours {}, theirs {};
  if (stat("/proc/self/ns/mnt", &ours) != 0 ||
      stat(fmt::format("{}/{}/ns/mnt", proc_root, pid).c_str(), &theirs) != 0) {
    return false;
  }
  return ours.st_ino != theirs.st_ino || ours.st_dev != theirs.st_dev;
}

// A copy of the agent inside the JVM's root, in a new folder of its /tmp
// made for it (root's, 0755; the file 0644): the JVM's /tmp is writable by
// its users, so everything is created relative to a descriptor of that /tmp
// opened without following symlinks, under a random name that must not
// exist. Removed again once the JVM has loaded it (dlopen keeps it mapped).
class AgentCopy {
 public:
  ~AgentCopy() {
    if (tmp_.valid() && !dir_.empty()) {
      unlinkat(dir_fd_.get(), "libarcprof_jvmti.so", 0);
      unlinkat(tmp_.get(), dir_.c_str(), AT_REMOVEDIR);
    }
  }
  // Returns the agent's path as the JVM sees it.
  Result<std::string> Make(const std::string& root, const std::string& agent) {
    tmp_ = ScopedFd(open((root + "/tmp").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!tmp_.valid()) return MakeError(fmt::format("cannot open the JVM's /tmp ({}/tmp): {}", root, std::strerror(errno)));
    ScopedFd in(open(agent.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in.valid()) return MakeError(fmt::format("cannot read the agent {}: {}", agent, std::strerror(errno)));
    ScopedFd random(open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    for (int attempt = 0; attempt < 16 && dir_.empty(); ++attempt) {
      uint64_t r = 0;
      if (!random.valid() || read(random.get(), &r, sizeof(r)) != sizeof(r)) r = MonotonicNs() ^ (static_cast<uint64_t>(attempt) << 40);
      std::string name = fmt::format(".arcprof-agent-{:016x}", r);
      if (mkdirat(tmp_.get(), name.c_str(), 0755) == 0) dir_ = name;
      else if (errno != EEXIST) return MakeError(fmt::format("cannot create a folder in the JVM's /tmp: {}", std::strerror(errno)));
    }
    if (dir_.empty()) return MakeError("cannot create a folder in the JVM's /tmp");
    dir_fd_ = ScopedFd(openat(tmp_.get(), dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir_fd_.valid() || fchmod(dir_fd_.get(), 0755) != 0) return MakeError("cannot open the agent's folder in the JVM's /tmp");
    ScopedFd out(openat(dir_fd_.get(), "libarcprof_jvmti.so", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!out.valid()) return MakeError(fmt::format("cannot copy the agent into the JVM's /tmp: {}", std::strerror(errno)));
    // On the heap: a 64 KiB frame is a sample's whole stack copy.
    std::vector<char> buf(65536);
    ssize_t n;
    while ((n = read(in.get(), buf.data(), buf.size())) > 0) {
      if (write(out.get(), buf.data(), static_cast<size_t>(n)) != n) {
        return MakeError(fmt::format("cannot copy the agent into the JVM's /tmp: {}", std::strerror(errno)));
      }
    }
    if (n < 0 || fchmod(out.get(), 0644) != 0) return MakeError("cannot copy the agent into the JVM's /tmp");
    return "/tmp/" + dir_ + "/libarcprof_jvmti.so";
  }

 private:
  ScopedFd tmp_, dir_fd_;
  std::string dir_;
};

}  // namespace

Result<std::string> AttachAgent(uint32_t pid, const JavaAttachOptions& options) {
  auto jvm = options.inspected ? Result<JvmProcess>(*options.inspected) : InspectJvm(pid, options.proc_root);
  if (!jvm.ok()) return jvm.error();
  if (!jvm->hotspot) {
    return MakeError(fmt::format("process {} runs a JVM that is not HotSpot: its attach protocol is not supported", pid));
  }
  if (!jvm->catches_sigquit) {
    // SIGQUIT would kill a JVM that has not installed its handlers yet (or
    // runs with -Xrs).
    return MakeError(fmt::format("JVM {} does not handle SIGQUIT yet (still starting, or -Xrs): not attaching", pid));
  }
  const std::string agent = options.agent_path.empty() ? DefaultAgentPath() : options.agent_path;
  if (auto ok = CheckAgentFile(agent); !ok) return ok.error();
  std::string agent_in_jvm = agent;
  AgentCopy copy;
  if (OtherMountNamespace(options.proc_root, pid)) {
    auto copied = copy.Make(fmt::format("{}/{}/root", options.proc_root, pid), agent);
    if (!copied.ok()) return MakeError(fmt::format("cannot attach to JVM {}: {}", pid, copied.error().message));
    agent_in_jvm = *copied;
  }
  Exchange x;
  x.pid = pid;
  x.ns_pid = jvm->ns_pid;
  x.uid = jvm->uid;
  x.gid = jvm->gid;
  x.root = fmt::format("{}/{}/root", options.proc_root, pid);
  // Protocol version 1: "1\0load\0<path>\0true\0<options>\0" (absolute path).
  for (const std::string& part :
       {std::string("1"), std::string("load"), agent_in_jvm, std::string("true"), options.agent_options}) {
    x.request += part;
    x.request.push_back('\0');
  }
  x.deadline_ns = MonotonicNs() + static_cast<uint64_t>(options.timeout_s * 1e9);
  std::thread helper([&x] { RunExchange(x); });
  helper.join();
  if (!x.ok) return MakeError(fmt::format("cannot attach to JVM {}: {}", pid, x.error));
  return x.answer;
}

}  // namespace arcprof
