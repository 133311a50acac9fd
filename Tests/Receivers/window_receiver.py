#!/usr/bin/env python3
"""A slow receiver that answers several requests at once, for streamup's window of requests.

    python3 Tests/Receivers/window_receiver.py [--delay SECONDS] [--drop-answer N] [--refuse N] [--max-body BYTES]

Listens on 127.0.0.1 (a free port) and prints `listening on http://127.0.0.1:PORT` as its first
stdout line; runs until SIGTERM/SIGINT. Each request's body (Content-Length) is stored under its
`Streamup-Stream-Id` and `Streamup-Offset`, as streamup's sink de-duplicates: a body at an offset
already held is a duplicate and is dropped when identical (a different one is an error). Then it
waits `--delay` seconds before answering 204, so several requests are out at once. Request number
N (1-based, in arrival order) given by `--drop-answer` is stored, and its connection closed with
no answer (a lost answer). Request number N given by `--refuse` is answered 400 and not stored.
A request whose Content-Length is over `--max-body` has that many bytes read, is not stored, and
its connection is closed with no answer (a body limit that hangs up instead of answering 413, as
Fluent Bit's http input does once its memory limit is reached); `hung_up` counts them.

`GET /_window/state` answers JSON: {"requests": N, "at_once": A, "most_at_once": M, "errors":
[...], "streams": {ID: [[offset, length], ...]}, "duplicates": [offset, ...], "dropped":
{"offset": O, "later_out": whether another request was out or a later offset held then}}; `GET /_window/stream?id=ID` answers the bodies of ID
joined in offset order.

Thread safety: one thread per connection (ThreadingHTTPServer); shared state under `LOCK`.
"""

import argparse
import http.server
import json
import signal
import socketserver
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()
STATE = {"requests": 0, "at_once": 0, "most_at_once": 0, "errors": [], "streams": {}, "duplicates": [], "dropped": None, "refused": None, "hung_up": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        with LOCK:
            if url.path == "/_window/state":
                streams = {name: sorted([offset, len(body)] for offset, body in held.items()) for name, held in STATE["streams"].items()}
                body = json.dumps(
                    {
                        "requests": STATE["requests"], "at_once": STATE["at_once"], "most_at_once": STATE["most_at_once"],
                        "errors": STATE["errors"], "streams": streams, "duplicates": STATE["duplicates"], "dropped": STATE["dropped"], "refused": STATE["refused"], "hung_up": STATE["hung_up"],
                    }
                ).encode()
            elif url.path == "/_window/stream":
                name = urllib.parse.parse_qs(url.query).get("id", [""])[0]
                held = STATE["streams"].get(name, {})
                body = b"".join(held[offset] for offset in sorted(held))
            else:
                body = b"not found\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        if ARGS.max_body and length > ARGS.max_body:
            self.rfile.read(ARGS.max_body)
            with LOCK:
                STATE["hung_up"] += 1
            self.close_connection = True
            self.connection.shutdown(2)
            return
        body = self.rfile.read(length)
        if len(body) < length:
            # The connection ended before the body did: nothing is stored, as the sink does.
            self.close_connection = True
            return
        name = self.headers.get("Streamup-Stream-Id", "")
        offset = int(self.headers.get("Streamup-Offset", "0"))
        with LOCK:
            STATE["requests"] += 1
            number = STATE["requests"]
            STATE["at_once"] += 1
            STATE["most_at_once"] = max(STATE["most_at_once"], STATE["at_once"])
            held = STATE["streams"].setdefault(name, {})
            refused = number == ARGS.refuse
            if refused:
                STATE["refused"] = {"offset": offset, "length": len(body)}
            elif offset in held:
                STATE["duplicates"].append(offset)
                if held[offset] != body:
                    STATE["errors"].append("request %d: a different body at offset %d of %s" % (number, offset, name))
            if not refused:
                held[offset] = body
            if ARGS.verbose:
                print("request %d: offset %d length %d" % (number, offset, len(body)), file=sys.stderr, flush=True)
        try:
            time.sleep(ARGS.delay)
            if number == ARGS.drop_answer:
                with LOCK:
                    # Whether the stream past this body was out or held too: a middle segment.
                    later = any(other > offset for other in STATE["streams"][name]) or STATE["at_once"] > 1
                    STATE["dropped"] = {"offset": offset, "later_out": later}
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if refused:
                self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
        finally:
            with LOCK:
                STATE["at_once"] -= 1


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 64


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--drop-answer", type=int, default=0)
    parser.add_argument("--refuse", type=int, default=0)
    parser.add_argument("--max-body", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    ARGS = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
