#include "spaces/timeline.h"

#include <algorithm>

namespace arcprof {

TimelineProcess* Timeline::Find(uint32_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

const TimelineProcess* Timeline::Find(uint32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

TimelineProcess& Timeline::Slot(uint32_t pid) {
  auto [it, created] = processes_.try_emplace(pid);
  TimelineProcess& process = it->second;
  if (created) {
    process.pid = pid;
    // A fork's generation and its exec's: one allocation for most processes.
    process.generations.reserve(2);
    ++creations_;
  }
  return process;
}

TimelineProcess& Timeline::GetOrCreate(uint32_t pid) {
  TimelineProcess& process = Slot(pid);
  if (process.generations.empty()) {
    process.generations.emplace_back();  // start_ns 0: existed before anything we saw
    process.version = ++version_clock_;
  }
  return process;
}

size_t Timeline::LiveGeneration(const TimelineProcess& process, uint64_t t_ns) {
  const auto& gens = process.generations;
  auto it = std::upper_bound(gens.begin(), gens.end(), t_ns,
                             [](uint64_t t, const AddressSpaceGeneration& g) { return t < g.start_ns; });
  return it == gens.begin() ? 0 : static_cast<size_t>(it - gens.begin()) - 1;
}

AddressSpaceGeneration& Timeline::NewGeneration(TimelineProcess& process, uint64_t t_ns) {
  auto& gens = process.generations;
  auto it = std::upper_bound(gens.begin(), gens.end(), t_ns,
                             [](uint64_t t, const AddressSpaceGeneration& g) { return t < g.start_ns; });
  it = gens.emplace(it);
  it->start_ns = t_ns;
  process.version = ++version_clock_;
  return *it;
}

// What an exec maps first: its binary, ld.so, libc and the vDSO (four
// mappings grew its vector three times).
constexpr size_t kExecMappings = 4;

void Timeline::Exec(uint32_t pid, uint64_t t_ns) {
  TimelineProcess& process = Slot(pid);
  process.exited = false;
  AddressSpaceGeneration& gen = NewGeneration(process, t_ns);
  gen.from_exec = true;
  gen.mappings.reserve(kExecMappings);
}

const AddressSpaceGeneration* Timeline::Fork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns) {
  if (parent_pid == child_pid) return nullptr;
  std::vector<TimelineMapping> inherited;
  if (const TimelineProcess* parent = Find(parent_pid); parent && !parent->generations.empty()) {
    const AddressSpaceGeneration& from = parent->generations[LiveGeneration(*parent, t_ns)];
    inherited.reserve(from.mappings.size());
    for (const TimelineMapping& m : from.mappings) {
      if (m.time_ns <= t_ns) inherited.push_back(m);
    }
    if (inherited.empty()) inherited = from.mappings;
  }
  TimelineProcess& child = Slot(child_pid);
  child.exited = false;
  AddressSpaceGeneration& gen = NewGeneration(child, t_ns);
  gen.mappings = std::move(inherited);  // already sorted: a filtered copy of a sorted vector
  for (const TimelineMapping& m : gen.mappings) gen.max_len = std::max(gen.max_len, m.end - m.start);
  return &gen;
}

bool Timeline::AddMapping(uint32_t pid, uint64_t t_ns, TimelineMapping mapping, bool dedupe) {
  if (mapping.end <= mapping.start) return false;
  TimelineProcess& process = GetOrCreate(pid);
  AddressSpaceGeneration& gen = process.generations[LiveGeneration(process, t_ns)];
  auto by_start = [](const TimelineMapping& m, uint64_t start) { return m.start < start; };
  auto pos = std::lower_bound(gen.mappings.begin(), gen.mappings.end(), mapping.start, by_start);
  if (dedupe) {
    for (auto it = pos; it != gen.mappings.end() && it->start == mapping.start; ++it) {
      if (it->end == mapping.end && it->pgoff == mapping.pgoff && it->kind == mapping.kind &&
          it->file_id == mapping.file_id && it->module == mapping.module)
        return false;
    }
  }
  mapping.time_ns = t_ns;
  mapping.seq = next_seq_++;
  gen.max_len = std::max(gen.max_len, mapping.end - mapping.start);
  // Insert after equal starts so the vector stays sorted and stable.
  while (pos != gen.mappings.end() && pos->start == mapping.start) ++pos;
  gen.mappings.insert(pos, mapping);
  process.version = ++version_clock_;
  return true;
}

void Timeline::Exit(uint32_t pid, uint64_t t_ns) {
  TimelineProcess* process = Find(pid);
  if (!process) return;
  process->exited = true;
  process->exit_ns = t_ns;
  process->version = ++version_clock_;
}

namespace {

struct GenerationMatch {
  const TimelineMapping* latest_before = nullptr;   // max (time, seq) with time <= t
  const TimelineMapping* earliest_after = nullptr;  // min (time, seq) with time > t
};

GenerationMatch MatchInGeneration(const AddressSpaceGeneration& gen, uint64_t addr, uint64_t t_ns) {
  GenerationMatch match;
  auto it = std::upper_bound(gen.mappings.begin(), gen.mappings.end(), addr,
                             [](uint64_t a, const TimelineMapping& m) { return a < m.start; });
  while (it != gen.mappings.begin()) {
    --it;
    if (addr - it->start >= gen.max_len) break;  // no earlier mapping can reach addr
    if (addr >= it->end) continue;
    const TimelineMapping& m = *it;
    if (m.time_ns <= t_ns) {
      if (!match.latest_before || m.time_ns > match.latest_before->time_ns ||
          (m.time_ns == match.latest_before->time_ns && m.seq > match.latest_before->seq))
        match.latest_before = &m;
    } else if (!match.earliest_after || m.time_ns < match.earliest_after->time_ns ||
               (m.time_ns == match.earliest_after->time_ns && m.seq < match.earliest_after->seq)) {
      match.earliest_after = &m;
    }
  }
  return match;
}

// While execve runs, the user registers still describe the old image: samples
// taken this soon after an exec may hit addresses of the previous generation.
constexpr uint64_t kExecGraceNs = 20'000'000;

}  // namespace

Timeline::Hit Timeline::Lookup(const TimelineProcess& process, uint64_t addr, uint64_t t_ns) {
  Hit hit;
  if (process.generations.empty()) return hit;
  const size_t gi = LiveGeneration(process, t_ns);
  const AddressSpaceGeneration& gen = process.generations[gi];
  if (gi > 0) hit.valid_from = gen.start_ns;
  if (gi + 1 < process.generations.size()) hit.valid_until = process.generations[gi + 1].start_ns;

  const GenerationMatch match = MatchInGeneration(gen, addr, t_ns);
  if (match.latest_before) {
    hit.mapping = match.latest_before;
    hit.valid_from = std::max(hit.valid_from, match.latest_before->time_ns);
    if (match.earliest_after) hit.valid_until = std::min(hit.valid_until, match.earliest_after->time_ns);
  } else if (match.earliest_after) {
    hit.mapping = match.earliest_after;
    hit.valid_until = std::min(hit.valid_until, match.earliest_after->time_ns);
  } else if (gi > 0 && gen.from_exec && t_ns - gen.start_ns < kExecGraceNs) {
    const GenerationMatch before = MatchInGeneration(process.generations[gi - 1], addr, gen.start_ns);
    hit.mapping = before.latest_before ? before.latest_before : before.earliest_after;
    hit.valid_from = gen.start_ns;
    hit.valid_until = std::min(hit.valid_until, gen.start_ns + kExecGraceNs);
  }
  // No mapping: the answer holds for the whole generation (until the version changes).
  return hit;
}

size_t Timeline::bytes() const {
  size_t n = 0;
  for (const auto& [pid, process] : processes_) {
    n += 2 * sizeof(void*) + sizeof(pid) + sizeof(TimelineProcess) +
         process.generations.capacity() * sizeof(AddressSpaceGeneration);
    for (const AddressSpaceGeneration& gen : process.generations) n += gen.mappings.capacity() * sizeof(TimelineMapping);
  }
  return n;
}

}  // namespace arcprof
