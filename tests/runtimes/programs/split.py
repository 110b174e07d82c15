# The 3:1 program of the Python runtime tests: drive() calls alpha() three
# times for each beta(); both have the same body. With "thread", a second
# threading.Thread runs side() -> gamma() meanwhile. The first argument is
# how many seconds to run.
import sys
import threading
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


def gamma(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def drive(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        alpha(3000)
        alpha(3000)
        alpha(3000)
        beta(3000)


def side(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        gamma(3000)


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
if len(sys.argv) > 2 and sys.argv[2] == "thread":
    t = threading.Thread(target=side, args=(seconds,))
    t.start()
    drive(seconds)
    t.join()
else:
    drive(seconds)
