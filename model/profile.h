// The in-memory profile: the arcflow model for sampled stacks. A profile is a
// frame table and a thread table, each thread holding its call tree; a node holds the
// occurrences n and one value per declared value type (samples, off-CPU ns, ...) consumed
// in the node itself. Captures
// on disk are exactly this (see docs/capture-format.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/frame.h"
#include "model/flat_index.h"
#include "model/process_identity.h"
#include "model/ptt_data.h"

namespace arcprof::model {

struct FrameRecord {
  // The module: an id in the frame table's module table (FrameTable::module),
  // path or pseudo name ("vmlinux", "[vdso]", "JITCODE", module name); 0 is "".
  // One path is held once however many frames it has.
  uint32_t module = 0;
  std::string symbol;   // demangled name, or "" when unknown
  uint64_t address = 0; // symbol start (module-relative for native, absolute for kernel/JIT)
  FrameKind kind = FrameKind::kUnknown;
  UnknownReason reason = UnknownReason::kNone;
  bool inlined = false;

  bool operator==(const FrameRecord&) const = default;
};

// How a frame is shown (the one display name of every view): model/frame_name.h.

struct FrameRecordHash {
  size_t operator()(const FrameRecord& f) const;
};

// The frames of a profile and the module paths they name, each held once.
class FrameTable {
 public:
  FrameTable();
  // The id of module `path`, adding it when new; "" is 0.
  uint32_t InternModule(std::string_view path);
  const std::string& module(uint32_t id) const { return modules_[id]; }
  size_t module_count() const { return modules_.size(); }
  // The module path of `frame` (a frame of this table).
  const std::string& module_of(const FrameRecord& frame) const { return modules_[frame.module]; }

  // Returns the id of an equal frame, adding it when new. Ids are dense from 0.
  // frame.module is a module id of this table.
  uint32_t Intern(const FrameRecord& frame);
  // The same for a frame naming its module by path.
  uint32_t Intern(std::string_view module, FrameRecord frame);
  // This table's id of every module of `other` (interned by path, once each).
  std::vector<uint32_t> ImportModules(const FrameTable& other);
  // Interns frame `id` of `other`, its module mapped through `module_map`
  // (from ImportModules).
  uint32_t Import(const FrameTable& other, uint32_t id, std::span<const uint32_t> module_map);
  // A table with this one's modules (same ids) and no frames.
  FrameTable ModulesOnly() const;

  const FrameRecord& at(uint32_t id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }
  const std::vector<FrameRecord>& all() const { return frames_; }

 private:
  std::vector<FrameRecord> frames_;
  std::unordered_map<FrameRecord, uint32_t, FrameRecordHash> index_;
  std::vector<std::string> modules_;
  // Hash of the path -> module id: the path itself is held only in modules_.
  std::unordered_multimap<size_t, uint32_t> module_index_;
};

// One kind of value a call-tree node holds, like pprof's sample_type: a name
// ("samples", "offcpu", later PMU counters) and its unit ("count",
// "nanoseconds"). A profile declares its value types (Profile::value_types);
// value i of every node is of declared type i.
struct ValueType {
  std::string name;
  std::string unit;
  bool operator==(const ValueType&) const = default;
};
// Value type 0 is always the sampled one ("samples"); the views' default
// metric, whose unit the views print as its name.
inline constexpr size_t kSamplesValue = 0;

// One thread's call tree. Node 0 is the thread itself (frame kNoFrame); every
// other node is one frame under its parent, and a parent always precedes its
// children. A node holds n and one value per value type; the nodes are read
// through nodes() and value(), and written only through the operations below,
// so every tree keeps that shape.
class CallTree {
 public:
  static constexpr uint32_t kNoFrame = 0xffffffffu;
  struct Node {
    uint32_t parent = 0;
    uint32_t frame = kNoFrame;
    uint64_t n = 0;  // occurrences ending in this node (samples or calls)
  };

  CallTree();
  static constexpr uint32_t kNoNode = 0xffffffffu;
  // Finds or creates the child of `parent` for `frame`.
  uint32_t Child(uint32_t parent, uint32_t frame);
  // The child of `parent` for `frame`, or kNoNode.
  uint32_t FindChild(uint32_t parent, uint32_t frame) const;
  // Adds a stack given root first; the leaf node gets n += count and value 0
  // (samples) += resource. Returns the leaf.
  uint32_t AddStack(std::span<const uint32_t> frames_root_first, uint64_t count, uint64_t resource);
  uint32_t AddStack(std::span<const uint32_t> frames_root_first, uint64_t count) {
    return AddStack(frames_root_first, count, count);
  }
  // Adds to one node (a leaf AddStack or Child returned): n, and value
  // `type` (a declared value type index).
  void Add(uint32_t node, uint64_t n, size_t type, uint64_t value);
  // Adds every node of `other` to this tree, its frames mapped through
  // `frame_map` (other's frame id -> this tree's; empty = the same ids) and
  // its value types through `type_map` (empty = the same indices).
  void Merge(const CallTree& other, std::span<const uint32_t> frame_map = {},
             std::span<const size_t> type_map = {});
  // Renumbers the frames (old id -> new id); nodes that then hold the same
  // frame under one parent become one.
  void RemapFrames(std::span<const uint32_t> frame_map);
  // Replaces value `type` of every node with f(node id, value).
  void TransformValues(size_t type, const std::function<uint64_t(uint32_t, uint64_t)>& f);
  // The subtrees under the outermost nodes whose frame satisfies is_root,
  // each re-rooted directly under node 0 (matching subtrees merge). With
  // `under_top` the children of node 0 (the threads of a tree that holds
  // several, as arcflow's) stay: each subtree is re-rooted under a copy of its
  // top ancestor, which keeps none of its own n and values and exists only
  // when something below it matched; is_root is not asked about top nodes.
  CallTree Rerooted(const std::function<bool(uint32_t frame)>& is_root, bool under_top = false) const;
  // Turns per-node values (indexed by node, e.g. value(i, type) or a metric's)
  // into cumulative ones: each node's plus everything below it.
  void Accumulate(std::vector<uint64_t>& values) const;
  // Value `type` of every node plus everything below it, indexed by node.
  std::vector<uint64_t> Cumulative(size_t type = kSamplesValue) const;
  // The depth of every node, indexed by node: node 0 is 0, its children 1.
  std::vector<uint32_t> Depths() const;
  // What the bucket of a pruned subtree counts as its n: the n of the whole
  // subtree (every occurrence it held), or only the n of the pruned top nodes
  // (the occurrences of the contexts that were cut: arcflow's "[pruned]").
  enum class BucketN { kSubtree, kTopNodes };
  // A copy without the subtrees whose top node fails keep(node): each such
  // subtree becomes one child of its parent with frame `bucket_frame`, holding
  // the subtree's summed values and n (see BucketN). A subtree that would
  // give its bucket no n and no value leaves no bucket.
  CallTree Pruned(const std::function<bool(uint32_t node)>& keep, uint32_t bucket_frame,
                  BucketN bucket_n = BucketN::kSubtree) const;
  // Room for `nodes` nodes without rehashing.
  void Reserve(size_t nodes);
  // The bytes the tree holds: nodes, value columns and child index, with
  // their vectors' spare capacity.
  size_t MemoryBytes() const;

  const std::vector<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }
  // Value `type` of node `node` (0 for a type this tree never got).
  uint64_t value(uint32_t node, size_t type) const {
    return type < values_.size() ? values_[type][node] : 0;
  }
  // How many value types this tree has columns for (<= the profile's).
  size_t value_columns() const { return values_.size(); }
  // Σ value `type` over the tree.
  uint64_t total(size_t type = kSamplesValue) const;

 private:
  std::vector<uint64_t>& Column(size_t type);
  // The child index's key of node `node`: (parent << 32 | frame).
  uint64_t KeyOf(uint32_t node) const {
    return static_cast<uint64_t>(nodes_[node].parent) << 32 | nodes_[node].frame;
  }

  std::vector<Node> nodes_;
  // values_[type][node]: one column per value type, as long as nodes_.
  std::vector<std::vector<uint64_t>> values_;
  // Every node but node 0, found by (parent << 32 | frame) read back from
  // nodes_: 4 bytes a slot, at most half the slots used.
  FlatIdIndex child_index_;
};

// The children of every node of a tree in one array (one allocation for the
// whole tree, not a list per node): node v's children are of(v), in creation
// order until Sort. Every view that walks a tree top-down reads it.
class ChildLists {
 public:
  ChildLists() = default;  // no tree: of() must not be called
  explicit ChildLists(const CallTree& tree);
  // Sorts each node's children by less(a, b) (node ids).
  template <typename Less>
  void Sort(Less less) {
    for (size_t v = 0; v + 1 < begin_.size(); ++v) {
      std::sort(list_.begin() + begin_[v], list_.begin() + begin_[v + 1], less);
    }
  }
  std::span<const uint32_t> of(uint32_t node) const {
    return {list_.data() + begin_[node], list_.data() + begin_[node + 1]};
  }

 private:
  std::vector<uint32_t> begin_;  // node v's children: list_[begin_[v] .. begin_[v + 1])
  std::vector<uint32_t> list_;
};

struct ThreadRecord {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;          // thread name (15 chars from the kernel, or a runtime's thread name)
  std::string process_comm;  // the process (thread group leader) name
  std::string cmdline;       // process command line, arguments separated by spaces
  // The machine, in a merge of several hosts (`arcprof merge`): every view puts
  // it above the process. "" in a capture of one machine.
  std::string host;
  // Its process's container, pod, service, cgroup and namespaced pid
  // (model/process_identity.h); empty in captures older than schema 6.
  ProcessIdentity identity;
  // When its process started: CLOCK_BOOTTIME ns at the 10 ms of
  // /proc/PID/stat's starttime (what `ps` shows as START); 0 when unknown (in
  // captures older than schema 8, and in folded records). With the pid, it
  // tells apart the processes that held one pid: windows and captures merge
  // threads by (host, pid, tid, process start).
  uint64_t process_start_ns = 0;
  // What the thread did: its call tree.
  CallTree tree;
};

// The records a one-shot `record` folds the threads of long-exited processes
// into (loader/recording_session.cpp, RecordOptions::max_thread_records): one
// per process name, pid kExitedProcessesPid, process name "[exited
// processes]", comm the name, tid ExitedProcessesTid(name) (the next free one,
// NextExitedProcessesTid, when another name of the recording has it); past
// the recording's name limit, one "[other processes]" record of tid 0. The tid
// is the name's in every recording, and merges (MergeProfile) sum these
// records by name whatever their tids.
inline constexpr uint32_t kExitedProcessesPid = 0xffffffffu;
// A stable function of the name (FNV-1a), never 0 or 0xffffffff.
uint32_t ExitedProcessesTid(std::string_view name);
// The tid after `tid` in the same range (1 .. 0xfffffffe, wrapping).
uint32_t NextExitedProcessesTid(uint32_t tid);

struct CaptureMeta {
  std::string host;
  std::string kernel;
  uint64_t start_monotonic_ns = 0;
  uint64_t end_monotonic_ns = 0;
  uint64_t start_unix_ns = 0;
  std::string event = "cpu-clock";
  uint64_t frequency_hz = 999;
  std::string command_line;  // the arcprof command line
  std::string target;        // "system", "pids 12,13" or "command ./prog args"
  std::string call_graph = "fp";
  std::string arcprof_version;
  int schema_version = 0;  // filled by the reader; the writer writes the current one
  // arcflow's bindings are not kept here: the unit of base/cum is the metric's
  // (value type 0's name, "samples", unless --metric says otherwise), n means
  // samples and the consumers are functions in every capture.
};

struct Profile {
  CaptureMeta meta;
  FrameTable frames;
  std::vector<ThreadRecord> threads;  // each with its call tree
  // What the nodes' values are, value i of every node being of type i; type
  // kSamplesValue always first.
  std::vector<ValueType> value_types = {{"samples", "count"}};
  // Counters such as "lost_samples", "unknown_frames.<reason>", "truncated_stacks.<reason>".
  std::map<std::string, int64_t> counters;
  // Module -> GNU build-id (lowercase hex) where the file had one.
  std::map<std::string, std::string> build_ids;
  // Per-thread time and interrupt/idle accounting (record --ptt); see model/ptt_data.h.
  PttData ptt;

  // The index of value type `name`, if declared.
  std::optional<size_t> ValueIndex(std::string_view name) const;
  // The index of value type `type`, declaring it when new.
  size_t DeclareValue(const ValueType& type);

  // Returns the index of the latest record of thread (pid, tid), whatever
  // its process start, adding one (start 0) when there is none: a
  // recording's window holds one process per pid at a time (the recorder
  // folds an earlier one's records away when a pid is reused).
  uint32_t ThreadIndex(uint32_t pid, uint32_t tid);
  // The record of thread (pid, tid) of machine `host` ("" in a capture of one
  // machine) in the process that started at `process_start_ns`
  // (ThreadRecord::process_start_ns), adding it when new: how captures and
  // windows are summed (a reused pid's processes stay apart).
  uint32_t ThreadIndex(const std::string& host, uint32_t pid, uint32_t tid, uint64_t process_start_ns);
  // The same for the thread `like` names (its host, pid, tid, process start).
  uint32_t ThreadIndex(const ThreadRecord& like) {
    return ThreadIndex(like.host, like.pid, like.tid, like.process_start_ns);
  }
  // Sums threads into group records and removes them: for each thread,
  // group_of returns the record it goes into (pid, tid and names; found by
  // pid and tid, made from these when new), or nothing to keep the thread.
  // Trees are summed node by node, so every total by frame, stack, process
  // name and value type stays what it was; only the split among the folded
  // threads is gone. Thread indices change. Returns how many were folded.
  // (One-shot `record` under thread churn: loader/recording_session.cpp.)
  size_t FoldThreads(const std::function<std::optional<ThreadRecord>(const ThreadRecord&)>& group_of);
  // True when threads carry their host (a merge of captures from several machines).
  bool multi_host() const { return !host_thread_index_.empty(); }
  uint64_t total_samples() const;

  // Gives frames new content (a name found later, e.g. through debuginfod):
  // rename returns the new record for a frame, or nullopt to keep it. Frames
  // that become equal are merged, and so are the tree nodes that then hold
  // the same frame under one parent. Returns the number of frames renamed.
  size_t RenameFrames(
      const std::function<std::optional<FrameRecord>(const FrameRecord&)>& rename);

 private:
  // The latest record of each (pid, tid) (host ""), and of each (host, pid,
  // tid); earlier_[i]: the record of the same ids before record i (another
  // process that held the pid), kNoThread for none.
  static constexpr uint32_t kNoThread = UINT32_MAX;
  uint32_t* LatestSlot(const std::string& host, uint32_t pid, uint32_t tid, bool* inserted);
  uint32_t AddThread(uint32_t* slot, const std::string& host, uint32_t pid, uint32_t tid, uint64_t process_start_ns);
  void Reindex();
  std::unordered_map<uint64_t, uint32_t> thread_index_;
  std::map<std::tuple<std::string, uint32_t, uint32_t>, uint32_t> host_thread_index_;
  std::vector<uint32_t> earlier_;
};

}  // namespace arcprof::model
