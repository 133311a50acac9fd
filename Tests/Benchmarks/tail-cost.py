#!/usr/bin/env python3
"""CPU, peak RSS and line latency of one shipper following FILES files written at RATE lines/s in
all (run by hand; CI does not run it). One line of results per run, so old and new binaries can
be alternated in a shell loop on a noisy machine (Benchmarks/RESULTS.md: "CPU per shipped line").

  swift build -c release --product streamup
  python3 Tests/Benchmarks/tail-cost.py --binary .build/release/streamup [--files 1] [--rate 10000] [--seconds 20]
  python3 Tests/Benchmarks/tail-cost.py --syslog-ng [--files 100]          # the same workload through syslog-ng
  python3 Tests/Benchmarks/tail-cost.py --fluent-bit [--files 100] [--fb input.Inotify_Watcher=false ...]   # through Fluent Bit
  python3 Tests/Benchmarks/tail-cost.py --binary B --prefix 'perf record -F 1999 -g -o perf.data --'

- Writer (this process): FILES files in a fresh directory, appended round-robin, one write(2) per
  100-byte line (O_APPEND), each line stamped with CLOCK_MONOTONIC ns when written, paced to
  RATE lines/s in all; `writerlag` is how far it fell behind its schedule at worst.
- Shipper: `streamup tail --from-start FILE-or-'DIR/*.log' URL [--extra options]`, started 1 s
  before the first line; or syslog-ng (`wildcard-file()` with inotify, `flags(no-parse)`,
  flow control, `http()` batching 1,000 lines or 1 s), run by hand with its own files; or Fluent Bit
  with the bench's configuration (Benchmarks' FluentBitSetup: `tail` from head with the stat watcher,
  512K reads, no fadvise → `http` as JSON lines, `Flush 1`); `--fb SECTION.KEY=VALUE` adds or
  replaces a key of [SERVICE], [INPUT] or [OUTPUT] (`--fb input.Inotify_Watcher=true
  --fb input.Buffer_Chunk_Size=32K --fb input.Buffer_Max_Size=32K --fb input.File_Cache_Advise=On`:
  Fluent Bit's own defaults).
- Receiver (this process): HTTP/1.1 with keep-alive, `Content-Length` or chunked bodies; each
  request is answered 200 as soon as its body is in, then its lines are counted (each once)
  and timed from their stamp: a line's latency is write to the end of its request.
- CPU (user, system) and peak RSS: the shipper's own, from wait4(2) after SIGTERM, once every
  line arrived (or 15 s after the writer stopped).
"""
import argparse, os, shlex, signal, socket, statistics, subprocess, sys, tempfile, threading, time, shutil

class Receiver:
    def __init__(self):
        self.sock = socket.socket(); self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0)); self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock(); self.seen = set(); self.dups = 0; self.latencies = []; self.requests = 0
        threading.Thread(target=self.accept, daemon=True).start()
    def accept(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()
    def serve(self, conn):
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line: return
                headers = {}
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b"\n", b""): break
                    k, _, v = h.decode().partition(":"); headers[k.strip().lower()] = v.strip()
                if "content-length" in headers:
                    body = f.read(int(headers["content-length"]))
                elif headers.get("transfer-encoding", "").lower() == "chunked":
                    parts = []
                    while True:
                        size = int(f.readline().split(b";")[0], 16)
                        if size == 0:
                            while f.readline() not in (b"\r\n", b"\n", b""): pass
                            break
                        parts.append(f.read(size)); f.readline()
                    body = b"".join(parts)
                else:
                    body = b""
                now = time.monotonic_ns()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                with self.lock:
                    self.requests += 1
                    for l in body.split(b"\n"):
                        i = l.find(b"seq=")
                        if i < 0: continue
                        seq = l[i+4:i+16]; t = int(l[i+19:i+38])
                        if seq in self.seen: self.dups += 1
                        else:
                            self.seen.add(seq); self.latencies.append((now - t) / 1e6)
        except Exception as e:
            print("receiver:", e, file=sys.stderr)
        finally:
            conn.close()

def stat_cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as s: fields = s.read().rsplit(")", 1)[1].split()
        return int(fields[11]) / os.sysconf("SC_CLK_TCK"), int(fields[12]) / os.sysconf("SC_CLK_TCK")
    except OSError: return None

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=""); p.add_argument("--files", type=int, default=1)
    p.add_argument("--rate", type=int, default=10000); p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--label", default=""); p.add_argument("--prefix", default="")
    p.add_argument("--extra", default="", help="extra streamup options")
    p.add_argument("--syslog-ng", action="store_true")
    p.add_argument("--fluent-bit", nargs="?", const="fluent-bit", default=None, metavar="BINARY",
                   help="run Fluent Bit (default: fluent-bit on PATH) instead of streamup")
    p.add_argument("--fb", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="a Fluent Bit setting, e.g. input.Inotify_Watcher=false, service.Flush=0.5")
    a = p.parse_args()
    if not a.syslog_ng and not a.fluent_bit and not os.access(a.binary, os.X_OK):
        sys.exit("--binary: the streamup to measure (or --syslog-ng, --fluent-bit)")
    a.label = a.label or ("syslog-ng" if a.syslog_ng else "fluent-bit" if a.fluent_bit else "streamup")
    work = tempfile.mkdtemp(prefix="shipbench-")
    logs = os.path.join(work, "logs"); os.makedirs(logs)
    names = [os.path.join(logs, f"app{i:03d}.log") for i in range(a.files)]
    for n in names: open(n, "w").close()
    r = Receiver(); url = f"http://127.0.0.1:{r.port}/"
    if a.syslog_ng:
        conf = os.path.join(work, "syslog-ng.conf")
        with open(conf, "w") as c:
            c.write(f"""@version: 3.38
options {{ stats-freq(0); }};
source s {{ wildcard-file(base-dir("{logs}") filename-pattern("*.log") recursive(no) monitor-method("auto") max-files({a.files}) log-iw-size({max(10000, a.files * 1000)}) log-fetch-limit(1000) flags(no-parse)); }};
destination d {{ http(url("{url}") method("POST") batch-lines(1000) batch-timeout(1000) body("${{MSG}}") body-suffix("\\n")); }};
log {{ source(s); destination(d); flags(flow-control); }};
""")
        cmd = ["syslog-ng", "-F", "--no-caps", "-f", conf, "-R", os.path.join(work, "p"), "-p", os.path.join(work, "pid"), "-c", os.path.join(work, "ctl")]
    elif a.fluent_bit:
        sections = {
            "service": {"Flush": "1", "Grace": "1", "Log_Level": "warn", "HTTP_Server": "Off"},
            "input": {"Name": "tail", "Path": names[0] if a.files == 1 else logs + "/*.log", "Read_from_Head": "On",
                      "Inotify_Watcher": "false", "Buffer_Chunk_Size": "512K", "Buffer_Max_Size": "512K",
                      "File_Cache_Advise": "Off"},
            "output": {"Name": "http", "Match": "*", "Host": "127.0.0.1", "Port": str(r.port), "URI": "/",
                       "Format": "json_lines"},
        }
        for setting in a.fb:
            key, _, value = setting.partition("=")
            section, _, key = key.partition(".")
            if section.lower() not in sections or not key or not value:
                sys.exit(f"--fb {setting}: expected service|input|output.KEY=VALUE")
            sections[section.lower()][key] = value
        conf = os.path.join(work, "fluent-bit.conf")
        with open(conf, "w") as c:
            for name, keys in sections.items():
                c.write(f"[{name.upper()}]\n" + "".join(f"    {k} {v}\n" for k, v in keys.items()) + "\n")
        cmd = [a.fluent_bit, "-c", conf]
    else:
        target = names[0] if a.files == 1 else logs + "/*.log"
        cmd = [a.binary, "tail", "--from-start"] + shlex.split(a.extra) + [target, url]
    cmd = shlex.split(a.prefix) + cmd
    err = open(os.path.join(work, "stderr"), "w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    time.sleep(1.0)
    fds = [os.open(n, os.O_WRONLY | os.O_APPEND) for n in names]
    pad = b"x" * 55
    total = int(a.rate * a.seconds); per_step = a.files
    steps = total // per_step; tick = per_step / a.rate
    start = time.monotonic(); seq = 0; worst = 0.0
    cpu0 = stat_cpu(proc.pid)
    for step in range(steps):
        due = start + step * tick
        delay = due - time.monotonic()
        if delay > 0: time.sleep(delay)
        else: worst = max(worst, -delay)
        for i, fd in enumerate(fds):
            os.write(fd, b"f%03d seq=%012d t=%019d %s\n" % (i, seq, time.monotonic_ns(), pad)); seq += 1
    write_end = time.monotonic()
    deadline = time.monotonic() + 15
    while len(r.seen) < seq and time.monotonic() < deadline: time.sleep(0.05)
    cpu1 = stat_cpu(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, status, usage = os.wait4(proc.pid, 0)
    with r.lock:
        lat = sorted(r.latencies); n = len(r.seen)
    q = lambda x: lat[min(len(lat) - 1, int(x * len(lat)))] if lat else float("nan")
    line_bytes = 100
    print(f"{a.label:<10} files={a.files} rate={a.rate} s={a.seconds:g} cpu={usage.ru_utime + usage.ru_stime:.2f} "
          f"user={usage.ru_utime:.2f} sys={usage.ru_stime:.2f} rss={usage.ru_maxrss / 1024:.1f}MiB "
          f"lines={n}/{seq} dup={r.dups} req={r.requests} p50={q(0.5):.0f}ms p99={q(0.99):.0f}ms max={lat[-1] if lat else 0:.0f}ms "
          f"writerlag={worst*1000:.1f}ms linebytes={line_bytes} load={os.getloadavg()[0]:.2f}", flush=True)
    err.seek(0); e = err.read()
    if e.strip(): print("  stderr:", e.strip()[:500], file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)

main()
