#include "loader/record.h"
#include "loader/record_extension.h"
#include "loader/alloc_source.h"
#include "loader/offcpu_source.h"
#include "loader/ptt_extension.h"
#include "loader/runtime_extension.h"
#include "loader/java_trace.h"
#include "loader/trace_extension.h"

namespace arcprof {
namespace {
std::vector<RecordExtensionMaker>& AddedMakers() {
  static std::vector<RecordExtensionMaker> makers;
  return makers;
}
}  // namespace

void AddRecordExtension(RecordExtensionMaker make) { AddedMakers().push_back(std::move(make)); }

std::vector<std::unique_ptr<RecordExtension>> MakeRecordExtensions(const RecordOptions& options) {
  std::vector<std::unique_ptr<RecordExtension>> extensions;
  // One line per extension; each gets only the options it reads.
  // Value sources first: they attach at once (a JVM attach takes seconds).
  if (OffCpuEnabled(options)) extensions.push_back(MakeOffCpuSource({options.off_cpu_max_keys}));
  if (options.alloc) {
    extensions.push_back(MakeAllocSource({options.alloc_rate, options.alloc_max_blocks,
                                          options.pids.empty() && options.command.empty(), options.quiet}));
  }
  if (PttEnabled(options)) extensions.push_back(MakePttExtension(PttExtensionOptionsOf(options)));
  extensions.push_back(MakeRuntimeExtension({options.runtimes, JavaAttachEnabled(options), options.quiet}));
  if (!options.trace.root.empty()) {
    extensions.push_back(options.trace.java
                             ? MakeJavaTraceExtension(options.trace, !options.command.empty(), options.quiet)
                             : MakeTraceExtension(options.trace, options.command.empty() ? "" : options.command[0],
                                                  options.quiet));
  }
  for (const RecordExtensionMaker& make : AddedMakers()) {
    if (auto ext = make(options)) extensions.push_back(std::move(ext));
  }
  return extensions;
}

}  // namespace arcprof
