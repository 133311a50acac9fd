#!/usr/bin/env python3
"""Many files, one shipper: CPU seconds and peak RSS of `streamup tail` beside syslog-ng's
wildcard file source, in one run (run by hand; CI does not run it).

Workload: FILES files (default 100), each appended LINES_PER_SECOND lines per second (default
100) of about 100 bytes, for SECONDS seconds (default 20), by this script (one write(2) per
line, O_APPEND, the way a logging program writes). Each shipper follows the directory with a
wildcard and posts to the same receiver, `streamup sink --no-hash --output DIR`, on 127.0.0.1;
the shippers run one after the other on a fresh directory each, so they never compete for the
two cores. A shipper's run ends once the receiver holds every line (or 30 s after the writer
stopped); then it gets SIGTERM, and its user+system CPU seconds and peak RSS come from
wait4(2)'s rusage, which covers all its threads.

Shippers:
  streamup          streamup tail 'DIR/*.log' URL  (acknowledged segments, the default)
  streamup-state    the same with --state FILE --spool DIR (exactly once across kill -9)
  syslog-ng         syslog-ng -F with wildcard-file(base-dir(DIR) filename-pattern("*.log")),
                    inotify (monitor-method("auto")), flags(no-parse), and the http()
                    destination batching 1,000 lines or 1 s (Debian syslog-ng-core and
                    syslog-ng-mod-http, started by hand with a config in a temporary directory)

  swift build -c release --product streamup
  python3 Tests/Benchmarks/tail-many-files.py [--files 100] [--rate 100] [--seconds 20]
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from linewriter import start_sink, write_rounds

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STREAMUP = os.path.join(ROOT, ".build", "release", "streamup")


def count_lines(directory):
    total = 0
    for name in os.listdir(directory):
        if name.endswith(".body") or name.endswith(".partial"):
            with open(os.path.join(directory, name), "rb") as body:
                total += body.read().count(b"\n")
    return total


def write_lines(directory, files, rate, seconds):
    """Appends one line to every file `rate` times a second for `seconds`; returns lines written."""
    padding = "x" * 70
    return write_rounds([os.path.join(directory, f"app{index:03d}.log") for index in range(files)], int(rate * seconds), 1.0 / rate,
                        lambda index, step: f"app{index:03d} {step:08d} {padding}")


def syslog_ng_command(work, directory, url, files):
    config = os.path.join(work, "syslog-ng.conf")
    with open(config, "w") as file:
        file.write(f"""@version: 3.38
options {{ stats-freq(0); keep-hostname(yes); }};
source s_files {{
    wildcard-file(base-dir("{directory}") filename-pattern("*.log") recursive(no)
                  monitor-method("auto") max-files({files}) log-iw-size({files * 1000}) flags(no-parse));
}};
destination d_http {{
    http(url("{url}/") method("POST") body("${{MESSAGE}}") body-suffix("\\n")
         batch-lines(1000) batch-timeout(1000));
}};
log {{ source(s_files); destination(d_http); }};
""")
    return ["syslog-ng", "-F", "--no-caps", "-f", config, "-R", os.path.join(work, "persist"),
            "-p", os.path.join(work, "pid"), "-c", os.path.join(work, "ctl")]


def run(name, command_for, args):
    work = tempfile.mkdtemp(prefix=f"tail-bench-{name}-")
    try:
        directory = os.path.join(work, "logs")
        received = os.path.join(work, "received")
        os.makedirs(directory)
        for index in range(args.files):
            open(os.path.join(directory, f"app{index:03d}.log"), "w").close()
        sink, url = start_sink(STREAMUP, received)
        errors = open(os.path.join(work, "stderr"), "w+")
        shipper = subprocess.Popen(command_for(work, directory, url), stdout=subprocess.DEVNULL, stderr=errors)
        time.sleep(1.0)  # let it start following before the first line (no measurement depends on it)
        if shipper.poll() is not None:
            errors.seek(0)
            sink.send_signal(signal.SIGTERM)
            sys.exit(f"{name} exited at start ({shipper.returncode}): {errors.read()}")
        started = time.monotonic()
        written = write_lines(directory, args.files, args.rate, args.seconds)
        deadline = time.monotonic() + 30
        while count_lines(received) < written and time.monotonic() < deadline:
            time.sleep(0.1)
        drained = time.monotonic() - started
        delivered = count_lines(received)
        shipper.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(shipper.pid, 0)
        shipper.returncode = status
        sink.send_signal(signal.SIGTERM)
        sink.wait()
        return {
            "name": name, "cpu": usage.ru_utime + usage.ru_stime, "user": usage.ru_utime, "system": usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024, "written": written, "delivered": delivered, "seconds": drained,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rate", type=int, default=100, help="lines per second per file")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--only", action="append", help="streamup, streamup-state or syslog-ng (repeatable)")
    args = parser.parse_args()
    if not os.access(STREAMUP, os.X_OK):
        sys.exit(f"{STREAMUP} is missing: swift build -c release --product streamup")
    shippers = {
        "streamup": lambda work, directory, url: [STREAMUP, "tail", directory + "/*.log", url],
        "streamup-state": lambda work, directory, url: [
            STREAMUP, "tail", "--state", os.path.join(work, "state"), "--spool", os.path.join(work, "spool"), directory + "/*.log", url],
        "syslog-ng": lambda work, directory, url: syslog_ng_command(work, directory, url, args.files),
    }
    if shutil.which("syslog-ng") is None:
        print("syslog-ng not found (apt-get install syslog-ng-core syslog-ng-mod-http): skipped", file=sys.stderr)
        del shippers["syslog-ng"]
    results = [run(name, command, args) for name, command in shippers.items() if not args.only or name in args.only]
    print(f"{args.files} files x {args.rate} lines/s x {args.seconds} s "
          f"({args.files * args.rate} lines/s, {args.files * args.rate * args.seconds} lines of 85 bytes)")
    print(f"{'shipper':<16} {'CPU s':>7} {'user':>7} {'sys':>7} {'CPU %':>6} {'peak RSS MiB':>13} {'delivered':>19}")
    for result in results:
        share = 100 * result["cpu"] / result["seconds"]
        print(f"{result['name']:<16} {result['cpu']:7.2f} {result['user']:7.2f} {result['system']:7.2f} {share:6.1f} "
              f"{result['rss_mib']:13.1f} {result['delivered']:>9} of {result['written']:<7}")


if __name__ == "__main__":
    main()
