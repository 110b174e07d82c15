# The 3:1 program of the Python runtime tests: drive() calls alpha() three
# times for each beta(); both have the same body. With "thread", a second
# threading.Thread runs side() -> gamma() meanwhile. The first argument is
# how many seconds to run ("cpu=S": S seconds of each thread's own CPU time,
# at most 4 S of wall time, so that a loaded machine still gives the tests
# their samples); "rounds=N" instead runs N rounds of drive() and prints its
# CPU seconds (bench/python_bench.sh: a fixed amount of work). One program
# for every version, 2.7 included (no f-strings, print of one string).
import sys
import threading
import time

sys.dont_write_bytecode = True  # no .pyc of pycompat in the source tree
from pycompat import monotonic, range, thread_time  # noqa: E402


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


def running(spec):
    """A test of whether to go on, for the calling thread."""
    if spec.startswith("rounds="):
        left = [int(spec[7:])]

        def another_round():
            left[0] -= 1
            return left[0] >= 0

        return another_round
    if spec.startswith("cpu="):
        cpu = float(spec[4:])
        start, end = thread_time(), monotonic() + 4 * cpu
        return lambda: thread_time() - start < cpu and monotonic() < end
    end = monotonic() + float(spec)
    return lambda: monotonic() < end


def drive(spec):
    go_on = running(spec)
    while go_on():
        alpha(3000)
        alpha(3000)
        alpha(3000)
        beta(3000)


def side(spec):
    go_on = running(spec)
    while go_on():
        gamma(3000)


if len(sys.argv) > 1 and sys.argv[1].startswith("rounds="):
    process_time = getattr(time, "process_time", time.clock if sys.version_info < (3,) else None)
    start = process_time()
    drive(sys.argv[1])
    print("%.4f" % (process_time() - start))
    sys.exit(0)
spec = sys.argv[1] if len(sys.argv) > 1 else "3"
if len(sys.argv) > 2 and sys.argv[2] == "thread":
    t = threading.Thread(target=side, args=(spec,))
    t.start()
    drive(spec)
    t.join()
else:
    drive(spec)
