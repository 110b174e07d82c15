#include "loader/trace_probes.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trace.skel.h"

namespace arcprof {
namespace {

// BPF_LINK_CREATE for uprobe_multi (Linux 6.6), spelled out: the libbpf of
// Debian 12 (1.1) predates bpf_program__attach_uprobe_multi and its headers
// the attr fields. Layout of union bpf_attr's link_create.
constexpr uint32_t kBpfTraceUprobeMulti = 48;  // enum bpf_attach_type
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
  uint32_t pad;
};

}  // namespace

Result<std::unique_ptr<TraceProbes>> TraceProbes::Load() {
  std::unique_ptr<TraceProbes> p(new TraceProbes());
  p->skel_ = trace__open();
  if (!p->skel_) return MakeError(std::string("trace: cannot open the BPF object: ") + strerror(errno));
  bpf_program__set_expected_attach_type(p->skel_->progs.trace_entry,
                                        static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  bpf_program__set_expected_attach_type(p->skel_->progs.trace_exit,
                                        static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  if (int err = trace__load(p->skel_); err != 0) {
    return MakeError(std::string("trace: cannot load the BPF programs (uprobe_multi needs Linux 6.6): ") +
                     strerror(-err));
  }
  return p;
}

TraceProbes::~TraceProbes() {
  DetachAll();
  if (skel_) trace__destroy(skel_);
}

void TraceProbes::AddProcess(uint32_t tgid) {
  const uint32_t one = 1;
  bpf_map__update_elem(skel_->maps.tgids, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY);
}

void TraceProbes::RemoveProcess(uint32_t tgid) {
  bpf_map__delete_elem(skel_->maps.tgids, &tgid, sizeof(tgid), 0);
}

Result<ScopedFd> TraceProbes::Link(int prog_fd, const std::string& path, uint32_t pid,
                                   const std::vector<TraceProbe>& probes) {
  std::vector<uint64_t> offsets, cookies;
  for (const TraceProbe& p : probes) {
    offsets.push_back(p.file_offset);
    cookies.push_back(p.cookie);
  }
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(offsets.data());
  attr.cookies = reinterpret_cast<uint64_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.pid = pid;
  const long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
  if (fd < 0) {
    const int err = errno;
    return MakeError("trace: cannot attach " + std::to_string(probes.size()) + " probes in " + path +
                     ": " + strerror(err) +
                     (err == EINVAL || err == EOPNOTSUPP ? " (uprobe_multi needs Linux 6.6)" : ""));
  }
  return ScopedFd(static_cast<int>(fd));
}

Result<std::vector<size_t>> TraceProbes::Attach(const std::string& path, uint32_t pid,
                                                const std::vector<TraceProbe>& entries,
                                                const std::vector<TraceProbe>& exits) {
  std::vector<size_t> ids;
  // Exits first: an entry whose exits are not there yet would leave frames
  // that only the next entry finds dead.
  if (!exits.empty()) {
    auto link = Link(bpf_program__fd(skel_->progs.trace_exit), path, pid, exits);
    if (!link) return link.error();
    ids.push_back(links_.size());
    links_.push_back(std::move(*link));
  }
  if (!entries.empty()) {
    auto link = Link(bpf_program__fd(skel_->progs.trace_entry), path, pid, entries);
    if (!link) {
      Detach(ids);
      return link.error();
    }
    ids.push_back(links_.size());
    links_.push_back(std::move(*link));
  }
  return ids;
}

void TraceProbes::Detach(const std::vector<size_t>& ids) {
  // Entries before exits, the reverse of Attach.
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    if (*it < links_.size()) links_[*it].reset();
  }
}

void TraceProbes::DetachAll() {
  for (auto it = links_.rbegin(); it != links_.rend(); ++it) it->reset();
}

size_t TraceProbes::links() const {
  size_t n = 0;
  for (const ScopedFd& fd : links_) n += fd.valid();
  return n;
}

std::vector<trace_node> TraceProbes::Nodes() const {
  std::vector<trace_node> out;
  const uint32_t count = std::min<uint32_t>(skel_->bss->next_node, ARCPROF_TRACE_MAX_NODES);
  out.reserve(count);
  for (uint32_t id = 0; id < count; ++id) {
    trace_node n{};
    if (bpf_map__lookup_elem(skel_->maps.nodes, &id, sizeof(id), &n, sizeof(n), 0) != 0) n = {};
    out.push_back(n);
  }
  return out;
}

trace_counters TraceProbes::Counters() const { return skel_->bss->counters; }

}  // namespace arcprof
