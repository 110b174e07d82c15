#include "loader/record.h"
#include "loader/record_extension.h"
#include "loader/java_extension.h"
#include "loader/ptt_extension.h"

namespace arcprof {

std::vector<std::unique_ptr<RecordExtension>> MakeRecordExtensions(const RecordOptions& options) {
  std::vector<std::unique_ptr<RecordExtension>> extensions;
  // One line per extension, e.g.:
  //   if (options.ptt) extensions.push_back(MakePttExtension(options));
  if (PttEnabled(options)) extensions.push_back(MakePttExtension(options));
  extensions.push_back(MakeJavaExtension(options));
  return extensions;
}

}  // namespace arcprof
