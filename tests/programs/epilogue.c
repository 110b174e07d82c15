/* A leaf whose epilogue pops rbp while gcc's CFI still says "rbp saved at
 * CFA-N" (the slot is then below the stack pointer): samples there must still
 * unwind to main. Usage: epilogue [iterations] */
#include <stdlib.h>

__attribute__((noinline)) long f(long x)
{
	__asm__ volatile("" ::: "rbx", "rbp", "r12", "r13", "r14", "r15");
	return x * 3 + 1;
}

__attribute__((noinline)) long g(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += f(i);
	return s;
}

int main(int argc, char **argv)
{
	volatile long r = g(argc > 1 ? atol(argv[1]) : 3000000000L);
	(void)r;
	return 0;
}
