# The 3:1 program of the Python runtime benchmark (bench/python_bench.sh) with a
# fixed amount of work: drive() calls alpha() three times per beta(), ROUNDS
# times; prints its own CPU seconds, so that a recording's slowdown is the
# ratio of two runs. Usage: python3 python_split_rate.py ROUNDS
import sys
import time


def alpha(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def beta(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def drive(rounds):
    for _ in range(rounds):
        alpha(3000)
        alpha(3000)
        alpha(3000)
        beta(3000)


start = time.process_time()
drive(int(sys.argv[1]))
print("%.4f" % (time.process_time() - start))
