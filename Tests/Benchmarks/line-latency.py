#!/usr/bin/env python3
"""Line-to-receiver latency of streamup at a slow, steady rate (Benchmarks/RESULTS.md).

    python3 Tests/Benchmarks/line-latency.py .build/release/streamup [--rate 10] [--seconds 30] [-- STREAMUP_OPTIONS...]

Starts a minimal HTTP/1.1 receiver that splits request bodies into lines *as the bytes arrive*
(chunked or Content-Length, keep-alive, answers 200), runs streamup against it, writes one line
per 1/rate s into its stdin, each stamped with CLOCK_MONOTONIC ns when written, and prints p50,
p99 and max of arrival minus stamp, and how many requests carried them.
"""
import socket, subprocess, sys, threading, time

args = sys.argv[1:]
extra = []
if "--" in args:
    extra = args[args.index("--") + 1:]
    args = args[:args.index("--")]
binary = args[0]
rate = float(args[args.index("--rate") + 1]) if "--rate" in args else 10.0
seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 30.0

latencies = []
requests = 0
lock = threading.Lock()


def serve(connection):
    global requests
    reader = connection.makefile("rb", buffering=0)
    partial = b""

    def take(data):
        nonlocal partial
        now = time.monotonic_ns()
        partial += data
        *lines, partial = partial.split(b"\n")
        with lock:
            for line in lines:
                if line[:1].isdigit():
                    latencies.append((now - int(line.split(b" ")[0])) / 1e6)

    def read_line():
        line = b""
        while not line.endswith(b"\n"):
            byte = reader.read(1)
            if not byte:
                raise EOFError
            line += byte
        return line

    try:
        while True:
            head = []
            while True:
                line = read_line()
                if line in (b"\r\n", b"\n"):
                    break
                head.append(line.decode("latin-1").strip())
            fields = {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip() for h in head[1:] if ":" in h}
            if fields.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    size = int(read_line().split(b";")[0], 16)
                    if size == 0:
                        read_line()
                        break
                    remaining = size
                    while remaining:
                        data = reader.read(min(remaining, 65536))
                        take(data)
                        remaining -= len(data)
                    read_line()
            else:
                remaining = int(fields.get("content-length", "0"))
                while remaining:
                    data = reader.read(min(remaining, 65536))
                    if not data:
                        raise EOFError
                    take(data)
                    remaining -= len(data)
            with lock:
                requests += 1
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    except (EOFError, ConnectionError):
        connection.close()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
port = listener.getsockname()[1]


def accept():
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()


threading.Thread(target=accept, daemon=True).start()
child = subprocess.Popen([binary] + extra + [f"http://127.0.0.1:{port}/ingest"], stdin=subprocess.PIPE)
count = int(rate * seconds)
start = time.monotonic()
for index in range(count):
    target = start + index / rate
    delay = target - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    child.stdin.write(f"{time.monotonic_ns()} line {index} ".encode() + b"x" * 60 + b"\n")
    child.stdin.flush()
child.stdin.close()
child.wait()
values = sorted(latencies)
if len(values) != count:
    print(f"only {len(values)} of {count} lines arrived", file=sys.stderr)
    sys.exit(1)
pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]
print(f"{count} lines at {rate:g}/s in {requests} requests: p50 {pick(0.5):.1f} ms, p99 {pick(0.99):.1f} ms, max {values[-1]:.1f} ms")
