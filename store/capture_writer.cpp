#include "store/capture_writer.h"

#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/atomic_file.h"
#include "store/capture_blocks.h"
#include "store/capture_checksum.h"
#include "store/capture_schema.h"
#include "store/ptt_store.h"
#include "store/sqlite_db.h"

namespace arcprof::store {
using namespace arcprof::model;
using namespace arcprof::store::capture_schema;
namespace {

// SQLite stores signed 64-bit integers; addresses and counts are unsigned and
// are stored bit cast (kernel addresses are stored negative).
int64_t ToSql(uint64_t v) { return static_cast<int64_t>(v); }

std::string Hex128() {
  std::random_device random;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const uint32_t word = random();
    for (int nibble = 0; nibble < 4; ++nibble) out += kDigits[(word >> (nibble * 4)) & 0xf];
  }
  return out;
}

// The capture writer is the SQLite helper with "<path>: cannot write capture: "
// as its context.
using Writer = SqlDb;
using Blob = SqlBlob;

std::vector<std::pair<std::string, std::string>> CaptureMetaRows(const CaptureMeta& meta) {
  return {
      {"host", meta.host},
      {"kernel", meta.kernel},
      {"start_monotonic_ns", std::to_string(meta.start_monotonic_ns)},
      {"end_monotonic_ns", std::to_string(meta.end_monotonic_ns)},
      {"start_unix_ns", std::to_string(meta.start_unix_ns)},
      {"event", meta.event},
      {"frequency_hz", std::to_string(meta.frequency_hz)},
      {"command_line", meta.command_line},
      {"target", meta.target},
      {"call_graph", meta.call_graph},
      {"arcprof_version", meta.arcprof_version},
  };
}

using CaptureOf = std::function<int64_t(const ThreadRecord&)>;

// Frames and trees as compressed blocks (store/capture_blocks.h,
// docs/capture-format.md "Blocks"); the modules, dense from 0 in the order
// frames name them, into `modules_rows`.
Result<void> FillBlocks(Writer& w, const Profile& profile, const CaptureOf& capture_of, RowBlock& modules_rows) {
  constexpr TreeLayout layout = TreeLayout::kContextSparse;
  constexpr FrameLayout frame_layout = FrameLayout::kNulEnded;
  // Frames in (module, address, symbol) order, so addresses are small steps.
  const auto& frames = profile.frames.all();
  std::vector<uint32_t> order(frames.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const FrameRecord& x = frames[a];
    const FrameRecord& y = frames[b];
    const std::string& x_module = profile.frames.module_of(x);
    const std::string& y_module = profile.frames.module_of(y);
    return std::tie(x_module, x.address, x.symbol, x.kind, x.reason, x.inlined) <
           std::tie(y_module, y.address, y.symbol, y.kind, y.reason, y.inlined);
  });
  // Profile module id -> file module id (kNone: not written yet).
  constexpr uint32_t kNone = 0xffffffffu;
  std::vector<uint32_t> module_ids(profile.frames.module_count(), kNone);
  uint32_t next_module = 0;
  std::vector<uint32_t> file_frame(frames.size());
  std::vector<BlockFrame> block_frames;
  block_frames.reserve(frames.size());
  for (uint32_t id : order) {
    const FrameRecord& f = frames[id];
    uint32_t& file_module = module_ids[f.module];
    if (file_module == kNone) {
      file_module = next_module++;
      const std::string& path = profile.frames.module(f.module);
      auto build_id = profile.build_ids.find(path);
      const std::string bid = build_id == profile.build_ids.end() ? "" : build_id->second;
      ++modules_rows.rows;
      modules_rows.texts.insert(modules_rows.texts.end(), {path, bid});
    }
    file_frame[id] = static_cast<uint32_t>(block_frames.size());
    block_frames.push_back(BlockFrame{file_module, &f});
  }
  auto frame_block = w.Prepare("INSERT INTO frame_blocks (id, raw_bytes, data) VALUES (?, ?, ?)");
  if (!frame_block) return frame_block.error();
  int64_t block_id = 0;
  std::vector<std::vector<size_t>> cuts;
  const std::vector<std::string> frame_raw = EncodeFrameBlocks(block_frames, frame_layout, &cuts);
  for (size_t b = 0; b < frame_raw.size(); ++b) {
    const std::string& raw = frame_raw[b];
    if (auto r = w.Insert(*frame_block, block_id++, static_cast<int64_t>(raw.size()), Blob{Deflate(raw, cuts[b])});
        !r) {
      return r;
    }
  }

  // Value types: type 0 (the sampled value, Profile::value_types) is stored
  // as "base", counted in value type 0's name ("samples"); then each other declared type that some node
  // has a value of (so a capture without off-CPU time declares none).
  std::vector<size_t> stored = {kSamplesValue};  // file value type -> the profile's
  for (size_t type = 1; type < profile.value_types.size(); ++type) {
    const bool any = std::any_of(profile.threads.begin(), profile.threads.end(),
                                 [&](const ThreadRecord& t) { return t.tree.total(type) > 0; });
    if (any) stored.push_back(type);
  }
  const size_t value_count = stored.size();
  auto value_type = w.Prepare("INSERT INTO value_types (id, name, unit) VALUES (?, ?, ?)");
  if (!value_type) return value_type.error();
  for (size_t i = 0; i < value_count; ++i) {
    const bool base = stored[i] == kSamplesValue;
    if (auto r = w.Insert(*value_type, static_cast<int64_t>(i),
                          base ? std::string("base") : profile.value_types[stored[i]].name,
                          base ? profile.value_types[kSamplesValue].name : profile.value_types[stored[i]].unit);
        !r) {
      return r;
    }
  }

  // Trees grouped by window (one per host), each in its blocks.
  std::map<int64_t, std::vector<FlatTree>> windows;
  for (size_t t = 0; t < profile.threads.size(); ++t) {
    const auto& nodes = profile.threads[t].tree.nodes();
    FlatTree flat;
    flat.thread = static_cast<uint32_t>(t);
    flat.parent.resize(nodes.size());
    flat.frame.resize(nodes.size());
    flat.n.resize(nodes.size());
    flat.values.resize(nodes.size() * value_count);
    for (size_t i = 0; i < nodes.size(); ++i) {
      flat.parent[i] = nodes[i].parent;
      flat.frame[i] = i == 0 ? 0 : file_frame[nodes[i].frame];
      flat.n[i] = nodes[i].n;
      for (size_t v = 0; v < value_count; ++v) {
        flat.values[i * value_count + v] = profile.threads[t].tree.value(static_cast<uint32_t>(i), stored[v]);
      }
    }
    windows[capture_of(profile.threads[t])].push_back(std::move(flat));
  }
  auto tree_block = w.Prepare("INSERT INTO tree_blocks (id, window_id, raw_bytes, data) VALUES (?, ?, ?, ?)");
  if (!tree_block) return tree_block.error();
  block_id = 0;
  for (const auto& [window_id, trees] : windows) {
    cuts.clear();
    const std::vector<std::string> tree_raw = EncodeTreeBlocks(trees, value_count, layout, &cuts);
    for (size_t b = 0; b < tree_raw.size(); ++b) {
      const std::string& raw = tree_raw[b];
      if (auto r = w.Insert(*tree_block, block_id++, window_id, static_cast<int64_t>(raw.size()),
                            Blob{Deflate(raw, cuts[b], /*numbers=*/true)});
          !r) {
        return r;
      }
    }
  }
  return {};
}

Result<void> FillCapture(Writer& w, const Profile& profile) {
  constexpr int64_t kCaptureId = 1;
  constexpr int64_t kWindowId = 1;
  auto transaction = SqlTransaction::Begin(w);
  if (!transaction) return transaction.error();
  for (const char* sql : CurrentSchemaSql()) {
    if (auto r = w.Exec(sql); !r) return r;
  }
  // The small tables' rows, written as row blocks at the end.
  RowBlock modules_rows{kModulesRows.kinds, 0, {}, {}};
  RowBlock threads_rows{ThreadsRows(kCaptureSchemaVersion).kinds, 0, {}, {}};
  RowBlock counters_rows{kCountersRows.kinds, 0, {}, {}};

  auto meta = w.Prepare("INSERT INTO meta (capture_id, key, value) VALUES (?, ?, ?)");
  if (!meta) return meta.error();
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"format", "arcprof capture"},
           {"schema_version", std::to_string(kCaptureSchemaVersion)},
       }) {
    if (auto r = w.Insert(*meta, kStoreMetaId, key, value); !r) return r;
  }

  // A merge of several machines (ThreadRecord::host) is one capture and one
  // window per host, each thread under its host's capture; otherwise one of each.
  std::vector<std::string> hosts;
  std::unordered_map<std::string, int64_t> host_ids;
  for (const ThreadRecord& t : profile.threads) {
    if (!t.host.empty() && host_ids.try_emplace(t.host, static_cast<int64_t>(hosts.size()) + 1).second) {
      hosts.push_back(t.host);
    }
  }
  if (hosts.empty()) hosts.push_back(profile.meta.host);
  auto capture_of = [&](const ThreadRecord& t) -> int64_t {
    auto it = host_ids.find(t.host);
    return it == host_ids.end() ? kCaptureId : it->second;
  };
  for (size_t h = 0; h < hosts.size(); ++h) {
    CaptureMeta host_meta = profile.meta;
    host_meta.host = hosts[h];
    for (const auto& [key, value] : CaptureMetaRows(host_meta)) {
      if (auto r = w.Insert(*meta, static_cast<int64_t>(h) + 1, key, value); !r) return r;
    }
  }

  auto capture = w.Prepare("INSERT INTO captures (id, uuid, host) VALUES (?, ?, ?)");
  if (!capture) return capture.error();
  auto window = w.Prepare("INSERT INTO windows (id, capture_id, start_ns, end_ns) VALUES (?, ?, ?, ?)");
  if (!window) return window.error();
  for (size_t h = 0; h < hosts.size(); ++h) {
    const int64_t id = static_cast<int64_t>(h) + 1;  // capture h+1 has window h+1
    if (auto r = w.Insert(*capture, id, Hex128(), hosts[h]); !r) return r;
    if (auto r = w.Insert(*window, id, id, ToSql(profile.meta.start_monotonic_ns),
                          ToSql(profile.meta.end_monotonic_ns));
        !r) {
      return r;
    }
  }

  for (const ThreadRecord& t : profile.threads) {
    ++threads_rows.rows;
    threads_rows.ints.insert(threads_rows.ints.end(),
                             {static_cast<uint64_t>(capture_of(t)), uint64_t{t.pid}, uint64_t{t.tid}});
    threads_rows.texts.insert(threads_rows.texts.end(), {t.comm, t.process_comm, t.cmdline});
    const model::ProcessIdentity& id = t.identity;
    threads_rows.ints.push_back(id.ns_pid);
    threads_rows.texts.insert(threads_rows.texts.end(), {id.container_id, id.container_runtime, id.pod_uid,
                                                         id.qos_class, id.service_name, id.cgroup});
    threads_rows.ints.push_back(t.process_start_ns);
  }

  if (auto r = FillBlocks(w, profile, capture_of, modules_rows); !r) return r;
  for (const auto& [name, value] : profile.counters) {
    ++counters_rows.rows;
    counters_rows.ints.insert(counters_rows.ints.end(), {uint64_t{kWindowId}, static_cast<uint64_t>(value)});
    counters_rows.texts.push_back(name);
  }
  auto block = w.Prepare("INSERT INTO row_blocks (id, name, raw_bytes, data) VALUES (?, ?, ?, ?)");
  if (!block) return block.error();
  int64_t id = 0;
  for (const RowBlock* rows : {&modules_rows, &threads_rows, &counters_rows}) {
    const char* name = rows == &modules_rows ? kModulesRows.name
                       : rows == &threads_rows ? kThreadsRows.name
                                               : kCountersRows.name;
    for (const std::string& raw : EncodeRowBlocks(*rows)) {
      if (auto r = w.Insert(*block, id++, std::string(name), static_cast<int64_t>(raw.size()), Blob{Deflate(raw)});
          !r) {
        return r;
      }
    }
  }
  if (profile.ptt.recorded) {
    if (auto r = WritePttTables(w, profile.ptt, kCaptureId, kWindowId); !r) return r;
  }
  // Last: the checksum of everything above, read back the way readers see it.
  auto sum = ContentChecksum(w.get());
  if (!sum) return w.Fail(sum.error().message);
  if (auto r = w.Insert(*meta, kStoreMetaId, std::string(kChecksumKey), *sum); !r) return r;
  return transaction->Commit();
}

Result<void> ValidateForWriting(const std::string& path, const Profile& profile) {
  auto fail = [&](const std::string& what) {
    return MakeError(path + ": cannot write capture: " + what, ErrorKind::kCapture);
  };
  if (profile.value_types.empty() || profile.value_types.size() > kMaxValueTypes) {
    return fail("profile declares " + std::to_string(profile.value_types.size()) + " value types");
  }
  for (size_t type = 0; type < profile.value_types.size(); ++type) {
    const ValueType& v = profile.value_types[type];
    if (v.name.empty() || v.name.size() > 64 || v.unit.size() > 64 || profile.ValueIndex(v.name) != type ||
        (type != kSamplesValue && v.name == "base")) {
      return fail("value type " + std::to_string(type) + " has an empty, long or repeated name");
    }
  }
  for (const ThreadRecord& thread : profile.threads) {
    if (thread.tree.value_columns() > profile.value_types.size()) {
      return fail("a call tree holds values of an undeclared type");
    }
    const auto& nodes = thread.tree.nodes();
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (nodes[i].parent >= i || nodes[i].frame >= profile.frames.size()) {
        return fail("call tree node " + std::to_string(i) + " has an invalid parent or frame");
      }
    }
  }
  return {};
}

}  // namespace

Result<void> WriteCapture(const std::string& path, const Profile& profile) {
  if (auto r = ValidateForWriting(path, profile); !r) return r;
  auto file = AtomicFile::Create(path);
  if (!file) return MakeError(file.error().message, ErrorKind::kCapture);
  // SQLite reopens the file by name; the empty file we created is a valid
  // empty database and keeps its 0600 mode.
  file->CloseFd();

  {
    auto db = SqlDb::OpenForWriting(file->temp_path(), path + ": cannot write capture: ");
    if (!db) return db.error();
    Writer& writer = *db;
    // The temporary file is discarded on any failure, so a rollback journal on
    // disk would buy nothing; keep it in memory so no second file is created.
    if (auto r = writer.Exec("PRAGMA journal_mode = MEMORY"); !r) return r;
    // 512-byte pages (the smallest): a capture has a dozen tables, each at least one page, and
    // its bulk is in blobs, which fill overflow pages of any size alike.
    const std::string pragmas = "PRAGMA page_size = 512; PRAGMA application_id = " +
                                std::to_string(kCaptureApplicationId) +
                                "; PRAGMA user_version = " + std::to_string(kCaptureSchemaVersion) + ";";
    if (auto r = writer.Exec(pragmas.c_str()); !r) return r;
    if (auto r = FillCapture(writer, profile); !r) return r;
    *db = SqlDb();  // close before the rename so every page is on disk
  }
  if (auto r = file->Commit(); !r) return MakeError(r.error().message, ErrorKind::kCapture);
  return {};
}

}  // namespace arcprof::store
