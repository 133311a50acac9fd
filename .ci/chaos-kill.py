#!/usr/bin/env python3
"""Soak test, run by hand (not by CI): `streamup tail --state --spool` killed with SIGKILL again
and again while a writer appends numbered lines to a log and the sink resets a connection every
300 kB; then a last run finishes. Checks that every line reached the sink exactly once (the
saved position carries its stream offset, so a restart skips what the spool already holds).

    swift build -c release && python3 .ci/chaos-kill.py [--resumable] [--kills N]

Exit status 0 when no line is missing or duplicated."""
import glob, os, random, re, shutil, signal, subprocess, sys, tempfile, threading, time

here = os.path.dirname(os.path.abspath(__file__))
binary = os.path.join(here, '..', '.build', 'release', 'streamup')
args = sys.argv[1:]
kills = 12
if '--kills' in args:
    kills = int(args[args.index('--kills') + 1]); del args[args.index('--kills'):args.index('--kills') + 2]
work = tempfile.mkdtemp(prefix='streamup-chaos-')
log, state, spool, out = (os.path.join(work, n) for n in ('app.log', 'state', 'spool', 'sink'))
os.makedirs(out)
sink = subprocess.Popen([binary, 'sink', '--port', '0', '--output', out, '--drop-after', '300000', '--drop-every'],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = re.search(r'(http://\S+)', sink.stdout.readline()).group(1)

written = [0]
stop = threading.Event()
def writer():
    with open(log, 'a') as f:
        while not stop.is_set():
            for _ in range(200):
                f.write('line %08d %s\n' % (written[0], 'x' * 60)); written[0] += 1
            f.flush(); time.sleep(0.005)
thread = threading.Thread(target=writer); thread.start()

command = [binary, 'tail', '--from-start', '--state', state, '--spool', spool, '--retries', 'forever',
           '--segment-seconds', '200ms', '--segment-bytes', '256k'] + args + [log, url]
for _ in range(kills):
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.uniform(0.3, 1.2))
    child.send_signal(signal.SIGKILL); child.wait()
stop.set(); thread.join()

child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
size = os.path.getsize(log)
deadline = time.time() + 120
while time.time() < deadline:
    saved = open(state).read() if os.path.exists(state) else ''
    match = re.search(r'"offset":(\d+)', saved)
    if match and int(match.group(1)) == size and not glob.glob(os.path.join(spool, '*.spool')):
        break
    time.sleep(0.2)
child.send_signal(signal.SIGTERM); status = child.wait()
sink.send_signal(signal.SIGTERM); sink.wait()

streams = glob.glob(os.path.join(out, 'stream-*.body'))
data = b''.join(open(f, 'rb').read() for f in sorted(streams, key=os.path.getmtime))
numbers = [int(line.split()[1]) for line in data.split(b'\n')[:-1]]
seen = set(numbers)
missing = [n for n in range(written[0]) if n not in seen]
print(f'lines {written[0]} ({size} bytes), kills {kills}, last exit {status}, '
      f'stored {len(data)} bytes, missing {len(missing)}, duplicated {len(numbers) - len(seen)}')
shutil.rmtree(work)
sys.exit(0 if not missing and len(numbers) == len(seen) and status == 0 else 1)
