# A loopback HTTP/1.1 server that reads each request (Content-Length or chunked body) and
# answers 200 after DELAY seconds; keeps connections alive. Usage: slow_server.py PORT DELAY
import socket, sys, threading, time
port, delay = int(sys.argv[1]), float(sys.argv[2])
def read_request(f):
    line = f.readline()
    if not line: return False
    headers = {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""): break
        k, _, v = h.decode().partition(":"); headers[k.strip().lower()] = v.strip()
    if "content-length" in headers: f.read(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int(f.readline().split(b";")[0], 16)
            f.read(size + 2) if size else None
            if size == 0:
                while f.readline() not in (b"\r\n", b"\n", b""): pass
                break
    return True
def serve(c):
    f = c.makefile("rb")
    while read_request(f):
        time.sleep(delay)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(16)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
