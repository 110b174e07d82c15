#include "loader/alloc_source.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "alloc.h"
#include "alloc.skel.h"
#include "common/clock.h"
#include "common/scoped_fd.h"
#include "common/text.h"
#include "events.h"
#include "loader/percpu_counters.h"
#include "loader/sampler.h"
#include "loader/stack_sample.h"
#include "loader/value_source.h"
#include "model/profile.h"
#include "model/value_types.h"
#include "symbolize/elf_symbols.h"
#include "spaces/address_spaces.h"
#include "spaces/elf_header.h"
#include "spaces/file_table.h"
#include "spaces/process_registry.h"

namespace arcprof {

AllocWeight UnbiasAllocation(uint64_t size, uint64_t rate) {
  if (size == 0) return {};
  if (rate <= 1) return {1.0, static_cast<double>(size)};
  const double scale = 1.0 / (1.0 - std::exp(-static_cast<double>(size) / static_cast<double>(rate)));
  return {scale, scale * static_cast<double>(size)};
}

namespace {

// /proc/PID/maps, at most 4 MiB (a process controls its mappings).
std::string ReadMaps(uint32_t pid) {
  auto text = ReadFileStart("/proc/" + std::to_string(pid) + "/maps", 4u << 20);
  return text.ok() ? std::move(*text) : std::string();
}

class AllocSource final : public ValueSource {
 public:
  explicit AllocSource(AllocSourceOptions options) : options_(options), rng_(0x9e3779b97f4a7c15ull) {}
  ~AllocSource() override { Detach(); }

  std::string_view name() const override { return "alloc"; }

  // Opens and loads the BPF object before the sampler attaches; the probes
  // go on in Start.
  Result<void> Load(RecordContext& context) override {
    skel_.reset(alloc__open());
    if (!skel_) return MakeError(std::string("cannot open the allocation BPF object: ") + strerror(errno));
    if (auto ok = context.sampler->ShareRecordMaps(skel_->obj, /*own_scratch=*/true); !ok) return ok.error();
    skel_->rodata->sample_rate = options_.rate;
    // -ln(u) at the middle of each step, scaled to a mean of exactly 1.
    double table[ARCPROF_ALLOC_EXP_STEPS];
    double sum = 0;
    for (int i = 0; i < ARCPROF_ALLOC_EXP_STEPS; ++i) {
      table[i] = -std::log((i + 0.5) / ARCPROF_ALLOC_EXP_STEPS);
      sum += table[i];
    }
    for (int i = 0; i < ARCPROF_ALLOC_EXP_STEPS; ++i) {
      skel_->rodata->exp_table[i] =
          static_cast<uint32_t>(table[i] * ARCPROF_ALLOC_EXP_STEPS / sum * (1u << ARCPROF_ALLOC_EXP_SHIFT));
    }
    bpf_map__set_max_entries(skel_->maps.alloc_blocks, std::max(1024u, options_.max_blocks));
    if (int err = alloc__load(skel_.get()); err != 0) {
      return MakeError("cannot load the allocation BPF programs into the kernel: " + std::string(strerror(-err)));
    }
    return {};
  }

  Result<void> Start(RecordContext& context) override {
    // The libc files to probe: arcprof's own (the command's, and most
    // processes'), and those of the -p processes (a container's own). Each
    // is opened as the file its process maps (by its mapping, or its path
    // inside that process's root without following links out of it: the
    // process controls that tree), must be the device and inode it maps,
    // and is probed through this descriptor, not a path.
    std::vector<uint32_t> pids = {static_cast<uint32_t>(getpid())};
    pids.insert(pids.end(), context.target_pids.begin(), context.target_pids.end());
    for (uint32_t pid : pids) {
      const std::string maps = ReadMaps(pid);
      const auto libc = LibcMappingOf(maps);
      if (!libc) continue;
      ScopedFd fd = OpenMappedFileOf("/proc", pid, libc->start, libc->end, libc->path, libc->inode,
                                     makedev(libc->dev_major, libc->dev_minor));
      struct stat st{};
      if (!fd.valid() || fstat(fd.get(), &st) != 0) {
        if (!options_.quiet) {
          fprintf(stderr, "arcprof: --alloc: cannot open the libc.so.6 process %u maps (%s): its allocations are not "
                          "covered\n", pid, EscapeControl(libc->path).c_str());
        }
        ++not_covered_;
        continue;
      }
      if (!probed_.insert({st.st_dev, st.st_ino}).second) continue;
      if (pid == pids[0]) own_libc_ = libc->path;
      if (auto ok = AttachLibc(fd.get(), libc->path); !ok) return ok.error();
    }
    if (links_.empty()) return MakeError("--alloc: found no libc.so.6 to probe");
    // Said even when quiet (continuous is): it is what the option costs.
    if (options_.system_wide) {
      fprintf(stderr,
              "arcprof: warning: --alloc on the whole machine traps every malloc, realloc and free of every "
              "process using %s into the kernel (uprobes: microseconds of CPU per call, over a thousand times a "
              "malloc's own): allocation-heavy programs slow down by orders of magnitude while recording; processes "
              "with another libc or a malloc of their own are not covered\n",
              EscapeControl(own_libc_).c_str());
    }
    sink_ = context.sink;
    sink_->Route(ARCPROF_SOURCE_ALLOC, this);
    // Every executable file mapping of a recorded process (those known now,
    // replayed, and every later one): a file other than a probed libc that
    // defines malloc is an allocator of its own. Each file is read once, as
    // the address spaces opened it (the mapped inode).
    spaces_ = &context.symbolizer.spaces();
    spaces_->SetMappingObserver(this, [this](uint32_t pid, const MappingEvent& m) {
      if (!(m.prot & PROT_EXEC) || m.ino == 0 || m.path.empty() || m.path[0] != '/' || pid == self_pid_) return;
      const std::pair<dev_t, ino_t> file{makedev(m.maj, m.min), m.ino};
      if (not_covered_pids_.count(pid) || probed_.count(file)) return;
      auto verdict = own_malloc_.find(file);
      if (verdict == own_malloc_.end()) {
        const auto mapped = spaces_->FindMappedFile(pid, m.start, MonotonicNs());
        if (!mapped || mapped->fd < 0) return;
        auto elf = OpenElfFd(mapped->fd);
        if (own_malloc_.size() >= kMaxFiles) own_malloc_.clear();
        verdict = own_malloc_.emplace(file, elf.ok() && FindSymbolValue(elf->get(), "malloc").has_value()).first;
      }
      if (verdict->second) NotCovered(pid, m.path);
    }, /*replay_known=*/true);
    return {};
  }

  void OnRecord(const StackSample& e, StackSink& sink) override {
    const uint64_t key = e.source_key;
    sink.Keep(ARCPROF_SOURCE_ALLOC, key, sink.Stack(e), {});
    kept_[key] = generation_;
    const AllocWeight w = UnbiasAllocation(e.source_values[0], options_.rate);
    const SourceValue values[] = {{model::kAllocBytes, Round(w.bytes)}, {model::kAllocCount, Round(w.count)}};
    sink.Add(ARCPROF_SOURCE_ALLOC, key, values);
    ++records_;
  }

  // At a window's end: every live sampled block adds its in-use bytes and
  // count at its allocation's stack. Blocks of processes that exited are
  // counted this once (in use at exit) and dropped; the stacks of blocks
  // freed since are forgotten.
  void Flush(RecordContext& context, bool closing) override {
    if (!skel_ || !closing) return;
    const int fd = bpf_map__fd(skel_->maps.alloc_blocks);
    std::vector<std::pair<alloc_block_key, alloc_block>> blocks;
    alloc_block_key k{}, next{};
    const alloc_block_key* prev = nullptr;
    while (bpf_map_get_next_key(fd, prev, &next) == 0 && blocks.size() < (1u << 24)) {
      alloc_block b{};
      if (bpf_map_lookup_elem(fd, &next, &b) == 0) blocks.emplace_back(next, b);
      k = next;
      prev = &k;
    }
    std::unordered_set<uint64_t> live;
    std::unordered_map<uint32_t, bool> exited;
    for (const auto& [key, block] : blocks) {
      live.insert(block.key);
      // Allocated after the window's end (the key is its time): in use in
      // the next window, whose records its record is among.
      if (context.window_end_ns != 0 && (block.key >> 8) > context.window_end_ns) continue;
      const AllocWeight w = UnbiasAllocation(block.size, options_.rate);
      const SourceValue values[] = {{model::kInuseBytes, Round(w.bytes)}, {model::kInuseCount, Round(w.count)}};
      if (!sink_->Add(ARCPROF_SOURCE_ALLOC, block.key, values)) inuse_unattributed_ += block.size;
      auto [it, inserted] = exited.try_emplace(key.pid, false);
      if (inserted) {
        it->second = context.symbolizer.spaces().KnowsProcess(key.pid)
                         ? context.symbolizer.spaces().ProcessExited(key.pid)
                         : kill(static_cast<pid_t>(key.pid), 0) != 0 && errno == ESRCH;
      }
      if (it->second) {
        bpf_map_delete_elem(fd, &key);
        ++exited_blocks_;
      }
    }
    // Stacks of blocks no longer live (freed, or their process gone) that
    // were kept before this window: forgotten. A newer one may still wait
    // for its allocation to return.
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (!live.count(it->first) && it->second < generation_) {
        sink_->Forget(ARCPROF_SOURCE_ALLOC, it->first);
        it = kept_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [key, block] : blocks) {
      if (auto found = kept_.find(block.key); found != kept_.end()) found->second = generation_;
    }
    ++generation_;
    ReadCounters();
  }

  void Detach() override {
    links_.clear();
    if (spaces_ != nullptr) spaces_->SetMappingObserver(this, nullptr);
    spaces_ = nullptr;
  }

  Result<void> CloseWindow(RecordContext&, model::Profile& window, bool last) override {
    auto delta = [](uint64_t now_value, uint64_t& reported) {
      const uint64_t d = now_value >= reported ? now_value - reported : now_value;
      reported = now_value;
      return static_cast<int64_t>(d);
    };
    window.counters["alloc.samples"] = delta(counters_[ARCPROF_ALLOC_CTR_SAMPLED], reported_[ARCPROF_ALLOC_CTR_SAMPLED]);
    window.counters["alloc.lost_samples"] = delta(counters_[ARCPROF_ALLOC_CTR_LOST], reported_[ARCPROF_ALLOC_CTR_LOST]);
    window.counters["alloc.blocks_untracked"] =
        delta(counters_[ARCPROF_ALLOC_CTR_UNTRACKED], reported_[ARCPROF_ALLOC_CTR_UNTRACKED]);
    window.counters["alloc.blocks_freed"] = delta(counters_[ARCPROF_ALLOC_CTR_FREED], reported_[ARCPROF_ALLOC_CTR_FREED]);
    window.counters["alloc.failed"] = delta(counters_[ARCPROF_ALLOC_CTR_FAILED], reported_[ARCPROF_ALLOC_CTR_FAILED]);
    window.counters["alloc.records"] = static_cast<int64_t>(records_);
    window.counters["alloc.blocks_of_exited_processes"] = static_cast<int64_t>(exited_blocks_);
    window.counters["alloc.inuse_unattributed_bytes"] = static_cast<int64_t>(inuse_unattributed_);
    window.counters["alloc.rate_bytes"] = static_cast<int64_t>(options_.rate);
    window.counters["alloc.processes_not_covered"] = static_cast<int64_t>(not_covered_);
    spdlog::debug("--alloc: {} records, counters sampled {} lost {} untracked {} freed {} failed {}", records_,
                  counters_[0], counters_[1], counters_[2], counters_[3], counters_[4]);
    records_ = exited_blocks_ = inuse_unattributed_ = 0;
    not_covered_ = 0;
    if (last) {
      Detach();
      if (sink_ != nullptr) sink_->Route(ARCPROF_SOURCE_ALLOC, nullptr);
      skel_.reset();
    }
    return {};
  }

  size_t HeldBytes() const override { return kept_.size() * 48; }

 private:
  // Probes the libc open at `fd` (`path`: its name in messages).
  Result<void> AttachLibc(int fd, const std::string& path) {
    const std::string by_fd = "/proc/self/fd/" + std::to_string(fd);
    struct Probe {
      bpf_program* prog;
      const char* func;
      bool ret;
    };
    const Probe probes[] = {
        {skel_->progs.on_malloc, "malloc", false},          {skel_->progs.on_malloc_ret, "malloc", true},
        {skel_->progs.on_calloc, "calloc", false},          {skel_->progs.on_malloc_ret, "calloc", true},
        {skel_->progs.on_realloc, "realloc", false},        {skel_->progs.on_malloc_ret, "realloc", true},
        {skel_->progs.on_posix_memalign, "posix_memalign", false},
        {skel_->progs.on_posix_memalign_ret, "posix_memalign", true},
        {skel_->progs.on_memalign, "aligned_alloc", false}, {skel_->progs.on_malloc_ret, "aligned_alloc", true},
        {skel_->progs.on_memalign, "memalign", false},      {skel_->progs.on_malloc_ret, "memalign", true},
        {skel_->progs.on_free, "free", false},
    };
    for (const Probe& p : probes) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = p.ret, .func_name = p.func);
      bpf_link* link = bpf_program__attach_uprobe_opts(p.prog, -1, by_fd.c_str(), 0, &opts);
      if (link == nullptr) {
        return MakeError("--alloc: cannot probe " + std::string(p.func) + " in " + EscapeControl(path) + ": " +
                         strerror(errno));
      }
      links_.emplace_back(link);
    }
    spdlog::debug("--alloc: probing {}", path);
    return {};
  }

  // Process pid allocates with the malloc `path` defines: libc's probes see
  // none of it. Said once per process (the first kMaxNamed by name),
  // counted in alloc.processes_not_covered.
  void NotCovered(uint32_t pid, const std::string& path) {
    if (not_covered_pids_.size() >= kMaxFiles) not_covered_pids_.clear();
    not_covered_pids_.insert(pid);
    ++not_covered_;
    if (options_.quiet || named_ >= kMaxNamed) return;
    ++named_;
    const size_t slash = path.rfind('/');
    fprintf(stderr,
            "arcprof: --alloc: process %u allocates with a malloc of its own (in %s): its allocations are not "
            "covered%s\n",
            pid, EscapeControl(path.substr(slash + 1)).c_str(),
            named_ == kMaxNamed ? " (further ones: counter alloc.processes_not_covered)" : "");
  }

  // Stochastic rounding: the sum over many samples stays unbiased.
  uint64_t Round(double v) {
    const double floor = std::floor(v);
    return static_cast<uint64_t>(floor) + (std::uniform_real_distribution<double>(0, 1)(rng_) < v - floor ? 1 : 0);
  }

  void ReadCounters() {
    for (uint32_t i = 0; i < ARCPROF_ALLOC_CTR_COUNT; ++i) counters_[i] = SumPerCpuCounter(skel_->maps.alloc_counters, i);
  }

  struct SkelDeleter {
    void operator()(alloc* s) const { alloc__destroy(s); }
  };
  struct LinkDeleter {
    void operator()(bpf_link* l) const { bpf_link__destroy(l); }
  };
  AllocSourceOptions options_;
  std::unique_ptr<alloc, SkelDeleter> skel_;
  std::vector<std::unique_ptr<bpf_link, LinkDeleter>> links_;
  StackSink* sink_ = nullptr;
  std::string own_libc_;  // arcprof's own libc.so.6, as its maps name it
  std::mt19937_64 rng_;
  std::unordered_map<uint64_t, uint64_t> kept_;  // sample key -> generation it was last live in
  uint64_t generation_ = 1;
  static constexpr size_t kMaxFiles = 65536, kMaxNamed = 10;
  AddressSpaces* spaces_ = nullptr;
  uint32_t self_pid_ = static_cast<uint32_t>(getpid());
  std::set<std::pair<dev_t, ino_t>> probed_;  // the libc files probed
  std::map<std::pair<dev_t, ino_t>, bool> own_malloc_;  // file -> defines malloc
  std::unordered_set<uint32_t> not_covered_pids_;       // processes said not covered
  size_t named_ = 0;
  uint64_t records_ = 0, exited_blocks_ = 0, inuse_unattributed_ = 0, not_covered_ = 0;
  uint64_t counters_[ARCPROF_ALLOC_CTR_COUNT] = {}, reported_[ARCPROF_ALLOC_CTR_COUNT] = {};
};

}  // namespace

std::unique_ptr<RecordExtension> MakeAllocSource(AllocSourceOptions options) {
  return std::make_unique<AllocSource>(options);
}

}  // namespace arcprof
