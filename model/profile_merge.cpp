#include "model/profile_merge.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace arcprof::model {

uint64_t EndUnixNs(const CaptureMeta& meta) {
  const uint64_t duration = meta.end_monotonic_ns >= meta.start_monotonic_ns
                                ? meta.end_monotonic_ns - meta.start_monotonic_ns
                                : 0;
  return meta.start_unix_ns + duration;
}

namespace {

void MergePtt(PttData& into, const PttData& from) {
  if (!from.recorded) return;
  if (!into.recorded) {
    into = from;
    return;
  }
  if (into.events.empty()) into.events = from.events;
  // The same thread of the same process: a pid another process held (another
  // start) is another row, as it is another thread record.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, size_t> threads;
  for (size_t i = 0; i < into.threads.size(); ++i) {
    const PttThread& t = into.threads[i];
    threads[{t.pid, t.tid, t.process_start_ns}] = i;
  }
  for (const PttThread& t : from.threads) {
    auto [it, added] = threads.try_emplace({t.pid, t.tid, t.process_start_ns}, into.threads.size());
    if (added) {
      into.threads.push_back(t);
      continue;
    }
    into.threads[it->second].Add(t);
  }
  into.intervals.insert(into.intervals.end(), from.intervals.begin(), from.intervals.end());
  std::map<std::tuple<uint32_t, uint8_t, uint32_t>, size_t> vectors;
  for (size_t i = 0; i < into.irq_vectors.size(); ++i) {
    const PttIrqVector& v = into.irq_vectors[i];
    vectors[{v.cpu, static_cast<uint8_t>(v.kind), v.vector}] = i;
  }
  for (const PttIrqVector& v : from.irq_vectors) {
    auto [it, added] =
        vectors.try_emplace({v.cpu, static_cast<uint8_t>(v.kind), v.vector}, into.irq_vectors.size());
    if (added) {
      into.irq_vectors.push_back(v);
      continue;
    }
    into.irq_vectors[it->second].count += v.count;
    into.irq_vectors[it->second].ns += v.ns;
  }
}

}  // namespace

void MergeProfile(Profile& into, const Profile& from) {
  const bool empty = into.threads.empty() && into.frames.size() == 0 && into.meta.start_unix_ns == 0;
  if (empty) {
    into.meta = from.meta;
  } else if (from.meta.start_unix_ns != 0) {
    const uint64_t start = std::min(into.meta.start_unix_ns, from.meta.start_unix_ns);
    const uint64_t end = std::max(EndUnixNs(into.meta), EndUnixNs(from.meta));
    into.meta.start_unix_ns = start;
    into.meta.end_monotonic_ns = into.meta.start_monotonic_ns + (end - start);
  }
  const std::vector<uint32_t> modules = into.frames.ImportModules(from.frames);
  std::vector<uint32_t> frames(from.frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    frames[i] = into.frames.Import(from.frames, static_cast<uint32_t>(i), modules);
  }
  // Value types by name: the same type may have another index in `from`.
  std::vector<size_t> types(from.value_types.size());
  for (size_t i = 0; i < types.size(); ++i) types[i] = into.DeclareValue(from.value_types[i]);
  // "[exited processes]" records (kExitedProcessesPid) sum by host and name:
  // two recordings may have given one name different tids (a tid taken by
  // another name, or a recording before tids were the name's).
  std::map<std::pair<std::string, std::string>, uint32_t> exited_by_name;
  std::set<std::pair<std::string, uint32_t>> exited_tids;
  bool exited_indexed = false;
  auto exited_index = [&](const ThreadRecord& thread) {
    if (!exited_indexed) {
      exited_indexed = true;
      for (uint32_t i = 0; i < into.threads.size(); ++i) {
        const ThreadRecord& t = into.threads[i];
        if (t.pid != kExitedProcessesPid) continue;
        exited_by_name.emplace(std::pair(t.host, t.comm), i);
        exited_tids.emplace(t.host, t.tid);
      }
    }
    auto [it, added] = exited_by_name.try_emplace(std::pair(thread.host, thread.comm), 0);
    if (added) {
      uint32_t tid = thread.tid;
      for (uint64_t tries = 0; !exited_tids.emplace(thread.host, tid).second && tries < 0xfffffffeu; ++tries) {
        tid = NextExitedProcessesTid(tid);
      }
      it->second = into.ThreadIndex(thread.host, kExitedProcessesPid, tid, thread.process_start_ns);
    }
    return it->second;
  };
  for (const ThreadRecord& thread : from.threads) {
    // The same thread of the same process: a pid reused by another process
    // (another start) is another record.
    const uint32_t index = thread.pid == kExitedProcessesPid ? exited_index(thread) : into.ThreadIndex(thread);
    ThreadRecord& dest = into.threads[index];
    if (!thread.comm.empty()) dest.comm = thread.comm;
    if (!thread.process_comm.empty()) dest.process_comm = thread.process_comm;
    if (!thread.cmdline.empty()) dest.cmdline = thread.cmdline;
    if (!thread.identity.empty()) dest.identity = thread.identity;
    dest.tree.Merge(thread.tree, frames, types);
  }
  for (const auto& [name, value] : from.counters) into.counters[name] += value;
  for (const auto& [module, id] : from.build_ids) into.build_ids.emplace(module, id);
  MergePtt(into.ptt, from.ptt);
}

}  // namespace arcprof::model
