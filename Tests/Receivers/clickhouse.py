#!/usr/bin/env python3
"""A throw-away ClickHouse server for receiver tests, started by hand.

Debian bookworm ships ClickHouse 18.16 (`apt-get install clickhouse-server clickhouse-client`).
This script runs `/usr/sbin/clickhouse-server` directly (no systemd, no init script) with its
config, users, data, tmp and logs inside one directory, listening on free loopback ports only.

Command line (all commands take --dir D, the server's own directory):

  clickhouse.py start --dir D [--table DDL]... [--user NAME] [--timeout S] [--stdin-eof-stops]
                     [--zookeeper] [--drop-answers N]
      Writes D/config.xml and D/users.xml, starts the server, waits for GET /ping, creates the
      tables (default: `logs (message String)` and `t (n UInt64)`, both MergeTree), then prints
      exactly `http://127.0.0.1:PORT` as its first stdout line and keeps running until SIGTERM,
      SIGINT, `stop --dir D` or (with --stdin-eof-stops) end of its standard input. On the way out
      it stops the server (SIGTERM, then SIGKILL after 20 s) and exits 0. A server that dies on
      its own makes it exit 1. Timings go to stderr. --zookeeper starts Debian's ZooKeeper first
      (a free loopback port, data in D/zookeeper) and points the server at it, with the macros
      {shard}=1 and {replica}=r1, for ReplicatedMergeTree tables. --drop-answers N prints the URL
      of a proxy instead, which forwards each request and drops every Nth answer to a POST.
  clickhouse.py stop --dir D      Ends the `start` process of D and waits until it has gone.
  clickhouse.py query --dir D SQL Runs SQL over HTTP; prints the answer; exit 1 on an HTTP error.
  clickhouse.py url --dir D       Prints the URL of the running server of D.

From Python: `start(dir) -> Server` (server.url, server.query(sql), server.stop()).

Facts about 18.16 (measured here, see README in this folder for the numbers):
- `Content-Encoding: gzip` and `deflate` request bodies are decoded whatever
  `enable_http_compression` says (that setting governs compressed *responses*); an unknown
  encoding answers 500 "Unknown Content-Encoding of HTTP request".
- A JSONEachRow body cut mid-line answers HTTP 500 (Code 33, "Unexpected end of stream while
  parsing JSONEachRow format") and, with default settings, stores none of its rows: the body is
  squashed into blocks of min_insert_block_size_rows (1,048,545) rows before anything is written.
- The HTTP body is read in ~1 MiB buffers, so rows of a slow live body become visible only when
  1 MiB has arrived *and* a block is complete (defaults: ~1 M rows) or when the body ends.

Thread safety: a command-line tool; `Server` objects are used from one thread.
"""

import argparse
import http.client
import os
import signal
import socket
import socketserver
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER_BINARY = "/usr/sbin/clickhouse-server"
DEFAULT_TABLES = [
    "logs (message String) ENGINE = MergeTree ORDER BY tuple()",
    "t (n UInt64) ENGINE = MergeTree ORDER BY n",
]
STOP_GRACE_SECONDS = 20.0


def free_ports(count):
    """Ports the kernel hands out for port 0 on 127.0.0.1, held open together so they differ."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


ZOOKEEPER_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"  # Debian's `zookeeper`


class ZooKeeper:
    """A standalone ZooKeeper (Debian's `zookeeper` package) on a free loopback port, its data in
    DIR/zookeeper, for Replicated*MergeTree tables (they keep their block hashes there, which is
    how ClickHouse drops an identical insert).

    Thread safety: use from one thread.
    """

    def __init__(self, directory, timeout=60.0):
        data = os.path.join(directory, "zookeeper")
        os.makedirs(data, exist_ok=True)
        self.port = free_ports(1)[0]
        config = os.path.join(data, "zoo.cfg")
        with open(config, "w") as f:
            f.write(f"tickTime=2000\ndataDir={data}\nclientPort={self.port}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n")
        log = open(os.path.join(data, "stdout-stderr.log"), "ab")
        self.process = subprocess.Popen(
            ["java", "-cp", ZOOKEEPER_CLASSPATH, "org.apache.zookeeper.server.ZooKeeperServerMain", config],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if self.ruok():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"zookeeper: no imok within {timeout:g} s (see {data}/stdout-stderr.log)")

    def ruok(self):
        """Whether a client session opens: `ruok` answers `imok` before the server takes
        sessions (ClickHouse's first tries then fail with "ZooKeeperServer not running")."""
        import struct

        # A ConnectRequest (protocol 0, no zxid seen, 30 s, new session, empty 16-byte password).
        body = struct.pack(">iqiqi", 0, 0, 30000, 0, 16) + bytes(16)
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(struct.pack(">i", len(body)) + body)
                answer = s.recv(64)
                # ConnectResponse: length, protocol, timeout, session id (non-zero when opened).
                return len(answer) >= 20 and struct.unpack(">q", answer[12:20])[0] != 0
        except OSError:
            return False

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def write_config(directory, http_port, tcp_port, interserver_port, zookeeper_port=None):
    for sub in ("data", "tmp", "log", "user_files", "format_schemas"):
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
    d = os.path.abspath(directory)
    zookeeper = "" if zookeeper_port is None else (
        f"  <zookeeper><node><host>127.0.0.1</host><port>{zookeeper_port}</port></node></zookeeper>\n"
        "  <macros><shard>1</shard><replica>r1</replica></macros>\n")
    config = f"""<?xml version="1.0"?>
<yandex>
  <logger>
    <level>information</level>
    <log>{d}/log/server.log</log>
    <errorlog>{d}/log/server.err.log</errorlog>
    <size>10M</size>
    <count>1</count>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http_port}</http_port>
  <tcp_port>{tcp_port}</tcp_port>
  <interserver_http_port>{interserver_port}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <max_concurrent_queries>20</max_concurrent_queries>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <mlock_executable>false</mlock_executable>
{zookeeper}</yandex>
"""
    users = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
"""
    with open(os.path.join(directory, "config.xml"), "w") as f:
        f.write(config)
    with open(os.path.join(directory, "users.xml"), "w") as f:
        f.write(users)


def http_query(url, sql, timeout=60.0):
    """POSTs sql to the server; returns (status, body text)."""
    request = urllib.request.Request(url + "/", data=sql.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def ping(port):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
        connection.request("GET", "/ping")
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        return answer.status == 200 and body.strip() == b"Ok."
    except OSError:
        return False


def _child_setup(uid, gid):
    """Runs in the server child before exec: dies with its parent, optionally drops privileges."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)  # loaded before fork: after setuid the
    except OSError:  # interpreter's own files may be unreadable
        libc = None
    PR_SET_PDEATHSIG = 1

    def setup():
        os.setsid()
        if gid is not None:
            os.setgroups([])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
        # After the credential change: changing uid/gid clears the parent-death signal.
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return setup


class Server:
    """One running clickhouse-server in its own directory.

    Thread safety: use from one thread.
    """

    def __init__(self, directory, process, http_port, started_in, zookeeper=None):
        self.zookeeper = zookeeper
        self.directory = directory
        self.process = process
        self.http_port = http_port
        self.url = f"http://127.0.0.1:{http_port}"
        self.started_in = started_in

    def query(self, sql):
        status, body = http_query(self.url, sql)
        if status != 200:
            raise RuntimeError(f"clickhouse: HTTP {status} for {sql!r}: {body.strip()}")
        return body

    def stop(self):
        """SIGTERM, wait up to STOP_GRACE_SECONDS, then SIGKILL; returns seconds taken."""
        t0 = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.zookeeper is not None:
            self.zookeeper.stop()
        return time.monotonic() - t0


def start(directory, tables=None, user=None, timeout=60.0, zookeeper=False):
    """Starts a server in directory (created if missing) and returns it once /ping answers;
    with `zookeeper`, a ZooKeeper first, which the server uses for Replicated tables."""
    os.makedirs(directory, exist_ok=True)
    directory = os.path.abspath(directory)
    keeper = ZooKeeper(directory, timeout) if zookeeper else None
    try:
        return _start(directory, tables, user, timeout, keeper)
    except BaseException:
        if keeper is not None:
            keeper.stop()
        raise


def _start(directory, tables, user, timeout, keeper):
    uid = gid = None
    if user is not None:
        import pwd

        entry = pwd.getpwnam(user)
        uid, gid = entry.pw_uid, entry.pw_gid
    last_error = "no attempt"
    for _attempt in range(3):  # a port taken between free_ports() and bind() makes a retry
        http_port, tcp_port, interserver_port = free_ports(3)
        write_config(directory, http_port, tcp_port, interserver_port, keeper.port if keeper else None)
        if uid is not None:
            for root, dirs, files in os.walk(directory):
                for name in dirs + files:
                    os.chown(os.path.join(root, name), uid, gid)
            os.chown(directory, uid, gid)
        log = open(os.path.join(directory, "log", "stdout-stderr.log"), "ab")
        t0 = time.monotonic()
        process = subprocess.Popen(
            [SERVER_BINARY, f"--config-file={directory}/config.xml"],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            preexec_fn=_child_setup(uid, gid),
        )
        log.close()
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if ping(http_port):
                server = Server(directory, process, http_port, time.monotonic() - t0, keeper)
                for ddl in DEFAULT_TABLES if tables is None else tables:
                    server.query("CREATE TABLE IF NOT EXISTS " + ddl)
                return server
            time.sleep(0.02)
        if process.poll() is None:
            process.kill()
            process.wait()
            last_error = f"no answer to /ping within {timeout:g} s"
        else:
            last_error = f"server exited with status {process.returncode}"
        last_error += f" (see {directory}/log/server.err.log)"
    raise RuntimeError("clickhouse: could not start: " + last_error)


class AnswerDroppingProxy:
    """A loopback HTTP proxy in front of the server that forwards every request whole and waits
    for the server's answer, then drops every `every`th POST's answer (the connection closes
    unanswered): the server stored the insert, the client never learns it. GETs (queries) are
    always answered. Bodies must come with Content-Length (as streamup sends segments).

    Thread safety: one thread per connection; `posts` is guarded by `lock`.
    """

    def __init__(self, target_port, every):
        import http.server
        import threading

        proxy = self
        self.lock = threading.Lock()
        self.posts = 0
        self.dropped = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def relay(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if len(body) < length:
                    # The client gave the request up before its body ended: nothing to forward.
                    self.close_connection = True
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", target_port, timeout=300)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("connection", "host", "transfer-encoding")}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                if self.command == "POST":
                    with proxy.lock:
                        proxy.posts += 1
                        drop = proxy.posts % every == 0
                        proxy.dropped += drop
                    if drop:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("connection", "content-length", "transfer-encoding", "keep-alive"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = relay

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def _pid_file(directory):
    return os.path.join(directory, "supervisor.pid")


def command_start(args):
    stop_requested = []

    def on_signal(signum, _frame):
        stop_requested.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    t0 = time.monotonic()
    try:
        server = start(args.dir, tables=args.table or None, user=args.user, timeout=args.timeout,
                       zookeeper=args.zookeeper)
    except (RuntimeError, OSError) as error:
        print(str(error), file=sys.stderr)
        return 1
    proxy = None
    url = server.url
    if args.drop_answers:
        proxy = AnswerDroppingProxy(server.http_port, args.drop_answers)
        url = f"http://127.0.0.1:{proxy.port}"
    with open(_pid_file(args.dir), "w") as f:
        f.write(f"{os.getpid()}\n")
    with open(os.path.join(args.dir, "url"), "w") as f:
        f.write(url + "\n")
    print(url, flush=True)
    print(
        f"clickhouse: /ping answered {server.started_in:.3f} s after exec, tables ready after "
        f"{time.monotonic() - t0:.3f} s (server pid {server.process.pid})",
        file=sys.stderr,
        flush=True,
    )
    if args.stdin_eof_stops:
        import threading

        def watch_stdin():
            while sys.stdin.buffer.read(4096):
                pass
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch_stdin, daemon=True).start()
    status = 0
    while not stop_requested:
        if server.process.poll() is not None:
            print(f"clickhouse: server exited by itself with status {server.process.returncode}",
                  file=sys.stderr)
            status = 1
            break
        time.sleep(0.1)
    if proxy is not None:
        proxy.stop()
        print(f"clickhouse: the proxy dropped {proxy.dropped} of {proxy.posts} answers to POST",
              file=sys.stderr, flush=True)
    took = server.stop()
    try:
        os.unlink(_pid_file(args.dir))
    except FileNotFoundError:
        pass
    print(f"clickhouse: server stopped in {took:.3f} s", file=sys.stderr, flush=True)
    return status


def command_stop(args):
    try:
        with open(_pid_file(args.dir)) as f:
            pid = int(f.read().strip())
    except FileNotFoundError:
        print(f"clickhouse: nothing running in {args.dir} (no supervisor.pid)", file=sys.stderr)
        return 1
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return 0
    deadline = time.monotonic() + STOP_GRACE_SECONDS + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return 0
        if not os.path.exists(_pid_file(args.dir)):
            return 0
        time.sleep(0.05)
    print(f"clickhouse: supervisor {pid} still running after SIGTERM", file=sys.stderr)
    return 1


def _url(directory):
    with open(os.path.join(directory, "url")) as f:
        return f.read().strip()


def command_query(args):
    status, body = http_query(_url(args.dir), args.sql)
    sys.stdout.write(body)
    return 0 if status == 200 else 1


def command_url(args):
    print(_url(args.dir))
    return 0


def main(argv):
    # A parent may start us with SIGTERM and SIGINT blocked (the Swift test runner does), and a
    # blocked mask is inherited by the server too: unblock them first, or a stop never arrives.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser(description="Run a throw-away ClickHouse 18.16 server.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start")
    p.add_argument("--dir", required=True)
    p.add_argument("--table", action="append", help="DDL after CREATE TABLE; repeatable")
    p.add_argument("--user", help="run the server as this user (when started as root)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--stdin-eof-stops", action="store_true")
    p.add_argument("--drop-answers", type=int, default=0, metavar="N",
                   help="print the URL of a proxy in front of the server that forwards each "
                        "request and drops every Nth answer to a POST (the insert is stored)")
    p.add_argument("--zookeeper", action="store_true",
                   help="start Debian's ZooKeeper too, for Replicated*MergeTree tables")
    p.set_defaults(run=command_start)
    p = sub.add_parser("stop")
    p.add_argument("--dir", required=True)
    p.set_defaults(run=command_stop)
    p = sub.add_parser("query")
    p.add_argument("--dir", required=True)
    p.add_argument("sql")
    p.set_defaults(run=command_query)
    p = sub.add_parser("url")
    p.add_argument("--dir", required=True)
    p.set_defaults(run=command_url)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
