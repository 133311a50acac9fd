#!/usr/bin/env python3
"""`streamup tail --state` stopped and started again while its file rotates: how many lines are
lost (run by hand; CI does not run it).

A writer appends 10 lines of 90 bytes to app.log every 40 ms (about 250 lines/s) and rotates it
every --rotate-every seconds as logrotate's `create` does with `rotate GENERATIONS` (app.log.N-1
renamed to app.log.N ..., app.log renamed to app.log.1; the next write makes a new app.log).
`streamup tail --state … --spool …` is started and stopped (SIGTERM) every 3 s, so it is down
3 s out of 6; --phase puts the first rotation at that many seconds, 4.5 being the first stop and
7.5 the first start: rotations meet the starts and stops, and with rotations every 3 s a file is
made and rotated away while streamup is down. Everything goes to `streamup sink --output DIR`.

Lost: lines written that did not arrive (`--from-start`: the first run reads the file from its
start; later runs go on from the state). With one generation kept, a file rotated twice while down is
deleted, and what it had not sent with it: no reader can send those.

  swift build -c release --static-swift-stdlib --product streamup
  python3 Tests/Benchmarks/tail-restart-rotation.py [--streamup .build/release/streamup]
      [--seconds 40] [--phase 4.5] [--rotate-every 3] [--generations 2] [--no-spool]
"""
import argparse
import glob
import os
import re
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rotate(log, generations):
    for n in range(generations - 1, 0, -1):
        if os.path.exists(f"{log}.{n}"):
            os.rename(f"{log}.{n}", f"{log}.{n + 1}")
    os.rename(log, log + ".1")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--streamup", default=".build/release/streamup")
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--phase", type=float, default=4.5)
    parser.add_argument("--rotate-every", type=float, default=3)
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--no-spool", action="store_true")
    arguments = parser.parse_args()
    work = tempfile.mkdtemp(prefix="streamup-restart-rotation-")
    log = work + "/app.log"
    port = free_port()
    sink = subprocess.Popen([arguments.streamup, "sink", "-p", str(port), "-o", work + "/out"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    command = [arguments.streamup, "tail", "--from-start", "--state", work + "/state", "--segment-seconds", "200ms"]
    if not arguments.no_spool:
        command += ["--spool", work + "/spool"]
    command += [log, f"http://127.0.0.1:{port}/x"]
    stderr = open(work + "/tail.err", "w")
    tail = None
    seq = 0
    started = time.time()
    next_flip, next_rotation = started + 1.5, started + arguments.phase
    try:
        while time.time() - started < arguments.seconds:
            now = time.time()
            with open(log, "a") as file:
                for _ in range(10):
                    seq += 1
                    file.write(f"seq {seq:08d} " + "x" * 76 + "\n")
            if now >= next_rotation:
                rotate(log, arguments.generations)
                next_rotation += arguments.rotate_every
            if now >= next_flip:
                if tail is None:
                    tail = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
                else:
                    tail.send_signal(signal.SIGTERM)
                    tail.wait()
                    tail = None
                next_flip += 3
            time.sleep(0.04)
        if tail is None:
            tail = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        # Until everything written arrived, or 15 s.
        deadline = time.time() + 15
        arrived = {}
        while time.time() < deadline:
            arrived = {}
            for path in glob.glob(work + "/out/*"):
                with open(path, errors="replace") as body:
                    for line in body:
                        match = re.match(r"seq (\d+)", line)
                        if match:
                            arrived[int(match.group(1))] = arrived.get(int(match.group(1)), 0) + 1
            if all(n in arrived for n in range(1, seq + 1)):
                break
            time.sleep(0.5)
    finally:
        if tail is not None:
            tail.send_signal(signal.SIGTERM)
            tail.wait()
        sink.send_signal(signal.SIGTERM)
        sink.wait()
    lost = [n for n in range(1, seq + 1) if n not in arrived]
    twice = sum(1 for count in arrived.values() if count > 1)
    print(f"written {seq}, lost {len(lost)}, arrived twice {twice} ({work})")


if __name__ == "__main__":
    main()
