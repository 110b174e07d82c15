# Prints, for a few code objects, the line table as arcprof reads it
# (co_lnotab before 3.10, co_linetable after), co_firstlineno, and the line
# CPython itself gives each instruction offset (co_lines() from 3.10,
# dis.findlinestarts before): the reference PythonLine is checked against.
# Runs on 2.7 too (its instructions are 1 or 3 bytes: every offset).
from __future__ import print_function

import binascii
import dis
import sys


def branchy(n):
    x = 0
    for i in range(n):
        x += i * i % 7

        if x > 1000:
            x -= 1000
    return x


def long_jumps(a):
    s = [
        a,
        a + 1,
    ]
    # many lines apart
    return (s,
            a)


def table(co):
    if sys.version_info >= (3, 10):
        return co.co_linetable
    return co.co_lnotab


def lines(co):
    out = {}
    if sys.version_info >= (3, 10):
        for start, end, line in co.co_lines():
            if line is None:
                continue
            for off in range(start, end, 2):
                out[off] = line
    else:
        starts = list(dis.findlinestarts(co))
        line = co.co_firstlineno
        at = 0
        step = 2 if sys.version_info >= (3, 6) else 1
        for off in range(0, len(co.co_code), step):
            while at < len(starts) and starts[at][0] <= off:
                line = starts[at][1]
                at += 1
            out[off] = line
    return out


module = compile(open(__file__).read(), __file__, "exec")
for co in (branchy.__code__, long_jumps.__code__, module):
    print(co.co_firstlineno, binascii.hexlify(table(co)).decode("ascii"),
          " ".join("%d:%d" % kv for kv in sorted(lines(co).items())))
