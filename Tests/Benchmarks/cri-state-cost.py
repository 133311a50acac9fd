#!/usr/bin/env python3
"""What keeping the time bases costs `tail --parse cri --state` (run by hand; CI does not run it):
writes LINES CRI lines GAP_NS apart by the runtime's clock, runs BINARY's `tail --from-start
--state --parse cri --to loki` into its own `streamup sink` until the state file's position is the
file's end, and prints the wall and CPU seconds and the largest state file seen (read every
100 ms). Usage: cri-state-cost.py BINARY LINES GAP_NS (Documentation/Receivers.md, "The same
times after a restart without a spool")."""
import json, os, signal, subprocess, sys, time
binary, lines, gap_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = subprocess.check_output(["mktemp", "-d"]).decode().strip()
log = os.path.join(d, "0.log")
t0 = 1795600800 * 10**9
with open(log, "w") as f:
    for n in range(lines):
        t = t0 + n * gap_ns
        s, ns = divmod(t, 10**9)
        f.write(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%09dZ stdout F line %07d of a container's log\n" % (ns, n))
size = os.path.getsize(log)
sink = subprocess.Popen([binary, "sink", "-p", "0", "--no-hash"], stdout=subprocess.PIPE, text=True)
url = sink.stdout.readline().split()[-1]
state = os.path.join(d, "state.json")
start = time.time()
p = subprocess.Popen([binary, "tail", "--from-start", "--state", state, "--parse", "cri", "--to", "loki", log, url], stderr=subprocess.DEVNULL)
biggest = 0
while time.time() - start < 300:
    time.sleep(0.1)
    try:
        text = open(state).read()
        biggest = max(biggest, len(text))
        saved = json.loads(text)
    except Exception:
        continue
    if str(size) in text and any(pos.get("offset") == size for pos in saved.get("positions", saved.get("sources", [])) if isinstance(pos, dict)):
        break
elapsed = time.time() - start
p.send_signal(signal.SIGTERM)
_, status, usage = os.wait4(p.pid, 0)
sink.send_signal(signal.SIGTERM); sink.wait()
print(f"{binary}: {lines} lines {size} bytes, gap {gap_ns} ns: {elapsed:.2f} s, CPU {usage.ru_utime + usage.ru_stime:.2f} s, largest state file {biggest} bytes")
subprocess.call(["rm", "-rf", d])
