#include "loader/sideband.h"

#include <algorithm>
#include <cstring>

namespace arcprof {
namespace {

// Bounds-checked reader over one record.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  bool Read(T* out) {
    if (pos_ + sizeof(T) > size_) return false;
    memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // A NUL-terminated string padded to 8 bytes, ending before `limit`.
  bool ReadString(std::string* out, size_t limit) {
    if (pos_ >= limit || limit > size_) return false;
    const void* nul = memchr(data_ + pos_, '\0', limit - pos_);
    if (!nul) return false;
    const size_t len = static_cast<const uint8_t*>(nul) - (data_ + pos_);
    out->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ = limit;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

constexpr size_t kSampleIdSize = 16;  // u32 pid, u32 tid, u64 time

void HexBuildId(const uint8_t* id, size_t n, std::string& out) {
  static const char kHex[] = "0123456789abcdef";
  out.clear();
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[id[i] >> 4]);
    out.push_back(kHex[id[i] & 15]);
  }
}

}  // namespace

std::optional<SidebandEvent> DecodeSidebandRecord(const void* record, size_t size) {
  SidebandEvent ev;
  if (!DecodeSidebandRecord(record, size, ev)) return std::nullopt;
  return ev;
}

bool DecodeSidebandRecord(const void* record, size_t size, SidebandEvent& ev) {
  perf_event_header header;
  if (size < sizeof(header) + kSampleIdSize) return false;
  memcpy(&header, record, sizeof(header));
  if (header.size > size || header.size < sizeof(header) + kSampleIdSize) return false;
  const auto* bytes = static_cast<const uint8_t*>(record);
  const size_t end = header.size - kSampleIdSize;  // where the sample_id starts
  // Every field is set again; the strings keep their buffers (a reused slot
  // of SidebandQueue: no allocation per event).
  ev.kind = SidebandEvent::Kind::kMmap;
  ev.pid = ev.tid = ev.parent_pid = 0;
  ev.comm.clear();
  {
    MappingEvent& m = ev.mapping;
    m.start = m.len = m.pgoff = m.ino = 0;
    m.maj = m.min = m.prot = m.flags = 0;
    m.path.clear();
    m.build_id.clear();
  }
  {
    uint32_t sid_pid, sid_tid;
    memcpy(&sid_pid, bytes + end, 4);
    memcpy(&sid_tid, bytes + end + 4, 4);
    memcpy(&ev.time_ns, bytes + end + 8, 8);
  }
  Cursor c(bytes, end);
  perf_event_header skip;
  c.Read(&skip);

  switch (header.type) {
    case PERF_RECORD_MMAP2: {
      uint32_t pid, tid;
      uint64_t addr, len, pgoff;
      if (!c.Read(&pid) || !c.Read(&tid) || !c.Read(&addr) || !c.Read(&len) || !c.Read(&pgoff))
        return false;
      uint8_t id_block[24];  // maj, min, ino, ino_generation | build-id size + id
      if (!c.Read(&id_block)) return false;
      uint32_t prot, flags;
      if (!c.Read(&prot) || !c.Read(&flags)) return false;
      ev.kind = SidebandEvent::Kind::kMmap;
      ev.pid = pid;
      ev.tid = tid;
      ev.mapping.start = addr;
      ev.mapping.len = len;
      ev.mapping.pgoff = pgoff;
      ev.mapping.prot = prot;
      ev.mapping.flags = flags;
      if (header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
        const size_t n = std::min<size_t>(id_block[0], 20);
        HexBuildId(id_block + 4, n, ev.mapping.build_id);
      } else {
        memcpy(&ev.mapping.maj, id_block, 4);
        memcpy(&ev.mapping.min, id_block + 4, 4);
        memcpy(&ev.mapping.ino, id_block + 8, 8);
      }
      if (!c.ReadString(&ev.mapping.path, end)) return false;
      return true;
    }
    case PERF_RECORD_COMM: {
      uint32_t pid, tid;
      if (!c.Read(&pid) || !c.Read(&tid)) return false;
      ev.kind = (header.misc & PERF_RECORD_MISC_COMM_EXEC) ? SidebandEvent::Kind::kExec
                                                            : SidebandEvent::Kind::kComm;
      ev.pid = pid;
      ev.tid = tid;
      if (!c.ReadString(&ev.comm, end)) return false;
      return true;
    }
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT: {
      uint32_t pid, ppid, tid, ptid;
      uint64_t time;
      if (!c.Read(&pid) || !c.Read(&ppid) || !c.Read(&tid) || !c.Read(&ptid) || !c.Read(&time))
        return false;
      ev.pid = pid;
      ev.tid = tid;
      ev.parent_pid = ppid;
      const bool is_thread = pid == ppid && pid != tid;
      if (header.type == PERF_RECORD_FORK) {
        ev.kind = is_thread ? SidebandEvent::Kind::kThreadStart : SidebandEvent::Kind::kFork;
      } else {
        ev.kind = pid == tid ? SidebandEvent::Kind::kExit : SidebandEvent::Kind::kThreadExit;
      }
      return true;
    }
    default:
      return false;
  }
}

void SidebandQueue::Follow(const std::vector<uint32_t>& pids) {
  filtering_ = true;
  followed_.insert(pids.begin(), pids.end());
}

void SidebandQueue::Push(SidebandEvent event) {
  if (count_ < pending_.size()) {
    pending_[count_] = std::move(event);
  } else {
    pending_.push_back(std::move(event));
  }
  ++count_;
}

void SidebandQueue::PushRecord(const void* record, size_t size) {
  if (count_ == pending_.size()) pending_.emplace_back();
  if (DecodeSidebandRecord(record, size, pending_[count_])) ++count_;
}

void SidebandQueue::ApplyTo(AddressSpaces& spaces) {
  if (count_ == 0) return;
  // In time order, events of the same time in arrival order; the events
  // stay in their slots (sorting moved every string of every event).
  order_.resize(count_);
  for (uint32_t i = 0; i < count_; ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [this](uint32_t a, uint32_t b) {
    const uint64_t ta = pending_[a].time_ns, tb = pending_[b].time_ns;
    return ta != tb ? ta < tb : a < b;
  });
  // Processes whose exit is in this batch: their exec needs no /proc reads
  // (they are gone; on a build machine most short processes are by the time
  // their events are applied). A pid reused inside one batch only loses a
  // command line.
  exited_in_batch_.clear();
  for (uint32_t i = 0; i < count_; ++i) {
    if (pending_[i].kind == SidebandEvent::Kind::kExit) exited_in_batch_.push_back(pending_[i].pid);
  }
  std::sort(exited_in_batch_.begin(), exited_in_batch_.end());
  for (const uint32_t i : order_) {
    const SidebandEvent& ev = pending_[i];
    if (filtering_) {
      if (ev.kind == SidebandEvent::Kind::kFork && ev.pid != ev.parent_pid && followed_.count(ev.parent_pid)) {
        // A followed child reusing the pid of one that exited since the
        // last TakeExited(): the BPF filter holds it again, it stays there.
        if (followed_.insert(ev.pid).second) std::erase(exited_, ev.pid);
      } else if (!followed_.count(ev.pid)) {
        ++skipped_;
        continue;
      }
    }
    switch (ev.kind) {
      case SidebandEvent::Kind::kMmap:
        spaces.OnMmap(ev.pid, ev.time_ns, ev.mapping);
        break;
      case SidebandEvent::Kind::kExec:
        spaces.OnExec(ev.pid, ev.time_ns, ev.comm,
                      std::binary_search(exited_in_batch_.begin(), exited_in_batch_.end(), ev.pid));
        break;
      case SidebandEvent::Kind::kComm:
        spaces.OnComm(ev.pid, ev.tid, ev.time_ns, ev.comm);
        break;
      case SidebandEvent::Kind::kFork:
        spaces.OnFork(ev.parent_pid, ev.pid, ev.time_ns);
        break;
      case SidebandEvent::Kind::kExit:
        spaces.OnExit(ev.pid, ev.time_ns);
        if (filtering_ && followed_.erase(ev.pid)) exited_.push_back(ev.pid);  // a later process with this pid is someone else
        break;
      case SidebandEvent::Kind::kThreadStart:
      case SidebandEvent::Kind::kThreadExit:
        break;
    }
    ++applied_;
  }
  count_ = 0;
  // The slots are kept for the next batches, up to a bound: a burst's
  // batch does not stay allocated.
  if (pending_.size() > kKeptSlots) {
    pending_.resize(kKeptSlots);
    pending_.shrink_to_fit();
    order_.clear();
    order_.shrink_to_fit();
    exited_in_batch_.clear();
    exited_in_batch_.shrink_to_fit();
  }
}

}  // namespace arcprof
