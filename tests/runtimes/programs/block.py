# The 3:1 program of the off-CPU Python tests: drive() calls alpha() three
# times for each beta(); each blocks in time.sleep for the same 2 ms, so the
# time off CPU under drive -> alpha is three times that under drive -> beta.
# The first argument is how many seconds to run.
import sys
import time

from pycompat import monotonic


def alpha(seconds):
    time.sleep(seconds)


def beta(seconds):
    time.sleep(seconds)


def drive(seconds):
    end = monotonic() + seconds
    while monotonic() < end:
        alpha(0.002)
        alpha(0.002)
        alpha(0.002)
        beta(0.002)


drive(float(sys.argv[1]) if len(sys.argv) > 1 else 2)
