#include "loader/record.h"
#include "loader/record_extension.h"
#include "loader/java_extension.h"
#include "loader/ptt_extension.h"
#include "loader/runtime_extension.h"

namespace arcprof {

std::vector<std::unique_ptr<RecordExtension>> MakeRecordExtensions(const RecordOptions& options) {
  std::vector<std::unique_ptr<RecordExtension>> extensions;
  // One line per extension; each gets only the options it reads.
  if (PttEnabled(options)) extensions.push_back(MakePttExtension(PttExtensionOptionsOf(options)));
  extensions.push_back(MakeJavaExtension(JavaAttachEnabled(options), options.quiet));
  extensions.push_back(MakeRuntimeExtension());
  return extensions;
}

}  // namespace arcprof
