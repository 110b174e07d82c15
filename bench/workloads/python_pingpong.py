# tests/programs/ptt_pingpong.c in Python, for bench/offcpu_overhead.sh
# (PYTHON=...): two processes pass one byte back and forth over two pipes,
# every switch with Python frames on the thread going off CPU (<module> ->
# main -> ping|pong), so that --off-cpu runs the interpreter walk at each.
# Prints "python_pingpong round_trips=N seconds=S rate=R cpu_ns_per_trip=C"
# to stderr. Usage: python3 python_pingpong.py ROUND_TRIPS [same|split]
import os
import sys
import time


def ping(rfd, wfd, n):
    for _ in range(n):
        os.write(wfd, b"x")
        os.read(rfd, 1)


def pong(rfd, wfd, n):
    for _ in range(n):
        if not os.read(rfd, 1):
            return
        os.write(wfd, b"x")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    pin = sys.argv[2] if len(sys.argv) > 2 else ""
    if pin not in ("", "same", "split"):
        sys.stderr.write("python_pingpong: pinning must be same or split, not %s\n" % pin)
        sys.exit(2)
    if pin:
        os.sched_setaffinity(0, {0})
    ping_r, ping_w = os.pipe()
    pong_r, pong_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(ping_w)
        os.close(pong_r)
        if pin == "split":
            os.sched_setaffinity(0, {1})
        pong(ping_r, pong_w, n)
        os._exit(0)
    os.close(ping_r)
    os.close(pong_w)
    start, cpu = time.monotonic(), time.process_time()
    ping(pong_r, ping_w, n)
    seconds = time.monotonic() - start
    os.waitpid(child, 0)
    child_cpu = os.times().children_user + os.times().children_system
    cpu_ns = (time.process_time() - cpu + child_cpu) * 1e9 / n
    sys.stderr.write("python_pingpong round_trips=%d seconds=%.4f rate=%.1f cpu_ns_per_trip=%.1f\n"
                     % (n, seconds, n / seconds, cpu_ns))


main()
