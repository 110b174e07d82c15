// `arcprof store info --store DIR`: the windows of a continuous store (start,
// end, samples, lost samples, processes, sent), its size on disk and its
// retention settings, as text or JSON.
#pragma once

#include <ostream>
#include <string>

namespace arcprof::store {
class WindowStore;
}  // namespace arcprof::store

namespace arcprof::reports {

// Returns the exit code; a window that cannot be read is listed as unreadable.
int PrintStoreInfo(const store::WindowStore& store, const std::string& format, std::ostream& out,
                   std::ostream& err);

}  // namespace arcprof::reports
