# The line-number program of the Python runtime tests: hot() has two hot
# lines, the first three times as costly as the second (the same call, three
# times and once). The first argument is how many seconds to run ("cpu=S":
# S seconds of CPU time, at most 4 S of wall time; as split.py, and like it
# for every version, 2.7 included).
import sys
import time

sys.dont_write_bytecode = True  # no .pyc of pycompat in the source tree
from pycompat import monotonic, range, thread_time  # noqa: E402


def hot(data, spec):
    if spec.startswith("cpu="):
        cpu = float(spec[4:])
        start, end = thread_time(), monotonic() + 4 * cpu
        go_on = lambda: thread_time() - start < cpu and monotonic() < end
    else:
        end = monotonic() + float(spec)
        go_on = lambda: monotonic() < end
    while go_on():
        a = sum(data); a = sum(data); a = sum(data)  # line A
        b = sum(data)  # line B
    return a + b


hot(list(range(20000)), sys.argv[1] if len(sys.argv) > 1 else "3")
