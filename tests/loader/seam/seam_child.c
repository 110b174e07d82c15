// The seam test's workload: seam_caller() calls seam_event() N times (the
// test source's uprobe), nothing else in the program does.
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) void seam_event(int i) { __asm__ volatile("" ::"r"(i) : "memory"); }

__attribute__((noinline)) void seam_caller(int n) {
  for (int i = 0; i < n; ++i) {
    seam_event(i);
    if (i % 50 == 49) usleep(2000);  // the ring is drained every 100 ms
  }
}

int main(int argc, char** argv) {
  seam_caller(argc > 1 ? atoi(argv[1]) : 1000);
  return 0;
}
