# A python3 workload for bench/capture_size_bench.sh: byte-compiles a copy of
# the standard library (compileall), parses it with ast and round-trips JSON.
# Runs for SECONDS of its own CPU time (not wall time: a loaded machine gives the
# same number of samples). Usage: python3 python_workload.py SCRATCH_DIR SECONDS
import ast
import compileall
import json
import os
import shutil
import sys
import sysconfig
import time

scratch, seconds = sys.argv[1], float(sys.argv[2])
stdlib = sysconfig.get_paths()["stdlib"]
copy = os.path.join(scratch, "lib")
shutil.copytree(stdlib, copy, ignore=shutil.ignore_patterns(
    "site-packages", "dist-packages", "test", "tests", "idlelib", "__pycache__", "*.so"), symlinks=True)
files = sorted(os.path.join(r, n) for r, _, ns in os.walk(copy) for n in ns if n.endswith(".py"))
end = time.process_time() + seconds
checksum = 0
i = 0
while time.process_time() < end:
    chunk = files[i % len(files):i % len(files) + 50]
    i += 50
    for path in chunk:
        compileall.compile_file(path, quiet=2, force=True)
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
        checksum += len(json.loads(json.dumps({"file": path, "names": names}))["names"])
print(checksum)
