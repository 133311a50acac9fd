#!/usr/bin/env python3
"""logrotate's copytruncate under `streamup tail`: how many lines arrive twice, how many are lost
(run by hand; CI does not run it).

Two workloads, each run RUNS times into `streamup sink --output DIR` on 127.0.0.1:

  directory  README's example: the directory is followed (`streamup tail --from-start DIR/`), so
             the copies land in it. A writer appends 600 lines to app.log (one write(2) per line,
             O_APPEND, 1,000 lines/s); after lines 200 and 400 a copytruncate as logrotate
             does it with `rotate 2`: app.log.1 renamed to app.log.2, `cp app.log app.log.1`,
             `truncate -s 0 app.log`.
  twenty     20 files written together (`DIR/*.log`; one line to each in turn, a round every
             2 ms, 30 rounds); right after round 15, f05.log is copied to f05.log.1 and
             truncated, as above.

Lost: lines that one of the files holds at the end (the followed files and their copies) but
that did not arrive. (A line written between the copy and the truncation is in no file: it
counts as neither.) Duplicates: arrivals beyond the first of a line.

  swift build --product streamup
  python3 Tests/Benchmarks/tail-copytruncate.py [--runs 5] [--streamup .build/debug/streamup]
"""
import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from linewriter import start_sink, write_rounds

VERBOSE = subprocess.DEVNULL
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stored(output):
    """The lines the sink stored (the merged stream of a segmented upload)."""
    lines = []
    for name in sorted(os.listdir(output)):
        if name.startswith("stream-") and name.endswith(".body"):
            with open(os.path.join(output, name), "rb") as body:
                lines += body.read().decode().splitlines()
    return lines


def copytruncate(path):
    if os.path.exists(path + ".1"):
        os.replace(path + ".1", path + ".2")
    subprocess.run(["cp", path, path + ".1"], check=True)
    subprocess.run(["truncate", "-s", "0", path], check=True)


def held(directory):
    lines = set()
    for name in os.listdir(directory):
        with open(os.path.join(directory, name)) as file:
            lines.update(file.read().splitlines())
    return lines


def run(streamup, workload):
    with tempfile.TemporaryDirectory() as work:
        logs, output = os.path.join(work, "logs"), os.path.join(work, "received")
        os.makedirs(logs)
        os.makedirs(output)
        sink, url = start_sink(streamup, output)
        pattern = logs + "/" if workload == "directory" else logs + "/*.log"
        names = ["app"] if workload == "directory" else ["f%02d" % i for i in range(20)]
        for name in names:
            open(os.path.join(logs, name + ".log"), "w").close()
        tail = subprocess.Popen([streamup, "tail", "-v", "--from-start", "--segment-seconds", "100ms", pattern, url],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        following = threading.Semaphore(0)

        def watch_stderr():
            for line in tail.stderr:
                if VERBOSE is None:
                    sys.stderr.write(line)
                if line.startswith("streamup: following "):
                    following.release()
        threading.Thread(target=watch_stderr, daemon=True).start()
        for _ in names:  # until it follows every file: what it never saw cannot be known
            following.acquire()
        rotated, rounds, interval, after = ("app", 600, 0.001, (199, 399)) if workload == "directory" else ("f05", 30, 0.002, (14,))
        write_rounds([os.path.join(logs, name + ".log") for name in names], rounds, interval,
                     lambda index, number: "%s line %d" % (names[index], number),
                     lambda number: copytruncate(os.path.join(logs, rotated + ".log")) if number in after else None)
        expected = held(logs)
        deadline = time.time() + 20
        while time.time() < deadline and not expected.issubset(stored(output)):
            time.sleep(0.1)
        time.sleep(1)  # anything sent twice arrives meanwhile
        tail.send_signal(signal.SIGTERM)
        tail.wait()
        sink.send_signal(signal.SIGTERM)
        sink.wait()
        lines = stored(output)
        counts = collections.Counter(lines)
        return sum(n - 1 for n in counts.values()), len(expected - set(lines)), len(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--streamup", default=os.path.join(ROOT, ".build", "debug", "streamup"))
    parser.add_argument("--workload", choices=("directory", "twenty"), action="append")
    parser.add_argument("--verbose", action="store_true", help="show streamup tail -v's stderr")
    arguments = parser.parse_args()
    global VERBOSE
    VERBOSE = None if arguments.verbose else subprocess.DEVNULL
    for workload in arguments.workload or ("directory", "twenty"):
        results = [run(arguments.streamup, workload) for _ in range(arguments.runs)]
        print("%-9s duplicates %s  lost %s  (lines arrived: %s)" % (
            workload, [r[0] for r in results], [r[1] for r in results], [r[2] for r in results]))


if __name__ == "__main__":
    main()
