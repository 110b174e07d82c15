# What split.py and lines.py need from every Python version they run on, 2.7
# included: time.thread_time and time.monotonic are 3.7+ and 3.3+, so 2.7 and
# 3.6 take the thread's CPU time from getrusage(RUSAGE_THREAD) and wall time
# from time.time; range is 2.7's xrange (no list per call).
import time

try:
    range = xrange
except NameError:
    range = range

thread_time = getattr(time, "thread_time", None)
if thread_time is None:
    import resource

    def thread_time():
        r = resource.getrusage(getattr(resource, "RUSAGE_THREAD", 1))
        return r.ru_utime + r.ru_stime

monotonic = getattr(time, "monotonic", time.time)
