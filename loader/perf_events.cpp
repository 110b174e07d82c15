#include "loader/perf_events.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace arcprof {
namespace {

struct NamedEvent {
  const char* name;
  uint32_t type;
  uint64_t config;
};

constexpr NamedEvent kEvents[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
};

int PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu) {
  return static_cast<int>(
      syscall(__NR_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

Result<EventSpec> ParseEvent(const std::string& name) {
  std::string known;
  for (const NamedEvent& e : kEvents) {
    if (name == e.name) {
      return EventSpec{e.name, e.type, e.config, e.type == PERF_TYPE_HARDWARE};
    }
    if (!known.empty()) known += ", ";
    known += e.name;
  }
  return MakeError("unknown event '" + name + "'; known events: " + known);
}

Result<std::vector<int>> OnlineCpus() {
  std::string line = ReadFirstLine("/sys/devices/system/cpu/online");
  std::vector<int> cpus;
  std::stringstream ss(line);
  std::string range;
  while (std::getline(ss, range, ',')) {
    int lo = 0, hi = 0;
    if (sscanf(range.c_str(), "%d-%d", &lo, &hi) == 2) {
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    } else if (sscanf(range.c_str(), "%d", &lo) == 1) {
      cpus.push_back(lo);
    }
  }
  if (cpus.empty()) return MakeError("cannot read the online CPUs from /sys/devices/system/cpu/online");
  return cpus;
}

uint64_t MaxSampleRate() {
  const std::string text = ReadFirstLine("/proc/sys/kernel/perf_event_max_sample_rate");
  char* end = nullptr;
  const unsigned long long v = strtoull(text.c_str(), &end, 10);
  return end != text.c_str() ? static_cast<uint64_t>(v) : 0;
}

Result<ScopedFd> OpenSamplingEvent(const EventSpec& event, uint64_t frequency_hz, int cpu,
                                   uint64_t period) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = event.type;
  attr.config = event.config;
  if (period > 0) {
    attr.freq = 0;
    attr.sample_period = period;
  } else {
    attr.freq = 1;
    attr.sample_freq = frequency_hz;
  }
  int fd = PerfEventOpen(&attr, -1, cpu);
  if (fd >= 0) return ScopedFd(fd);
  const int err = errno;
  if (event.hardware && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)) {
    return MakeError("event '" + event.name +
                     "' needs a hardware PMU, which this machine does not have (virtual machine "
                     "without PMU passthrough?); use -e cpu-clock");
  }
  if (err == EACCES || err == EPERM) {
    std::string paranoid = ReadFirstLine("/proc/sys/kernel/perf_event_paranoid");
    return MakeError("perf_event_open failed: " + std::string(strerror(err)) +
                     " (kernel.perf_event_paranoid=" + paranoid +
                     "); run as root or with CAP_PERFMON");
  }
  if (err == EINVAL && period == 0 && frequency_hz > 1000) {
    std::string max_rate = ReadFirstLine("/proc/sys/kernel/perf_event_max_sample_rate");
    return MakeError("perf_event_open failed for -F " + std::to_string(frequency_hz) +
                     ": above kernel.perf_event_max_sample_rate=" + max_rate +
                     "? lower -F or raise that sysctl");
  }
  return MakeError("perf_event_open(" + event.name + ", cpu " + std::to_string(cpu) +
                   ") failed: " + strerror(err));
}

perf_event_attr SidebandAttr() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  attr.sample_id_all = 1;
  attr.mmap = 1;
  attr.mmap2 = 1;
  attr.comm = 1;
  attr.comm_exec = 1;
  attr.task = 1;
  // No attr.build_id: with it the kernel marks MMAP2 records delivered to
  // other listeners (a concurrent `perf record -a`) as carrying build-ids they
  // do not hold, and perf cannot read its own file. Build-ids come from the
  // ELF notes of the files the symbolizer opens anyway.
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  // The kernel counts wakeup_events for samples only: these records (mmap,
  // comm, task) wake the reader when half the buffer is full, and are
  // otherwise read at each drain tick (docs/design.md).
  attr.wakeup_events = 1;
  return attr;
}

}  // namespace arcprof
