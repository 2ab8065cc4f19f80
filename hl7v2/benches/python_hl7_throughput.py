"""Times python-hl7's `hl7.parse` over the corpus directory given, normalised as the Rust
benchmark normalises it (CR terminators, no byte order mark, no blank lines).

Prints: <bytes of one pass> <bytes per second, best of 7 passes of at least 200 ms>.
"""

import glob
import os
import re
import sys
import time

import hl7

messages = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.hl7"))):
    with open(path, encoding="utf-8-sig", newline="") as file:
        text = file.read()
    lines = [line for line in re.split(r"[\r\n]", text) if line.strip()]
    messages.append("\r".join(lines) + "\r")

size = sum(len(message.encode("utf-8")) for message in messages)
best = 0.0
for _ in range(7):
    started = time.perf_counter()
    passes = 0
    while time.perf_counter() - started < 0.2:
        for message in messages:
            hl7.parse(message)
        passes += 1
    best = max(best, size * passes / (time.perf_counter() - started))
print(size, best)
