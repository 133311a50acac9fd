"""What the tail benchmarks share (imported by tail-copytruncate.py and tail-many-files.py):
the receiver, `streamup sink --output DIR`, and the writer of the followed files, which appends
lines the way a logging program writes them (one write(2) per line, O_APPEND) on a schedule
that does not drift.
"""
import os
import subprocess
import sys
import threading
import time


def start_sink(streamup, output):
    """Starts `streamup sink` storing into `output`; returns the process and its URL."""
    sink = subprocess.Popen([streamup, "sink", "--port", "0", "--no-hash", "--output", output],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = sink.stdout.readline().strip()
    if not line.startswith("listening on "):
        sys.exit(f"the sink did not start: {line!r}")
    # Keep reading its request lines so its stdout never fills.
    threading.Thread(target=lambda: [None for _ in sink.stdout], daemon=True).start()
    return sink, line[len("listening on "):]


def write_rounds(paths, rounds, interval, line, after_round=None):
    """Appends one line to each file of `paths` per round, `line(index, round)` (without its
    newline), a round every `interval` seconds from the first; calls `after_round(round)` after
    each round (a rotation, say). Returns how many lines it wrote."""
    descriptors = [os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) for path in paths]
    written = 0
    start = time.monotonic()
    try:
        for number in range(rounds):
            for index, fd in enumerate(descriptors):
                os.write(fd, (line(index, number) + "\n").encode())
                written += 1
            if after_round:
                after_round(number)
            delay = start + (number + 1) * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing of the writer
    finally:
        for fd in descriptors:
            os.close(fd)
    return written
