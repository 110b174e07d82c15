// C++ allocations for record --alloc (tests/loader/alloc_runtime_test.cpp).
//   alloc_new MB   new_a: new char[] / delete[] of 60% of MB MiB, new_b:
//                  std::vector<char> of 30%, keep_c: new char[] of 10%, kept
//                  to the exit. operator new (libstdc++) calls malloc, so
//                  libc's probes see them at these functions.
// Built a second time with -DOWN_MALLOC as alloc_own: the program defines
// malloc, free, calloc and realloc itself (a bump allocator), as programs
// that bring their own allocator do; libc's malloc is never called, and
// --alloc must say that this process is not covered.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef OWN_MALLOC
#include <sys/mman.h>

namespace {
char* arena = nullptr;
size_t used = 0;
constexpr size_t kArena = size_t{1} << 30;
void* Bump(size_t n) {
  if (!arena) {
    void* m = mmap(nullptr, kArena, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) abort();
    arena = static_cast<char*>(m);
  }
  n = (n + 16 + 15) & ~size_t{15};
  if (used + n > kArena) return nullptr;
  char* p = arena + used;
  used += n;
  *reinterpret_cast<size_t*>(p) = n - 16;
  return p + 16;
}
}  // namespace

extern "C" {
void* malloc(size_t n) { return Bump(n); }
void free(void*) {}
void* calloc(size_t a, size_t b) { return Bump(a * b); }  // mmap'd memory is zero, never reused
void* realloc(void* p, size_t n) {
  void* q = Bump(n);
  if (p && q) {
    const size_t old = *reinterpret_cast<size_t*>(static_cast<char*>(p) - 16);
    memcpy(q, p, old < n ? old : n);
  }
  return q;
}
}
#endif

static uint64_t state = 0x9e3779b97f4a7c15ull;
static size_t NextSize() {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return 1024 + static_cast<size_t>(state % (31 * 1024));
}

void* volatile sink;

extern "C" __attribute__((noinline)) void new_a(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = NextSize();
    char* p = new char[n];
    p[0] = 1;
    sink = p;
    delete[] p;
    done += n;
  }
}

extern "C" __attribute__((noinline)) void new_b(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = NextSize();
    std::vector<char> v(n);
    v[n - 1] = 1;
    sink = v.data();
    done += n;
  }
}

static std::vector<char*>* kept;

extern "C" __attribute__((noinline)) void keep_c(size_t bytes) {
  kept = new std::vector<char*>();
  kept->reserve(bytes / 1024 + 1);
  for (size_t done = 0; done < bytes;) {
    const size_t n = NextSize();
    char* p = new char[n];
    p[0] = 1;
    kept->push_back(p);
    done += n;
  }
}

int main(int argc, char** argv) {
  const size_t total = static_cast<size_t>(argc > 1 ? atoi(argv[1]) : 200) << 20;
  new_a(total / 10 * 6);
  new_b(total / 10 * 3);
  keep_c(total / 10);
  return 0;
}
