# The line-number program of the Python runtime tests: hot() has two hot
# lines, the first three times as costly as the second (the same call, three
# times and once). The first argument is how many seconds to run ("cpu=S":
# S seconds of CPU time, at most 4 S of wall time; as split.py, and like it
# for every version, 2.7 included).
import sys
import time

try:
    range = xrange  # 2.7: no list per call
except NameError:
    pass
# time.thread_time and time.monotonic are 3.7+ and 3.3+: 2.7 and 3.6 take
# the thread's CPU time from getrusage(RUSAGE_THREAD), and wall time.
thread_time = getattr(time, "thread_time", None)
if thread_time is None:
    import resource

    def thread_time():
        r = resource.getrusage(getattr(resource, "RUSAGE_THREAD", 1))
        return r.ru_utime + r.ru_stime
monotonic = getattr(time, "monotonic", time.time)


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
