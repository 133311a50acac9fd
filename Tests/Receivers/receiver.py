#!/usr/bin/env python3
"""Validating stand-ins for the log receivers streamup presets target.

    python3 Tests/Receivers/receiver.py KIND [--port 0] [--log FILE] [kind options]

KIND is one of: loki, elasticsearch (alias opensearch), splunk-hec, otlp, datadog, vector,
fluent-bit, victorialogs. The server listens on 127.0.0.1 (port 0 = a free port), prints exactly
`listening on http://127.0.0.1:PORT` as its first stdout line, and serves KIND's ingestion API as
that receiver's published documentation describes it (each handler cites its page and version;
where the page is silent the receiver's source decided, and the handler says so).

Every kind decodes `Content-Length` and `Transfer-Encoding: chunked` bodies and the
`Content-Encoding` values its receiver accepts (gzip for all), checks `Content-Type` as the
receiver does, and keeps what the receiver would keep. A test reads it back with
`GET /_validator/records`:

    {"kind": K, "requests": N, "records": [...], "rejected": [...], "errors": [...], "notes": [...]}

- records: every record the receiver stored, in arrival order; each has "line" (the log text the
  receiver shows) and "request" (1-based number of the ingestion request), plus the fields the
  receiver keeps for that kind (labels, index, tag, attributes, ...).
- rejected: every record the receiver did not store, with "reason" (test-chosen rejections
  through --reject-* options land only here).
- errors: every way the *client* broke the documented contract (a malformed request, a wrong
  header, an invalid entry), with the status answered and a one-line "reason". A correct client
  leaves it empty.
- notes: things that are allowed but worth knowing (e.g. an OTLP 64-bit integer sent as a number).

`GET /_validator/count` is the cheap form a wait repeats: `{"requests": N, "records": N,
"rejected": N, "errors": N}`. `GET /_validator/snapshot` is what a test compares, read in one
request: every stored and rejected line as base64 of its bytes (a string that held a byte which
is not UTF-8 comes back as that byte), the records in the receiver's own order where it has one
(see `snapshot_for_tests`), the first records and a summary of each field.

`POST /_validator/reset` forgets everything. `--log FILE` appends one JSON line per request.

`--namespaces` makes one process serve many tests, each with a receiver of its own:
`POST /_validator/namespaces` with `{"options": [...]}` (this script's options for KIND) starts
a fresh server of KIND on a free port, with its own store, and answers `{"url": ...}`;
`DELETE /_validator/namespaces/PORT` stops it. The process ends when its stdin ends, so it never
outlives the test run that started it (the runner holds the other end of the pipe).

Thread safety: one thread per connection (ThreadingHTTPServer); all shared state lives in
`Store`, guarded by its lock.
"""

import argparse
import base64
import binascii
import datetime
import http.server
import json
import math
import re
import secrets
import signal
import socketserver
import sys
import threading
import time
import urllib.parse
import zlib

# ---------------------------------------------------------------------------------------------
# Shared state


class Store:
    """What the receiver stored, refused and noticed.

    Thread safety: every method takes `self.lock`; callers never hold it themselves.
    """

    def __init__(self, kind, log_path):
        self.kind = kind
        self.lock = threading.Lock()
        self.log_path = log_path
        self.reset()

    def reset(self):
        with self.lock:
            self.requests = 0
            self.records = []
            self.rejected = []
            self.errors = []
            self.notes = []

    def next_request(self):
        with self.lock:
            self.requests += 1
            return self.requests

    def add_record(self, request, record):
        record = dict(record)
        record["request"] = request
        with self.lock:
            self.records.append(record)

    def add_rejected(self, request, record, reason):
        record = dict(record)
        record["request"] = request
        record["reason"] = reason
        with self.lock:
            self.rejected.append(record)

    def add_error(self, request, status, reason):
        with self.lock:
            self.errors.append({"request": request, "status": status, "reason": reason})

    def add_note(self, request, text):
        with self.lock:
            if len(self.notes) < 1000:
                self.notes.append({"request": request, "note": text})

    def count(self):
        with self.lock:
            return {"requests": self.requests, "records": len(self.records),
                    "rejected": len(self.rejected), "errors": len(self.errors)}

    def snapshot(self):
        with self.lock:
            return {
                "kind": self.kind,
                "requests": self.requests,
                "records": list(self.records),
                "rejected": list(self.rejected),
                "errors": list(self.errors),
                "notes": list(self.notes),
            }

    def log(self, entry):
        if not self.log_path:
            return
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock:
            with open(self.log_path, "a") as f:
                f.write(line)


# ---------------------------------------------------------------------------------------------
# HTTP plumbing: bodies, encodings, answers


class BodyError(Exception):
    """The body could not be read as HTTP/1.1 frames it (bad chunk syntax, early end)."""


class TooLarge(Exception):
    """The body passed the kind's size cap."""

    def __init__(self, size, limit):
        super().__init__(f"body of at least {size} bytes is over the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class Response:
    """One answer: status, headers and body bytes; `close` drops the connection afterwards;
    `silent_close` drops it without answering at all (what Fluent Bit does past its buffer).

    Thread safety: a value built and sent by one request thread.
    """

    def __init__(self, status, body=b"", content_type=None, headers=None, close=False,
                 silent_close=False):
        self.status = status
        self.body = body if isinstance(body, bytes) else body.encode()
        self.content_type = content_type
        self.headers = headers or []
        self.close = close
        self.silent_close = silent_close


def json_response(status, value, **kw):
    return Response(status, json.dumps(value, separators=(",", ":")), "application/json", **kw)


def text_response(status, text, **kw):
    return Response(status, text, "text/plain; charset=utf-8", **kw)


def media_type(value):
    """('application/json', {'charset': 'utf-8'}) from a Content-Type value; (None, {}) if unset."""
    if value is None:
        return None, {}
    parts = value.split(";")
    main = parts[0].strip().lower()
    params = {}
    for p in parts[1:]:
        if "=" in p:
            k, v = p.split("=", 1)
            params[k.strip().lower()] = v.strip().strip('"')
    return main, params


class RawBody:
    """Reads a request body off the socket as it arrives: Content-Length or chunked.

    Thread safety: owned by the one request thread that reads it.
    """

    def __init__(self, rfile, headers, limit=None):
        self.rfile = rfile
        self.limit = limit
        self.read_bytes = 0
        self.finished = False
        te = headers.get("Transfer-Encoding")
        cl = headers.get("Content-Length")
        if te is not None:
            codings = [c.strip().lower() for c in te.split(",")]
            if codings[-1] != "chunked":
                raise BodyError(f"Transfer-Encoding {te!r} does not end in chunked")
            if cl is not None:
                raise BodyError("both Content-Length and Transfer-Encoding are set")
            self.chunked = True
            self.remaining = None
        else:
            self.chunked = False
            if cl is None:
                self.remaining = 0
            else:
                if not re.fullmatch(r"[0-9]+", cl.strip()):
                    raise BodyError(f"Content-Length {cl!r} is not a number")
                self.remaining = int(cl)
                if limit is not None and self.remaining > limit:
                    raise TooLarge(self.remaining, limit)
        self.chunk_left = 0

    def _count(self, n):
        self.read_bytes += n
        if self.limit is not None and self.read_bytes > self.limit:
            raise TooLarge(self.read_bytes, self.limit)

    def chunks(self, size=65536):
        """Yields the body's bytes in pieces as they arrive; raises BodyError on bad framing."""
        if not self.chunked:
            while self.remaining > 0:
                data = self.rfile.read1(min(size, self.remaining)) if hasattr(
                    self.rfile, "read1") else self.rfile.read(min(size, self.remaining))
                if not data:
                    raise BodyError(f"connection closed with {self.remaining} body bytes missing "
                                    f"(Content-Length body cut after {self.read_bytes} bytes)")
                self.remaining -= len(data)
                self._count(len(data))
                yield data
            self.finished = True
            return
        while True:
            line = self.rfile.readline(1024)
            if not line:
                raise BodyError(f"connection closed inside a chunked body after {self.read_bytes} "
                                "bytes (no terminating 0-size chunk)")
            if not line.endswith(b"\r\n"):
                raise BodyError(f"chunk-size line {line[:40]!r} is not ended by CRLF")
            size_text = line[:-2].split(b";", 1)[0].strip()
            if not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", size_text):
                raise BodyError(f"chunk-size line {line[:40]!r} is not hexadecimal")
            n = int(size_text, 16)
            if n == 0:
                while True:  # trailer section
                    t = self.rfile.readline(8192)
                    if not t:
                        raise BodyError("connection closed inside the chunked trailer")
                    if t in (b"\r\n", b"\n"):
                        break
                self.finished = True
                return
            while n > 0:
                data = self.rfile.read1(min(size, n)) if hasattr(self.rfile, "read1") else \
                    self.rfile.read(min(size, n))
                if not data:
                    raise BodyError(f"connection closed inside a chunk after {self.read_bytes} "
                                    "body bytes")
                n -= len(data)
                self._count(len(data))
                yield data
            if self.rfile.read(2) != b"\r\n":
                raise BodyError("chunk data is not followed by CRLF")

    def read_all(self):
        return b"".join(self.chunks())


class Decoder:
    """Undoes one Content-Encoding incrementally (gzip members may follow one another).

    Thread safety: owned by one request thread.
    """

    def __init__(self, encoding, deflate_raw_fallback=True):
        self.encoding = (encoding or "identity").strip().lower()
        self.deflate_raw_fallback = deflate_raw_fallback
        self.z = None
        self.started = False
        self.pending = b""
        if self.encoding in ("gzip", "x-gzip"):
            self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self.z = None  # chosen on the first bytes: zlib header or raw DEFLATE
        elif self.encoding not in ("identity", ""):
            raise ValueError(f"unsupported Content-Encoding {encoding!r}")

    def feed(self, data):
        if self.encoding in ("identity", ""):
            return data
        if self.encoding == "deflate" and self.z is None:
            self.pending += data
            if len(self.pending) < 2:
                return b""
            cmf, flg = self.pending[0], self.pending[1]
            zlib_header = (cmf & 0x0F) == 8 and ((cmf << 8) | flg) % 31 == 0
            if zlib_header or not self.deflate_raw_fallback:
                self.z = zlib.decompressobj(zlib.MAX_WBITS)
            else:
                self.z = zlib.decompressobj(-zlib.MAX_WBITS)
            data, self.pending = self.pending, b""
        out = []
        while data:
            try:
                out.append(self.z.decompress(data))
            except zlib.error as e:
                raise ValueError(f"{self.encoding} body does not decode: {e}")
            if self.z.eof and self.encoding != "deflate":
                data = self.z.unused_data
                if data:
                    self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                data = b""
        return b"".join(out)

    def finish(self):
        """Checks the compressed stream ended cleanly."""
        if self.encoding in ("identity", ""):
            return b""
        if self.z is None:
            if self.pending:
                raise ValueError("deflate body is shorter than a header")
            return b""
        tail = self.z.flush()
        if not self.z.eof:
            raise ValueError(f"{self.encoding} body ends inside a compressed stream "
                             "(truncated member)")
        return tail


def decode_whole(raw, encoding, limit=None):
    """Whole decoded body; ValueError on a bad encoding; TooLarge past limit (decoded size)."""
    d = Decoder(encoding)
    out = d.feed(raw) + d.finish()
    if limit is not None and len(out) > limit:
        raise TooLarge(len(out), limit)
    return out


def rfc3339_ns(ns):
    s, frac = divmod(ns, 1_000_000_000)
    t = datetime.datetime.fromtimestamp(s, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac:09d}".rstrip("0") if frac else "") + "Z"


def rfc3339_s(ns):
    """Go's time.RFC3339 (whole seconds), as Loki's validation errors print timestamps."""
    t = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def grouped_errors(errors):
    """Loki's GroupedErrors text: `N errors like: TEXT` per distinct text, joined by "; ", the
    prefix left out for one error alone (grafana/loki pkg/util/errors.go)."""
    counts = {}
    for e in errors:
        counts[e] = counts.get(e, 0) + 1
    return "; ".join((f"{n} errors like: " if len(counts) > 1 or n > 1 else "") + e
                     for e, n in counts.items())


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def go_quote(s):
    return json.dumps(s, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Kinds. Each has: name, doc, max_body (raw bytes, None = no cap), handle(ctx) -> Response.
# ctx: Request (method, path, query, headers, body reader, store, request number).


class Request:
    """One ingestion request as a kind sees it.

    Thread safety: owned by one request thread.
    """

    def __init__(self, number, method, target, headers, raw, store):
        self.number = number
        self.method = method
        parsed = urllib.parse.urlsplit(target)
        self.path = parsed.path
        self.query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        self.headers = headers
        self.raw = raw
        self.store = store

    def header(self, name):
        return self.headers.get(name)

    def fail(self, response, reason):
        """Records a contract violation and returns the answer for it."""
        self.store.add_error(self.number, response.status, reason)
        return response


class Kind:
    name = ""
    doc = ""
    max_body = None
    streaming = False

    def __init__(self, args):
        self.args = args

    def read_body(self, req, limit=None):
        """Whole raw body, or a Response if it could not be read."""
        return req.raw.read_all()


# ---- Loki ------------------------------------------------------------------------------------
# Docs: Loki HTTP API, "Ingest logs" (POST /loki/api/v1/push), Loki 3.x docs
#   https://grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs
# Validation errors and defaults: "Troubleshoot log ingestion (WRITE)", Loki 3.x docs
#   https://grafana.com/docs/loki/latest/operations/troubleshooting/troubleshoot-ingest/
# Where the docs are silent, grafana/loki source decided (pkg/loghttp/push/push.go: Content-Type
# and Content-Encoding dispatch; pkg/loghttp/entry.go: a timestamp is a JSON string parsed as a
# base-10 int64 of nanoseconds; an entry is [ts, line] or [ts, line, {structured metadata}]).
# Ordering: Loki >= 2.4 accepts out-of-order writes by default (unordered_writes: true) and
# rejects only entries older than the stream's newest minus max_chunk_age/2 (1 h). `--ordered`
# emulates unordered_writes: false (any entry older than the stream's newest is rejected).
# An entry identical (timestamp and line) to one already stored is dropped silently (dedup).
# Partial acceptance: valid entries of a request are stored even when others are rejected; the
# answer is then 400. Its form depends on who refused (Loki 3, grafana/loki source):
# - the distributor's validation (labels, line too long, timestamps too old or too new) answers
#   its errors grouped by text (pkg/util/errors.go GroupedErrors): `N errors like: TEXT` groups
#   joined by "; ", the prefix left out when there is one error alone; texts as in
#   pkg/validation/validate.go (timestamps in RFC 3339 seconds);
# - the ingester (order, too far behind; here also --reject-line-regex) names each entry:
#   `entry with timestamp T ignored, reason: 'R' for stream: S,` lines and
#   `user 'U', total ignored: N out of M`; when both refused entries, this form carries all.
# A JSON string holding a lone surrogate (`\udcXX` not part of a pair) refuses the whole request
# with 400: seen with Loki 3 built from its source in our trial of 2026-11-25 (one invalid byte
# written as `\udcXX` refused a whole 1 MiB request). A push of no stream at all answers 422
# (pkg/distributor/distributor.go, MissingStreamsErrorMsg).
# Stream sharding (Loki 3, limits_config.shard_streams, on by default; pkg/distributor and
# pkg/ingester, read 2026-11-28): the ingester sums, per stream (its labels with the shard), the
# bytes (line + structured metadata names and values) of each push's entries but one equal to
# the stream's last line, and the pushes, over one-second samples (stream_rate_calculator.go);
# the distributor's rate store takes the newest sample every second, adds up the shards of each
# unsharded stream (rate: the sum, pushes: the most), and keeps a moving average, 0.4 to the new
# (ratestore.go; a stream not in the sample decays toward 0). A push's stream is sharded when its
# rate is known (pushes > 0): shards = ceil((rate + push bytes * min(pushes, 1)) / desired_rate)
# (shardCountFor, calculateShards); min(entries, shards) copies get `__stream_shard__` = (start +
# i) % shards, where start is where the stream's last push left off (shard_tracker.go), and
# entry i goes to copy i % copies (divideEntriesBetweenShards). Each copy is a stream of its own:
# an entry equal to one in another copy is kept. Simplified here: the distributor's update comes
# one interval after the sample (Loki: one or two, with jitter), and rates never expire.

TEST_REJECTION = "rejected by --reject-line-regex"
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Loki(Kind):
    name = "loki"
    doc = "https://grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs"

    def __init__(self, args):
        super().__init__(args)
        self.lock = threading.Lock()  # guards self.streams and the sharding state below
        self.streams = {}  # labels string -> {"newest": ns, "seen": set((ns, line)), "last": (ns, line)}
        # Sharding: this interval's sample per stream (labels string with its shard -> {"base":
        # labels string without, "bytes", "pushes"}), the averages per unsharded stream (base ->
        # [rate, pushes]), where each unsharded stream's last push left off, the shard count
        # last used (for the notes), and when the current sample started.
        self.samples = {}
        self.rates = {}
        self.tracker = {}
        self.shard_counts = {}
        self.sample_start = time.monotonic()

    def handle(self, req):
        if req.path != "/loki/api/v1/push":
            return req.fail(text_response(404, "404 page not found\n"),
                            f"no Loki ingest endpoint at {req.path}")
        if req.method != "POST":
            return req.fail(text_response(405, "405 method not allowed\n"),
                            f"{req.method} on the push endpoint (POST only)")
        raw = req.raw.read_all()
        enc = (req.header("Content-Encoding") or "").strip()
        if enc.lower() not in ("", "gzip", "deflate", "snappy"):
            return req.fail(text_response(400, f'Content-Encoding "{enc}" not supported\n'),
                            f"Content-Encoding {enc!r} is not one Loki decodes")
        ctype, _ = media_type(req.header("Content-Type"))
        if ctype is None:
            return req.fail(text_response(400, "mime: no media type\n"),
                            "no Content-Type: Loki takes that as snappy protobuf; JSON needs "
                            "Content-Type: application/json")
        if ctype != "application/json":
            return req.fail(text_response(400, "validator: only the JSON push body is modelled\n"),
                            f"Content-Type {ctype}: Loki would decode the body as snappy "
                            "protobuf")
        if enc.lower() == "snappy":
            return req.fail(text_response(400, "invalid JSON body (snappy-encoded)\n"),
                            "Content-Encoding snappy with a JSON body: Loki passes the bytes "
                            "to the JSON decoder unchanged")
        try:
            body = decode_whole(raw, enc)
        except ValueError as e:
            return req.fail(text_response(400, f"{e}\n"), str(e))
        try:
            streams = self.parse(body)
        except ValueError as e:
            return req.fail(text_response(400, f"{e}\n"), f"push body rejected whole: {e}")
        tenant = req.header("X-Scope-OrgID") or "fake"
        grouped = []  # the distributor's errors, one per refused entry (or stream)
        messages = []  # every refused entry, in the ingester's form
        ingester = 0  # how many of them the ingester refused
        faults = []
        total = 0
        ignored = 0
        now = time.time_ns()
        if not streams:
            text = "error at least one valid stream is required for ingestion"
            return req.fail(text_response(422, text + "\n"), f"a push of no stream: {text}")
        for labels, entries in streams:
            total += len(entries)
            problem = self.label_problem(labels)
            labels_text = self.labels_text(labels)
            if problem:
                for ts, line, sm in entries:
                    req.store.add_rejected(req.number, {"line": line, "labels": labels, "ts": str(ts)},
                                           problem)
                ignored += len(entries)
                grouped.append(problem)
                messages.append(problem)
                faults.append(problem)
                continue
            valid = []
            for ts, line, sm in entries:
                reason = self.entry_problem(labels_text, ts, line, sm, now)
                if reason is None:
                    valid.append((ts, line, sm))
                    continue
                grouped.append(reason)
                ignored += 1
                req.store.add_rejected(req.number, {"line": line, "labels": labels, "stream": labels_text,
                                                    "ts": str(ts), "structured_metadata": sm,
                                                    "tenant": tenant}, reason)
                messages.append(f"entry with timestamp {rfc3339_ns(ts)} ignored, reason: "
                                f"'{reason}' for stream: {labels_text},")
                faults.append(messages[-1])
            for shard_labels, part in self.shard(req, labels, valid):
                shard_text = self.labels_text(shard_labels)
                self.sample(shard_text, labels_text, part)
                for ts, line, sm in part:
                    record = {"line": line, "labels": shard_labels, "stream": shard_text, "ts": str(ts),
                              "structured_metadata": sm, "tenant": tenant}
                    reason, duplicate = self.order(shard_text, ts, line)
                    if duplicate:
                        continue
                    if reason is not None:
                        ingester += 1
                        ignored += 1
                        req.store.add_rejected(req.number, record, reason)
                        messages.append(f"entry with timestamp {rfc3339_ns(ts)} ignored, reason: "
                                        f"'{reason}' for stream: {shard_text},")
                        if reason != TEST_REJECTION:
                            faults.append(messages[-1])
                        continue
                    req.store.add_record(req.number, record)
        if messages:
            if ingester:
                text = "\n".join(messages) + f"\nuser '{tenant}', total ignored: {ignored} out of {total}\n"
            else:
                text = grouped_errors(grouped) + "\n"
            if not faults:
                return text_response(400, text)
            return req.fail(text_response(400, text), f"{len(faults)} of {total} entries rejected: "
                            + faults[0])
        return Response(204)

    @staticmethod
    def labels_text(labels):
        return "{" + ", ".join(f"{k}={go_quote(v)}" for k, v in sorted(labels.items())) + "}"

    @staticmethod
    def entry_size(entry):
        """Loki's EntryTotalSize: the line's bytes and its structured metadata's names and values."""
        _, line, sm = entry
        size = len(line.encode("utf-8", "surrogatepass"))
        return size + sum(len(k.encode("utf-8", "surrogatepass")) + len(v.encode("utf-8", "surrogatepass"))
                          for k, v in sm.items())

    def roll(self, now):
        """Ends the samples whose interval has passed: the distributor's update of its rates.
        Caller holds self.lock."""
        interval = self.args.rate_interval
        for _ in range(200):
            if now < self.sample_start + interval:
                return
            totals = {}
            for sample in self.samples.values():
                rate, pushes = totals.get(sample["base"], (0, 0))
                totals[sample["base"]] = (rate + sample["bytes"], max(pushes, sample["pushes"]))
            for base in set(self.rates) | set(totals):
                rate, pushes = totals.get(base, (0, 0))
                if base in self.rates:
                    old_rate, old_pushes = self.rates[base]
                    rate = int(0.4 * rate + 0.6 * old_rate)
                    pushes = 0.4 * pushes + 0.6 * old_pushes
                self.rates[base] = (rate, pushes)
            self.samples = {}
            self.sample_start += interval
        self.sample_start = now

    def shard(self, req, labels, entries):
        """[(labels, entries)]: the stream as the distributor passes it on, in shards when its
        rate says so."""
        if not entries:
            return []
        if not self.args.shard_streams:
            return [(labels, entries)]
        base = self.labels_text(labels)
        push = sum(self.entry_size(e) for e in entries)
        with self.lock:
            self.roll(time.monotonic())
            rate, pushes = self.rates.get(base, (0, 0))
            shards = 1
            if pushes > 0:
                shards = max(1, math.ceil((rate + int(push * min(pushes, 1.0))) / self.args.desired_rate))
            changed = self.shard_counts.get(base, 1) != shards
            self.shard_counts[base] = shards
            if shards <= 1:
                parts = [(labels, entries)]
            else:
                copies = min(len(entries), shards)
                start = self.tracker.get(base, 0)
                self.tracker[base] = start + copies
                parts = [(dict(labels, __stream_shard__=str((start + i) % shards)), entries[i::copies])
                         for i in range(copies)]
        if changed:
            req.store.add_note(req.number, f"stream {base} in {shards} shard(s): its rate {rate} B/s "
                                           f"and this push's {push} B against the desired "
                                           f"{self.args.desired_rate} B/s")
        return parts

    def sample(self, stream, base, entries):
        """Counts a push of `entries` into `stream` in the current sample."""
        with self.lock:
            last = self.streams.get(stream, {}).get("last")
            size = sum(self.entry_size(e) for e in entries if (e[0], e[1]) != last)
            sample = self.samples.setdefault(stream, {"base": base, "bytes": 0, "pushes": 0})
            sample["bytes"] += size
            sample["pushes"] += 1

    @staticmethod
    def parse(body):
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"invalid JSON: {e}")
        if not isinstance(doc, dict):
            raise ValueError("the push body is not a JSON object")
        streams = doc.get("streams")
        if streams is None:
            return []
        if not isinstance(streams, list):
            raise ValueError("\"streams\" is not an array")
        out = []
        for si, s in enumerate(streams):
            if not isinstance(s, dict):
                raise ValueError(f"streams[{si}] is not an object")
            labels = s.get("stream") or {}
            if not isinstance(labels, dict):
                raise ValueError(f"streams[{si}].stream is not an object")
            for k, v in labels.items():
                if not isinstance(v, str):
                    raise ValueError(f"streams[{si}].stream[{k!r}] is not a string")
            values = s.get("values") or []
            if not isinstance(values, list):
                raise ValueError(f"streams[{si}].values is not an array")
            entries = []
            for vi, v in enumerate(values):
                where = f"streams[{si}].values[{vi}]"
                if not isinstance(v, list) or len(v) not in (2, 3):
                    raise ValueError(f"{where} is not [\"<ns>\", \"<line>\"] or "
                                     "[\"<ns>\", \"<line>\", {metadata}]")
                ts, line = v[0], v[1]
                if not isinstance(ts, str):
                    raise ValueError(f"{where}[0] timestamp is a JSON {type(ts).__name__}, "
                                     "must be a string of nanoseconds")
                if not re.fullmatch(r"[0-9]{1,19}", ts) or int(ts) > 2**63 - 1:
                    raise ValueError(f"{where}[0] timestamp {ts!r} is not a Unix epoch in "
                                     "nanoseconds (digits only)")
                if not isinstance(line, str):
                    raise ValueError(f"{where}[1] log line is not a string")
                if LONE_SURROGATE.search(line):
                    raise ValueError(f"{where}[1] log line holds a lone surrogate "
                                     f"(\\u{ord(LONE_SURROGATE.search(line).group()):04x}): not valid Unicode")
                sm = {}
                if len(v) == 3:
                    if not isinstance(v[2], dict):
                        raise ValueError(f"{where}[2] structured metadata is not an object")
                    for k, mv in v[2].items():
                        if not isinstance(mv, str):
                            raise ValueError(f"{where}[2][{k!r}] structured metadata value is "
                                             "not a string")
                    sm = v[2]
                entries.append((int(ts), line, sm))
            out.append((labels, entries))
        return out

    def label_problem(self, labels):
        if not labels:
            return "error at least one label pair is required per stream"
        if len(labels) > self.args.max_label_names:
            return f"entry for stream has {len(labels)} label names; limit {self.args.max_label_names}"
        for k, v in labels.items():
            if not LABEL_NAME.match(k):
                return f"error parsing labels: invalid label name {k!r}"
            if k.startswith("__"):
                return f"error parsing labels: label name {k!r} starts with __ (reserved)"
            if len(k.encode()) > 1024:
                return f"label name too long: {k[:40]}..."
            if len(v.encode("utf-8", "surrogatepass")) > 2048:
                return f"label value too long for {k}"
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return f"error parsing labels: value of {k} is not valid UTF-8"
        return None

    def entry_problem(self, stream, ts, line, sm, now):
        """The distributor's refusal of one entry (its text as Loki 3 writes it), or None."""
        size = len(line.encode("utf-8", "surrogatepass"))
        if size > self.args.max_line_size:
            return (f"max entry size '{self.args.max_line_size}' bytes exceeded for stream "
                    f"'{stream}' while adding an entry with length '{size}' bytes")
        oldest = now - int(self.args.reject_old_samples_max_age * 1e9)
        if self.args.reject_old_samples_max_age > 0 and ts < oldest:
            return (f"entry for stream '{stream}' has timestamp too old: {rfc3339_s(ts)}, "
                    f"oldest acceptable timestamp is: {rfc3339_s(oldest)}")
        if self.args.creation_grace_period > 0 and ts > now + int(self.args.creation_grace_period * 1e9):
            return f"entry for stream '{stream}' has timestamp too new: {rfc3339_s(ts)}"
        return None

    def order(self, stream, ts, line):
        """(reason or None, duplicate?) for an entry against what its stream already holds (the
        ingester's checks; --reject-line-regex is taken as one)."""
        if self.args.reject_line_regex and re.search(self.args.reject_line_regex, line):
            return TEST_REJECTION, False
        with self.lock:
            s = self.streams.setdefault(stream, {"newest": None, "seen": set()})
            if (ts, line) in s["seen"]:
                return None, True
            newest = s["newest"]
            if newest is not None:
                if self.args.ordered and ts < newest:
                    return "entry out of order", False
                window = int(self.args.max_chunk_age * 1e9 / 2)
                if not self.args.ordered and ts < newest - window:
                    return (f"entry too far behind, entry timestamp is: {rfc3339_ns(ts)}, oldest "
                            f"acceptable timestamp is: {rfc3339_ns(newest - window)}"), False
            s["seen"].add((ts, line))
            s["last"] = (ts, line)
            if newest is None or ts > newest:
                s["newest"] = ts
            return None, False


# ---- Elasticsearch / OpenSearch --------------------------------------------------------------
# Docs: Elasticsearch 8.x "Bulk API"
#   https://www.elastic.co/guide/en/elasticsearch/reference/8.17/docs-bulk.html
#   (now https://www.elastic.co/docs/api/doc/elasticsearch/v8/operation/operation-bulk)
# OpenSearch 2.x "Bulk" https://opensearch.org/docs/latest/api-reference/document-apis/bulk/
# NDJSON: action line, then (index/create) a source line; the final line must end with "\n"
# (each "\n" may be preceded by "\r"); Content-Type application/x-ndjson (application/json is
# accepted too). Other Content-Types answer 406 {"error":"Content-Type header [...] is not
# supported","status":406} (Elasticsearch >= 6 enforces this). A body over
# http.max_content_length (default 100mb) answers 413. Item failures do not fail the request:
# 200 with "errors": true and per-item status/error. `update` and `delete` are not modelled.
# Actions (same page, "create" / "index" and "_id"): `create` indexes the document only if its
# `_id` does not exist yet, else that item alone answers 409 `version_conflict_engine_exception`
# ("document already exists") and the others are stored; `index` adds or replaces the document
# with that `_id`; without `_id` both make a new id, so a resent document is a second copy.
# Data streams take `create` only (Elasticsearch "Data streams": "use the create op_type").


class Elasticsearch(Kind):
    name = "elasticsearch"
    doc = "https://www.elastic.co/guide/en/elasticsearch/reference/8.17/docs-bulk.html"
    ACTION_KEYS = {"_index", "_id", "routing", "pipeline", "require_alias", "require_data_stream",
                   "dynamic_templates", "if_seq_no", "if_primary_term", "version", "version_type",
                   "op_type", "list_executed_pipelines"}

    def __init__(self, args):
        super().__init__(args)
        self.max_body = args.max_body if args.max_body is not None else 100 * 1024 * 1024
        self.lock = threading.Lock()  # guards self.docs and self.seq
        self.docs = {}  # (index, id) -> version
        self.seq = 0

    @staticmethod
    def error(status, etype, reason):
        return json_response(status, {"error": {"root_cause": [{"type": etype, "reason": reason}],
                                                "type": etype, "reason": reason},
                                      "status": status})

    def handle(self, req):
        if self.args.bulk_path_only and (req.method != "POST" or req.path != "/_bulk"):
            # Fluent Bit's elasticsearch input (plugins/in_elasticsearch/in_elasticsearch_bulk_prot.c,
            # in_elasticsearch_bulk_prot_handle_ng, Fluent Bit 5.1: `strcmp(request->path, "/_bulk")`,
            # else 400 "error: invalid HTTP endpoint\n"); seen answering so in our trial of 2026-11-25.
            return req.fail(text_response(400, "error: invalid HTTP endpoint\n"),
                            f"{req.method} {req.path}: --bulk-path-only serves only POST /_bulk")
        m = re.fullmatch(r"/(?:([^/_][^/]*)/)?_bulk", req.path)
        if not m:
            return req.fail(self.error(400, "invalid_request", f"no handler for {req.path}"),
                            f"no bulk endpoint at {req.path} (use /_bulk or /{{index}}/_bulk)")
        if req.method not in ("POST", "PUT"):
            return req.fail(json_response(405, {"error": f"Incorrect HTTP method for uri "
                                                         f"[{req.path}] and method [{req.method}]",
                                                "status": 405}),
                            f"{req.method} on _bulk (POST or PUT)")
        path_index = urllib.parse.unquote(m.group(1)) if m.group(1) else None
        if self.args.bulk_path_only:
            path_index = "fluent-bit"  # Fluent Bit ignores indexes: records get the input's tag
        ctype_raw = req.header("Content-Type")
        ctype, params = media_type(ctype_raw)
        ok_types = ("application/x-ndjson", "application/json")
        vendor = re.fullmatch(r"application/vnd\.elasticsearch\+(x-ndjson|json)", ctype or "")
        if ctype not in ok_types and not vendor:
            return req.fail(json_response(406, {"error": f"Content-Type header [{ctype_raw or ''}] "
                                                         "is not supported", "status": 406}),
                            f"Content-Type {ctype_raw!r}: _bulk takes application/x-ndjson")
        if ctype == "application/json":
            req.store.add_note(req.number, "_bulk sent as application/json; the docs ask for "
                                           "application/x-ndjson (both are accepted)")
        raw = req.raw.read_all()
        enc = req.header("Content-Encoding")
        try:
            body = decode_whole(raw, enc)
        except ValueError as e:
            return req.fail(self.error(400, "parse_exception", str(e)), str(e))
        t0 = time.monotonic()
        if not body.strip():
            return req.fail(self.error(400, "parse_exception", "request body is required"),
                            "empty _bulk body")
        if not body.endswith(b"\n"):
            return req.fail(self.error(400, "illegal_argument_exception",
                                       "The bulk request must be terminated by a newline [\\n]"),
                            "the _bulk body does not end with a newline")
        lines = body[:-1].split(b"\n")
        lines = [l[:-1] if l.endswith(b"\r") else l for l in lines]
        ops = []
        i = 0
        while i < len(lines):
            lineno = i + 1
            try:
                action = json.loads(lines[i])
            except (ValueError, UnicodeDecodeError):
                return req.fail(self.error(400, "x_content_parse_exception",
                                           f"Malformed action/metadata line [{lineno}], expected "
                                           "START_OBJECT"), f"line {lineno}: action is not JSON")
            if not isinstance(action, dict) or len(action) != 1:
                return req.fail(self.error(400, "illegal_argument_exception",
                                           f"Malformed action/metadata line [{lineno}], expected "
                                           "a single action object"),
                                f"line {lineno}: action line is not one {{action: {{...}}}} object")
            op, meta = next(iter(action.items()))
            if op not in ("index", "create", "update", "delete"):
                return req.fail(self.error(400, "illegal_argument_exception",
                                           f"Malformed action/metadata line [{lineno}], expected "
                                           f"field [create], [delete], [index] or [update] but "
                                           f"found [{op}]"), f"line {lineno}: unknown action {op!r}")
            if not isinstance(meta, dict):
                return req.fail(self.error(400, "illegal_argument_exception",
                                           f"Malformed action/metadata line [{lineno}], expected "
                                           "START_OBJECT"), f"line {lineno}: action body not an object")
            for k in meta:
                if k not in self.ACTION_KEYS:
                    return req.fail(self.error(400, "illegal_argument_exception",
                                               f"Action/metadata line [{lineno}] contains an unknown "
                                               f"parameter [{k}]"),
                                    f"line {lineno}: unknown action parameter {k!r}"
                                    + (" (mapping types are gone in Elasticsearch 8 / OpenSearch 2)"
                                       if k == "_type" else ""))
            index = meta.get("_index", path_index)
            if op in ("update", "delete"):
                return req.fail(self.error(400, "illegal_argument_exception",
                                           f"validator: action [{op}] is not modelled"),
                                f"line {lineno}: {op} is not a log-shipping action")
            if i + 1 >= len(lines):
                return req.fail(self.error(400, "illegal_argument_exception",
                                           f"The bulk request must be terminated by a newline [\\n]"),
                                f"line {lineno}: {op} action without a source line")
            if index is None:
                return req.fail(self.error(400, "action_request_validation_exception",
                                           "Validation Failed: 1: index is missing;"),
                                f"line {lineno}: no _index and no index in the URL")
            ops.append((op, index, meta.get("_id"), lines[i + 1], lineno + 1))
            i += 2
        items = []
        any_error = False
        for op, index, doc_id, source_line, lineno in ops:
            item, record, failure = self.apply(op, index, doc_id, source_line, lineno)
            items.append({op: item})
            if failure is None:
                req.store.add_record(req.number, record)
            elif item["status"] == 409:
                # `create` of an `_id` the index holds: nothing stored, the item answered 409;
                # a resend of a document stored before, not a refusal of the client's data.
                any_error = True
                req.store.add_note(req.number, f"duplicate: line {lineno}: {failure[1]}")
            else:
                any_error = True
                req.store.add_rejected(req.number, record, failure[1])
                if failure[0]:
                    req.store.add_error(req.number, item["status"], f"line {lineno}: {failure[1]}")
        took = int((time.monotonic() - t0) * 1000)
        return json_response(200, {"took": took, "errors": any_error, "items": items})

    def apply(self, op, index, doc_id, source_line, lineno):
        """(item, record, failure) where failure is (client_fault, reason) or None."""
        text = source_line.decode("utf-8", "replace")
        record = {"line": text, "index": index, "op": op, "id": doc_id, "source": None}
        bad = re.search(r'[\\/*?"<>| ,#A-Z]', index) or index.startswith(("-", "_", "+")) or \
            index in (".", "..") or len(index.encode()) > 255
        if bad:
            reason = f"Invalid index name [{index}]"
            return ({"_index": index, "_id": doc_id, "status": 400,
                     "error": {"type": "invalid_index_name_exception", "reason": reason}},
                    record, (True, reason))
        try:
            source = json.loads(source_line)
            if not isinstance(source, dict):
                raise ValueError("source is not a JSON object")
        except (ValueError, UnicodeDecodeError) as e:
            reason = f"failed to parse: {e}"
            return ({"_index": index, "_id": doc_id, "status": 400,
                     "error": {"type": "document_parsing_exception", "reason": reason}},
                    record, (True, f"source line is not a JSON object ({e})"))
        record["source"] = source
        if isinstance(source.get("message"), str):
            record["line"] = source["message"]
        for kv in self.args.reject_field_value or []:
            k, _, v = kv.partition("=")
            if k in source and (source[k] == v or str(source[k]) == v):
                reason = f"rejected by --reject-field-value {kv}"
                return ({"_index": index, "_id": doc_id, "status": 400,
                         "error": {"type": "document_parsing_exception", "reason": reason}},
                        record, (False, reason))
        if self.args.reject_regex and re.search(self.args.reject_regex, text):
            reason = "rejected by --reject-regex"
            return ({"_index": index, "_id": doc_id, "status": 400,
                     "error": {"type": "document_parsing_exception", "reason": reason}},
                    record, (False, reason))
        with self.lock:
            if doc_id is None:
                doc_id = base64.urlsafe_b64encode(secrets.token_bytes(15)).decode()
            record["id"] = doc_id
            key = (index, doc_id)
            if op == "create" and key in self.docs:
                reason = f"[{doc_id}]: version conflict, document already exists"
                return ({"_index": index, "_id": doc_id, "status": 409,
                         "error": {"type": "version_conflict_engine_exception", "reason": reason}},
                        record, (False, reason))
            version = self.docs.get(key, 0) + 1
            self.docs[key] = version
            self.seq += 1
            seq = self.seq
        return ({"_index": index, "_id": doc_id, "_version": version,
                 "result": "created" if version == 1 else "updated",
                 "_shards": {"total": 2, "successful": 1, "failed": 0},
                 "_seq_no": seq - 1, "_primary_term": 1, "status": 201 if version == 1 else 200},
                record, None)


# ---- Splunk HTTP Event Collector -------------------------------------------------------------
# Docs: Splunk Enterprise 9.x "Format events for HTTP Event Collector" (event protocol, batching
# by concatenating event objects) and "Troubleshoot HTTP Event Collector" (status codes):
#   https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/FormateventsforHTTPEventCollector
#   https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/TroubleshootHTTPEventCollector
# REST reference: https://docs.splunk.com/Documentation/Splunk/latest/RESTREF/RESTinput#services.2Fcollector.2Fevent
# Codes used: 0 Success (200), 2 Token is required (401), 3 Invalid authorization (401),
# 4 Invalid token (403), 5 No data (400), 6 Invalid data format (400, with
# "invalid-event-number"), 7 Incorrect index (400), 12 Event field is required (400),
# 13 Event field cannot be blank (400), 15 Error in handling indexed fields (400).
# Size: limits.conf [http_input] max_content_length; Splunk Cloud documents 1 MB per request,
# Splunk Enterprise's default is 838860800 (800 MiB; it was 1000000 before 6.5). Default cap here
# is 1,000,000 bytes (--max-content-length); over it: 413. Events before the first invalid one are
# indexed (HEC handles a batch event by event), so they are stored here too.


class SplunkHEC(Kind):
    name = "splunk-hec"
    doc = "https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/FormateventsforHTTPEventCollector"
    PATHS = ("/services/collector", "/services/collector/event", "/services/collector/event/1.0")

    def __init__(self, args):
        super().__init__(args)
        self.max_body = args.max_content_length

    @staticmethod
    def answer(status, text, code, **extra):
        body = {"text": text, "code": code}
        body.update(extra)
        return json_response(status, body)

    def handle(self, req):
        if req.path.rstrip("/") not in self.PATHS:
            return req.fail(json_response(404, {"text": "The requested URL was not found on this "
                                                        "server.", "code": 404}),
                            f"no HEC event endpoint at {req.path}")
        if req.method != "POST":
            return req.fail(json_response(405, {"text": "Method Not Allowed", "code": 405}),
                            f"{req.method} on the HEC endpoint (POST only)")
        auth = req.header("Authorization")
        if auth is None:
            return req.fail(self.answer(401, "Token is required", 2), "no Authorization header")
        m = re.fullmatch(r"Splunk\s+(\S+)\s*", auth)
        if not m:
            return req.fail(self.answer(401, "Invalid authorization", 3),
                            "Authorization is not 'Splunk <token>'")
        if self.args.token is not None and m.group(1) != self.args.token:
            return req.fail(self.answer(403, "Invalid token", 4), "wrong HEC token")
        raw = req.raw.read_all()
        try:
            body = decode_whole(raw, req.header("Content-Encoding"))
        except ValueError as e:
            return req.fail(self.answer(400, "Invalid data format", 6), str(e))
        text = body.decode("utf-8", "replace")
        if not text.strip():
            return req.fail(self.answer(400, "No data", 5), "empty body")
        decoder = json.JSONDecoder()
        pos = 0
        n = 0
        ws = re.compile(r"\s*")
        pending = []
        while True:
            pos = ws.match(text, pos).end()
            if pos >= len(text):
                break
            try:
                obj, pos = decoder.raw_decode(text, pos)
            except ValueError as e:
                return self.partial(req, pending, n, 400, "Invalid data format", 6,
                                    f"event {n}: not a JSON object ({e})")
            problem = self.event_problem(obj)
            if problem is not None:
                status, msg, code, why = problem
                return self.partial(req, pending, n, status, msg, code, f"event {n}: {why}")
            pending.append(self.record(obj, req))
            n += 1
        for r in pending:
            self.store_or_reject(req, r)
        return self.answer(200, "Success", 0)

    def store_or_reject(self, req, r):
        if self.args.reject_regex and re.search(self.args.reject_regex, r["line"]):
            req.store.add_rejected(req.number, r, "rejected by --reject-regex")
        else:
            req.store.add_record(req.number, r)

    def partial(self, req, pending, n, status, text, code, reason):
        for r in pending:
            self.store_or_reject(req, r)
        return req.fail(self.answer(status, text, code, **{"invalid-event-number": n}), reason)

    def event_problem(self, obj):
        if not isinstance(obj, dict):
            return 400, "Invalid data format", 6, f"a JSON {type(obj).__name__}, not an event object"
        if "event" not in obj:
            return 400, "Event field is required", 12, "no \"event\" field"
        ev = obj["event"]
        if ev is None or (isinstance(ev, str) and ev.strip() == "") or ev == {} or ev == []:
            return 400, "Event field cannot be blank", 13, "\"event\" is blank"
        if "time" in obj:
            t = obj["time"]
            ok = isinstance(t, (int, float)) and not isinstance(t, bool)
            if isinstance(t, str):
                ok = re.fullmatch(r"\s*[0-9]+(\.[0-9]+)?\s*", t) is not None
            if not ok:
                return 400, "Invalid data format", 6, f"\"time\" {t!r} is not epoch seconds"
        for k in ("host", "source", "sourcetype", "index"):
            if k in obj and not isinstance(obj[k], str):
                return 400, "Invalid data format", 6, f"\"{k}\" is not a string"
        if "index" in obj and self.args.allowed_index and obj["index"] not in self.args.allowed_index:
            return 400, "Incorrect index", 7, f"index {obj['index']!r} is not allowed for the token"
        if "fields" in obj:
            f = obj["fields"]
            if not isinstance(f, dict):
                return 400, "Error in handling indexed fields", 15, "\"fields\" is not an object"
            for k, v in f.items():
                flat = isinstance(v, (str, int, float, bool)) or (
                    isinstance(v, list) and all(isinstance(x, (str, int, float, bool)) for x in v))
                if not flat:
                    return (400, "Error in handling indexed fields", 15,
                            f"indexed field {k!r} is nested (fields must be flat)")
        return None

    @staticmethod
    def record(obj, req):
        ev = obj["event"]
        r = {"line": ev if isinstance(ev, str) else compact(ev), "event": ev}
        for k in ("time", "host", "source", "sourcetype", "index", "fields"):
            if k in obj:
                r[k] = obj[k]
        r["channel"] = req.header("X-Splunk-Request-Channel")
        return r


# ---- OTLP/HTTP logs (binary protobuf and JSON) -------------------------------------------------
# Docs: OpenTelemetry Protocol Specification 1.x, "OTLP/HTTP", "Binary Protobuf Encoding" and
# "JSON Protobuf Encoding"
#   https://opentelemetry.io/docs/specs/otlp/#otlphttp
#   (source: open-telemetry/opentelemetry-proto docs/specification.md)
# Message shapes: opentelemetry-proto v1.x, opentelemetry/proto/logs/v1/logs.proto and
# collector/logs/v1/logs_service.proto. JSON mapping rules applied: lowerCamelCase keys (original
# snake_case names are unknown fields, which a receiver MUST ignore); unknown fields ignored;
# traceId/spanId hex; enums (severityNumber) as integers only; 64-bit integers as decimal
# strings, numbers also accepted when decoding. Answers: 200 ExportLogsServiceResponse `{}`, or
# `{"partialSuccess":{"rejectedLogRecords":"N","errorMessage":"..."}}` (N is an int64, so a
# decimal string in proto3 JSON; --partial-int64 number sends a JSON number); 400 with a Status
# message for bad data; 415 for a Content-Type other than application/json or
# application/x-protobuf (with --encodings protobuf, as VictoriaLogs, Elasticsearch's /_otlp and
# Datadog's intake: JSON too); 413 past the 20 MiB limit the spec recommends (after decompression).
# Binary protobuf (application/x-protobuf, OTLP/HTTP's default) is decoded by the OpenTelemetry
# project's own classes (PyPI opentelemetry-proto, on Google's protobuf): a body they cannot
# parse (bad wire format, a string that is not UTF-8) is a 400; a field they do not know (a
# wrong field number) is reported in errors, since a receiver drops it without a word; the
# answer is an ExportLogsServiceResponse (partial success as above) or a google.rpc.Status, in
# protobuf. Either encoding: a LogRecord with neither time_unix_nano nor observed_time_unix_nano
# is reported (the receiver stamps it on arrival, so a resend is a record of another time).


class OTLPError(Exception):
    pass


class OTLP(Kind):
    name = "otlp"
    doc = "https://opentelemetry.io/docs/specs/otlp/#otlphttp"

    def __init__(self, args):
        super().__init__(args)
        self.max_body = args.max_body if args.max_body is not None else 20 * 1024 * 1024

    def status(self, code, message, req, reason, protobuf=False):
        if protobuf:
            # google.rpc.Status: 1 code (int32), 2 message (string); google/rpc/status.proto.
            text = message.encode()
            length, n = bytearray(), len(text)
            while n >= 0x80:
                length.append(n & 0x7F | 0x80)
                n >>= 7
            length.append(n)
            body = bytes([0x08, 3 if code == 400 else 0, 0x12]) + bytes(length) + text
            return req.fail(Response(code, body, "application/x-protobuf"), reason)
        return req.fail(json_response(code, {"code": 3 if code == 400 else 0, "message": message}),
                        reason)

    def handle(self, req):
        if req.path != self.args.path:
            return req.fail(text_response(404, "404 page not found\n"), f"no OTLP logs endpoint at "
                                                                        f"{req.path}")
        if req.method != "POST":
            return req.fail(text_response(405, "405 method not allowed, supported: [POST]\n"),
                            f"{req.method} on {req.path}")
        ctype, _ = media_type(req.header("Content-Type"))
        if ctype not in ("application/json", "application/x-protobuf"):
            return req.fail(text_response(415, f"415 unsupported media type, supported: "
                                               f"[application/json, application/x-protobuf]\n"),
                            f"Content-Type {req.header('Content-Type')!r}: OTLP/HTTP needs "
                            "application/x-protobuf or application/json")
        protobuf = ctype == "application/x-protobuf"
        if not protobuf and self.args.encodings == "protobuf":
            return req.fail(text_response(415, "415 unsupported media type: json encoding isn't "
                                               "supported, use application/x-protobuf\n"),
                            f"Content-Type {req.header('Content-Type')!r}: this receiver takes "
                            "OTLP in protobuf only (--encodings protobuf)")
        raw = req.raw.read_all()
        try:
            body = decode_whole(raw, req.header("Content-Encoding"), self.max_body)
        except ValueError as e:
            return self.status(400, str(e), req, str(e), protobuf)
        if protobuf:
            try:
                records = self.parse_protobuf(body, req)
            except ImportError:
                return self.status(415, "this validator decodes protobuf with Python's "
                                        "opentelemetry-proto, which is not installed", req,
                                   "application/x-protobuf needs Python's opentelemetry-proto here "
                                   "(python3 -m pip install opentelemetry-proto)", protobuf)
            except OTLPError as e:
                return self.status(400, str(e), req, f"ExportLogsServiceRequest rejected: {e}",
                                   protobuf)
        else:
            try:
                doc = json.loads(body)
            except (ValueError, UnicodeDecodeError) as e:
                return self.status(400, f"invalid JSON: {e}", req, f"body is not JSON ({e})")
            try:
                records = self.parse(doc, req)
            except OTLPError as e:
                return self.status(400, str(e), req, f"ExportLogsServiceRequest rejected: {e}")
        for i, r in enumerate(records):
            if r["timeUnixNano"] == "0" and r["observedTimeUnixNano"] == "0":
                req.store.add_error(req.number, 200, f"log record {i} has neither time_unix_nano "
                                                     "nor observed_time_unix_nano: the receiver "
                                                     "stamps it on arrival")
        rejected = 0
        for r in records:
            if self.args.reject_body_regex and re.search(self.args.reject_body_regex, r["line"]):
                rejected += 1
                req.store.add_rejected(req.number, r, "rejected by --reject-body-regex")
            else:
                req.store.add_record(req.number, r)
        message = f"{rejected} log records rejected by the test"
        if protobuf:
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import \
                ExportLogsServiceResponse
            answer = ExportLogsServiceResponse()
            if rejected:
                answer.partial_success.rejected_log_records = rejected
                answer.partial_success.error_message = message
            return Response(200, answer.SerializeToString(), "application/x-protobuf")
        if rejected:
            n = rejected if self.args.partial_int64 == "number" else str(rejected)
            return json_response(200, {"partialSuccess": {"rejectedLogRecords": n,
                                                          "errorMessage": message}})
        return json_response(200, {})

    # -- ExportLogsServiceRequest decoding (binary protobuf, the OpenTelemetry classes)

    def parse_protobuf(self, body, req):
        """The records of a binary ExportLogsServiceRequest, in the shape `parse` gives."""
        from google.protobuf.message import DecodeError
        from google.protobuf.unknown_fields import UnknownFieldSet
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import \
            ExportLogsServiceRequest
        try:
            doc = ExportLogsServiceRequest.FromString(body)
        except DecodeError as e:
            raise OTLPError(f"not an ExportLogsServiceRequest: {e}")

        def unknown(message, where):
            for f in UnknownFieldSet(message):
                req.store.add_error(req.number, 200, f"{where}: field {f.field_number} (wire type "
                                                     f"{f.wire_type}) is not in the message; the "
                                                     "receiver drops it")

        def value(v, where):
            unknown(v, where)
            kind = v.WhichOneof("value")
            if kind is None:
                return None
            if kind == "array_value":
                unknown(v.array_value, f"{where}.array_value")
                return [value(x, f"{where}.array_value[{i}]")
                        for i, x in enumerate(v.array_value.values)]
            if kind == "kvlist_value":
                unknown(v.kvlist_value, f"{where}.kvlist_value")
                return key_values(v.kvlist_value.values, f"{where}.kvlist_value")
            if kind == "bytes_value":
                return {"bytes": base64.b64encode(v.bytes_value).decode()}
            return getattr(v, kind)

        def key_values(kvs, where):
            out = {}
            for i, kv in enumerate(kvs):
                unknown(kv, f"{where}[{i}]")
                out[kv.key] = value(kv.value, f"{where}[{i}].value")
            return out

        unknown(doc, "request")
        records = []
        for ri, rl in enumerate(doc.resource_logs):
            w = f"resource_logs[{ri}]"
            unknown(rl, w)
            unknown(rl.resource, f"{w}.resource")
            resource = key_values(rl.resource.attributes, f"{w}.resource.attributes")
            for si, sl in enumerate(rl.scope_logs):
                ws = f"{w}.scope_logs[{si}]"
                unknown(sl, ws)
                unknown(sl.scope, f"{ws}.scope")
                scope = {"name": sl.scope.name, "version": sl.scope.version,
                         "attributes": key_values(sl.scope.attributes, f"{ws}.scope.attributes")}
                for li, lr in enumerate(sl.log_records):
                    wl = f"{ws}.log_records[{li}]"
                    unknown(lr, wl)
                    body = value(lr.body, f"{wl}.body") if lr.HasField("body") else None
                    records.append({
                        "line": body if isinstance(body, str) else ("" if body is None else compact(body)),
                        "body": body,
                        "timeUnixNano": str(lr.time_unix_nano),
                        "observedTimeUnixNano": str(lr.observed_time_unix_nano),
                        "severityNumber": lr.severity_number,
                        "severityText": lr.severity_text,
                        "attributes": key_values(lr.attributes, f"{wl}.attributes"),
                        "flags": lr.flags,
                        "traceId": lr.trace_id.hex(),
                        "spanId": lr.span_id.hex(),
                        "eventName": lr.event_name,
                        "resource": resource,
                        "scope": scope,
                    })
        return records

    # -- ExportLogsServiceRequest decoding (proto3 JSON + OTLP deviations)

    def fields(self, obj, where, known, req):
        if obj is None:
            return {}
        if not isinstance(obj, dict):
            raise OTLPError(f"{where} is a JSON {type(obj).__name__}, expected an object")
        for k in obj:
            if k not in known:
                camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k)
                if camel != k and camel in known:
                    req.store.add_error(req.number, 200, f"{where}.{k}: OTLP/JSON keys are "
                                                         f"lowerCamelCase ({camel}); the receiver "
                                                         "ignores this field")
        return obj

    @staticmethod
    def array(v, where):
        if v is None:
            return []
        if not isinstance(v, list):
            raise OTLPError(f"{where} is not an array")
        return v

    @staticmethod
    def string(v, where):
        if v is None:
            return ""
        if not isinstance(v, str):
            raise OTLPError(f"{where} is not a string")
        return v

    def uint(self, v, where, bits, req, signed=False):
        if v is None:
            return 0
        if isinstance(v, bool):
            raise OTLPError(f"{where} is a boolean, expected an integer")
        if isinstance(v, str):
            if not re.fullmatch(r"-?[0-9]+", v):
                raise OTLPError(f"{where} {v!r} is not a decimal integer")
            n = int(v)
        elif isinstance(v, int):
            n = v
            if bits == 64:
                req.store.add_note(req.number, f"{where} sent as a JSON number; proto3 JSON writes "
                                               "64-bit integers as decimal strings (numbers are "
                                               "accepted)")
        elif isinstance(v, float) and v.is_integer():
            n = int(v)
        else:
            raise OTLPError(f"{where} {v!r} is not an integer")
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
        if not lo <= n <= hi:
            raise OTLPError(f"{where} {n} is out of range for a {'' if signed else 'u'}int{bits}")
        return n

    def hexid(self, v, where, nbytes):
        if v is None or v == "":
            return ""
        if not isinstance(v, str) or not re.fullmatch(r"[0-9A-Fa-f]{%d}" % (2 * nbytes), v):
            raise OTLPError(f"{where} {v!r} is not {2 * nbytes} hex digits")
        return v.lower()

    def any_value(self, v, where, req):
        v = self.fields(v, where, {"stringValue", "boolValue", "intValue", "doubleValue",
                                   "arrayValue", "kvlistValue", "bytesValue"}, req)
        present = [k for k in ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
                               "kvlistValue", "bytesValue") if k in v]
        if len(present) > 1:
            raise OTLPError(f"{where} sets more than one of the AnyValue oneof: {present}")
        if not present:
            return None
        k = present[0]
        x = v[k]
        if k == "stringValue":
            return self.string(x, f"{where}.stringValue")
        if k == "boolValue":
            if not isinstance(x, bool):
                raise OTLPError(f"{where}.boolValue is not a boolean")
            return x
        if k == "intValue":
            return self.uint(x, f"{where}.intValue", 64, req, signed=True)
        if k == "doubleValue":
            if isinstance(x, str) and x in ("NaN", "Infinity", "-Infinity"):
                return x
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise OTLPError(f"{where}.doubleValue is not a number")
            return float(x)
        if k == "bytesValue":
            if not isinstance(x, str):
                raise OTLPError(f"{where}.bytesValue is not a base64 string")
            try:
                base64.b64decode(x + "=" * (-len(x) % 4), altchars=b"-_" if ("-" in x or "_" in x)
                                 else None, validate=True)
            except (binascii.Error, ValueError):
                raise OTLPError(f"{where}.bytesValue is not base64")
            return {"bytes": x}
        if k == "arrayValue":
            av = self.fields(x, f"{where}.arrayValue", {"values"}, req)
            return [self.any_value(e, f"{where}.arrayValue.values[{i}]", req)
                    for i, e in enumerate(self.array(av.get("values"), f"{where}.arrayValue.values"))]
        kv = self.fields(x, f"{where}.kvlistValue", {"values"}, req)
        return self.key_values(kv.get("values"), f"{where}.kvlistValue.values", req)

    def key_values(self, v, where, req):
        out = {}
        for i, e in enumerate(self.array(v, where)):
            e = self.fields(e, f"{where}[{i}]", {"key", "value"}, req)
            out[self.string(e.get("key"), f"{where}[{i}].key")] = self.any_value(
                e.get("value"), f"{where}[{i}].value", req)
        return out

    def parse(self, doc, req):
        doc = self.fields(doc, "request", {"resourceLogs"}, req)
        records = []
        for ri, rl in enumerate(self.array(doc.get("resourceLogs"), "resourceLogs")):
            w = f"resourceLogs[{ri}]"
            rl = self.fields(rl, w, {"resource", "scopeLogs", "schemaUrl"}, req)
            res = self.fields(rl.get("resource"), f"{w}.resource",
                              {"attributes", "droppedAttributesCount", "entityRefs"}, req)
            resource = self.key_values(res.get("attributes"), f"{w}.resource.attributes", req)
            self.uint(res.get("droppedAttributesCount"), f"{w}.resource.droppedAttributesCount", 32, req)
            self.string(rl.get("schemaUrl"), f"{w}.schemaUrl")
            for si, sl in enumerate(self.array(rl.get("scopeLogs"), f"{w}.scopeLogs")):
                ws = f"{w}.scopeLogs[{si}]"
                sl = self.fields(sl, ws, {"scope", "logRecords", "schemaUrl"}, req)
                sc = self.fields(sl.get("scope"), f"{ws}.scope",
                                 {"name", "version", "attributes", "droppedAttributesCount"}, req)
                scope = {"name": self.string(sc.get("name"), f"{ws}.scope.name"),
                         "version": self.string(sc.get("version"), f"{ws}.scope.version"),
                         "attributes": self.key_values(sc.get("attributes"),
                                                       f"{ws}.scope.attributes", req)}
                for li, lr in enumerate(self.array(sl.get("logRecords"), f"{ws}.logRecords")):
                    wl = f"{ws}.logRecords[{li}]"
                    lr = self.fields(lr, wl, {"timeUnixNano", "observedTimeUnixNano",
                                              "severityNumber", "severityText", "body",
                                              "attributes", "droppedAttributesCount", "flags",
                                              "traceId", "spanId", "eventName"}, req)
                    sev = lr.get("severityNumber")
                    if isinstance(sev, str):
                        raise OTLPError(f"{wl}.severityNumber {sev!r}: OTLP/JSON enums MUST be "
                                        "integers, not names")
                    sev = self.uint(sev, f"{wl}.severityNumber", 32, req, signed=True)
                    if not 0 <= sev <= 24:
                        raise OTLPError(f"{wl}.severityNumber {sev} is not a SeverityNumber")
                    body = self.any_value(lr.get("body"), f"{wl}.body", req) \
                        if lr.get("body") is not None else None
                    rec = {
                        "line": body if isinstance(body, str) else ("" if body is None else compact(body)),
                        "body": body,
                        "timeUnixNano": str(self.uint(lr.get("timeUnixNano"), f"{wl}.timeUnixNano", 64, req)),
                        "observedTimeUnixNano": str(self.uint(lr.get("observedTimeUnixNano"),
                                                              f"{wl}.observedTimeUnixNano", 64, req)),
                        "severityNumber": sev,
                        "severityText": self.string(lr.get("severityText"), f"{wl}.severityText"),
                        "attributes": self.key_values(lr.get("attributes"), f"{wl}.attributes", req),
                        "flags": self.uint(lr.get("flags"), f"{wl}.flags", 32, req),
                        "traceId": self.hexid(lr.get("traceId"), f"{wl}.traceId", 16),
                        "spanId": self.hexid(lr.get("spanId"), f"{wl}.spanId", 8),
                        "eventName": self.string(lr.get("eventName"), f"{wl}.eventName"),
                        "resource": resource,
                        "scope": scope,
                    }
                    self.uint(lr.get("droppedAttributesCount"), f"{wl}.droppedAttributesCount", 32, req)
                    records.append(rec)
        return records


# ---- Datadog logs intake v2 ------------------------------------------------------------------
# Docs: Datadog API reference, Logs > "Send logs" (v2), https://docs.datadoghq.com/api/latest/logs/#send-logs
# (page as of 2025). POST /api/v2/logs; header DD-API-KEY; body: a JSON array of log objects
# (HTTPLogItem: message (required), ddsource, ddtags, hostname, service, plus any attributes) or one
# object; Content-Encoding gzip or deflate. Limits per request: 5MB uncompressed payload (413 past
# it), 1MB per log (a longer log is accepted and truncated, answer still 2xx), 1000 entries per
# array. Answers: 202 `{}`; 400 bad payload; 401 missing API key; 403 invalid key; 413 too large.
# The docs give no status for an array over 1000 entries: 400 here. "5MB"/"1MB" are read as
# 5,000,000/1,000,000 bytes (the stricter reading).


class Datadog(Kind):
    name = "datadog"
    doc = "https://docs.datadoghq.com/api/latest/logs/#send-logs"
    PAYLOAD = 5_000_000
    ONE_LOG = 1_000_000
    ENTRIES = 1000

    def __init__(self, args):
        super().__init__(args)
        self.max_body = None  # the 5MB limit is on the uncompressed payload: checked after decoding

    def error(self, status, message, req, reason):
        return req.fail(json_response(status, {"errors": [message]}), reason)

    def handle(self, req):
        if req.path != "/api/v2/logs":
            return self.error(404, "Not found", req, f"no logs intake at {req.path}")
        if req.method != "POST":
            return self.error(405, "Method not allowed", req, f"{req.method} on /api/v2/logs")
        key = req.header("DD-API-KEY")
        if not key:
            return self.error(401, "Unauthorized", req, "no DD-API-KEY header")
        if self.args.api_key is not None and key != self.args.api_key:
            return self.error(403, "Forbidden", req, "wrong DD-API-KEY")
        ctype, _ = media_type(req.header("Content-Type"))
        if ctype not in ("application/json", "text/plain"):
            return self.error(415, f"Unsupported Content-Type {ctype}", req,
                              f"Content-Type {req.header('Content-Type')!r} (application/json or "
                              "text/plain; application/logplex-1 is not modelled)")
        enc = (req.header("Content-Encoding") or "").lower()
        if enc not in ("", "identity", "gzip", "deflate"):
            return self.error(400, f"Unsupported Content-Encoding {enc}", req,
                              f"Content-Encoding {enc!r} (gzip or deflate)")
        raw = req.raw.read_all()
        try:
            body = decode_whole(raw, enc, self.PAYLOAD)
        except TooLarge as e:
            return self.error(413, "Payload too large", req,
                              f"uncompressed payload {e.size} bytes is over 5MB")
        except ValueError as e:
            return self.error(400, str(e), req, str(e))
        if ctype == "text/plain":
            items = [{"message": l} for l in body.decode("utf-8", "replace").splitlines() if l]
        else:
            try:
                doc = json.loads(body)
            except (ValueError, UnicodeDecodeError) as e:
                return self.error(400, "Bad request", req, f"body is not JSON ({e})")
            items = doc if isinstance(doc, list) else [doc]
        if len(items) > self.ENTRIES:
            return self.error(400, "Too many entries", req,
                              f"{len(items)} logs in one array (at most 1000)")
        for i, it in enumerate(items):
            if not isinstance(it, dict):
                return self.error(400, "Bad request", req, f"entry {i} is not a JSON object")
            if not isinstance(it.get("message"), str):
                return self.error(400, "Bad request", req,
                                  f"entry {i} has no string \"message\" (HTTPLogItem requires it)")
            for k in ("ddsource", "ddtags", "hostname", "service"):
                if k in it and not isinstance(it[k], str):
                    return self.error(400, "Bad request", req, f"entry {i}: \"{k}\" is not a string")
        query_tags = req.query.get("ddtags", [None])[0]
        for it in items:
            msg = it["message"]
            size = len(compact(it).encode())
            truncated = size > self.ONE_LOG
            if truncated:
                over = size - self.ONE_LOG
                encoded = msg.encode()
                msg = encoded[:max(0, len(encoded) - over)].decode("utf-8", "ignore")
                req.store.add_note(req.number, f"a log of {size} bytes was truncated to 1MB")
            rec = {"line": msg, "truncated": truncated,
                   "attributes": {k: v for k, v in it.items() if k not in (
                       "message", "ddsource", "ddtags", "hostname", "service")}}
            for k in ("ddsource", "hostname", "service"):
                if k in it:
                    rec[k] = it[k]
            tags = [t for t in (it.get("ddtags"), query_tags) if t]
            if tags:
                rec["ddtags"] = ",".join(tags)
            if self.args.reject_regex and re.search(self.args.reject_regex, msg):
                req.store.add_rejected(req.number, rec, "rejected by --reject-regex")
            else:
                req.store.add_record(req.number, rec)
        return json_response(202, {})


# ---- Vector http_server source ---------------------------------------------------------------
# Docs: Vector "HTTP Server" source, https://vector.dev/docs/reference/configuration/sources/http_server/
# (Vector 0.4x). decoding.codec defaults to `bytes`; framing then defaults to newline_delimited
# (a final line without "\n" is still an event; an empty line is an event with an empty message);
# `--codec json` parses each line as a JSON object (an array yields one event per object; empty
# lines are skipped). Content-Encoding gzip/deflate are decoded (others: 415); Content-Type is
# not checked. Success: 200 with an empty body; a body that does not decode: 400
# {"code":400,"message":"Failed decoding body: ..."}. path/strict_path: Vector's default is
# path "/" with strict_path true; this validator defaults to any path (strict_path false), use
# --strict-path to require --path exactly. Events keep `message`, `path`, `source_type`,
# `timestamp`.


class Vector(Kind):
    name = "vector"
    doc = "https://vector.dev/docs/reference/configuration/sources/http_server/"

    def handle(self, req):
        p = self.args.path
        matches = req.path == p if self.args.strict_path else req.path.startswith(p.rstrip("/") or "/")
        if not matches:
            return req.fail(Response(404), f"path {req.path} does not match path {p!r}"
                            + (" (strict_path)" if self.args.strict_path else ""))
        if req.method != self.args.method:
            return req.fail(Response(405), f"{req.method}: the source takes {self.args.method}")
        enc = (req.header("Content-Encoding") or "").lower()
        if enc not in ("", "identity", "gzip", "deflate"):
            return req.fail(json_response(415, {"code": 415, "message": f"Unsupported encoding {enc}"}),
                            f"Content-Encoding {enc!r}")
        raw = req.raw.read_all()
        try:
            body = decode_whole(raw, enc)
        except ValueError as e:
            return req.fail(json_response(400, {"code": 400, "message": f"Failed decompressing payload "
                                                                        f"with {enc} decoder."}), str(e))
        frames = body.split(b"\n")
        if frames and frames[-1] == b"":
            frames.pop()
        now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
        events = []
        for i, f in enumerate(frames):
            if self.args.codec == "bytes":
                text = f.decode("utf-8", "replace")
                events.append({"line": text, "message": text})
                continue
            if not f.strip():
                continue
            try:
                v = json.loads(f)
            except (ValueError, UnicodeDecodeError) as e:
                return req.fail(json_response(400, {"code": 400, "message": f"Failed decoding body: {e}"}),
                                f"line {i + 1} is not JSON ({e})")
            objs = v if isinstance(v, list) else [v]
            for o in objs:
                if not isinstance(o, dict):
                    return req.fail(json_response(400, {"code": 400, "message": "Failed decoding "
                                                                                "body: not an object"}),
                                    f"line {i + 1}: JSON value is not an object")
                msg = o.get("message")
                events.append({"line": msg if isinstance(msg, str) else compact(o), "fields": o})
        for e in events:
            e.update({"path": req.path, "source_type": "http_server", "timestamp": now})
            req.store.add_record(req.number, e)
        return Response(200)


# ---- Fluent Bit http input -------------------------------------------------------------------
# Docs: Fluent Bit manual 4.x, "HTTP" input, https://docs.fluentbit.io/manual/pipeline/inputs/http
# The tag is the URL path after "/" (characters other than alphanumerics, "_" and "." become "_";
# "/" alone means the input's own tag, http.0). Body: a JSON object, or an array of objects
# (Content-Type application/json) or a form (application/x-www-form-urlencoded); gzip is decoded
# (>= 2.2.1). Success answers `successful_response_code` (default 201) with an empty body.
# buffer_max_size (default 4M) bounds the whole request held in memory; where the docs are silent
# the source decided (fluent/fluent-bit plugins/in_http/http_conn.c: past buffer_max_size the
# connection is closed without an answer; http_prot.c: a missing Content-Type, another type, an
# empty body or an invalid payload answer 400 with a one-line text). Several concatenated JSON
# values are outside the documented shape and are refused unless --allow-concatenated.


class FluentBit(Kind):
    name = "fluent-bit"
    doc = "https://docs.fluentbit.io/manual/pipeline/inputs/http"

    def __init__(self, args):
        super().__init__(args)
        self.max_body = args.buffer_max_size

    def handle(self, req):
        if req.method == "GET" and req.path == "/health":
            return json_response(200, {"status": "ok"})
        if req.method != "POST":
            return req.fail(text_response(400, "error: invalid HTTP method\n"),
                            f"{req.method} (POST only)")
        tag = req.path[1:] if len(req.path) > 1 else None
        if tag is not None:
            tag = re.sub(r"[^A-Za-z0-9_.]", "_", urllib.parse.unquote(tag))
        ct = req.header("Content-Type")
        if ct is None:
            return req.fail(text_response(400, "error: header 'Content-Type' is not set\n"),
                            "no Content-Type")
        ctype, _ = media_type(ct)
        if ctype not in ("application/json", "application/x-www-form-urlencoded"):
            return req.fail(text_response(400, "error: invalid 'Content-Type'\n"),
                            f"Content-Type {ct!r} (application/json)")
        raw = req.raw.read_all()
        if not raw and not req.raw.chunked:
            return req.fail(text_response(400, "error: no payload found\n"), "empty body")
        enc = (req.header("Content-Encoding") or "").lower()
        try:
            body = decode_whole(raw, enc if enc in ("gzip",) else "")
        except ValueError as e:
            return req.fail(text_response(400, "error: invalid payload\n"), str(e))
        now = time.time()
        if ctype == "application/x-www-form-urlencoded":
            objs = [dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))]
        else:
            try:
                objs = self.json_values(body)
            except ValueError as e:
                # Fluent Bit 5.1 answers a body it cannot parse so (plugins/in_http/http_prot.c,
                # the end of http_prot_handle_ng; seen in our trial of 2026-11-25).
                return req.fail(text_response(400, "error: unable to process records\n"), str(e))
        for o in objs:
            line = o.get("log", o.get("message"))
            rec = {"line": line if isinstance(line, str) else compact(o), "tag": tag or "http.0",
                   "record": o, "time": now}
            req.store.add_record(req.number, rec)
        return Response(self.args.successful_response_code)

    def json_values(self, body):
        text = body.decode("utf-8")
        dec = json.JSONDecoder()
        values = []
        pos = 0
        while True:
            pos = re.compile(r"\s*").match(text, pos).end()
            if pos >= len(text):
                break
            v, pos = dec.raw_decode(text, pos)
            values.append(v)
        if not values:
            raise ValueError("no JSON value in the body")
        if len(values) > 1 and not self.args.allow_concatenated:
            raise ValueError(f"{len(values)} concatenated JSON values; the documented body is one "
                             "object or one array of objects")
        objs = []
        for v in values:
            for o in (v if isinstance(v, list) else [v]):
                if not isinstance(o, dict):
                    raise ValueError(f"a JSON {type(o).__name__} where a record object belongs")
                objs.append(o)
        return objs


# ---- VictoriaLogs JSON stream API ------------------------------------------------------------
# Docs: VictoriaLogs "Data ingestion" > "JSON stream API" and "HTTP parameters" (docs as of v1.x):
#   https://docs.victoriametrics.com/victorialogs/data-ingestion/#json-stream-api
#   https://docs.victoriametrics.com/victorialogs/data-ingestion/#http-parameters
#   https://docs.victoriametrics.com/victorialogs/keyconcepts/ (data model: flattening, _msg, _time)
# POST /insert/jsonline, one JSON object per line; query args (or VL-* headers) _msg_field,
# _time_field (default _time), _stream_fields, ignore_fields, extra_fields, debug. The body is
# processed line by line while it arrives, so a never-ending chunked body works; records become
# visible as they arrive here (VictoriaLogs itself flushes about every second). Where the docs are
# silent the source decided (VictoriaMetrics/VictoriaLogs app/vlinsert/jsonline/jsonline.go,
# insertutil/*.go): empty lines are skipped; a bad line is logged and skipped, and the request
# fails (400) only when no line was good; lines over -insert.maxLineSizeBytes (256 KiB) are
# skipped; a missing _msg gets the default value below; "0", "" or "-" as _time mean now.
# Answer: 200 with an empty body. Content-Encoding gzip/deflate decoded as a stream.
# A lone surrogate escape (`\udc80`) is stored as its literal text, six characters (seen with
# VictoriaLogs built from its source: our trial of 2026-11-25).

VL_DEFAULT_MSG = "missing _msg field; see https://docs.victoriametrics.com/victorialogs/keyconcepts/#message-field"


class VictoriaLogs(Kind):
    name = "victorialogs"
    doc = "https://docs.victoriametrics.com/victorialogs/data-ingestion/#json-stream-api"
    streaming = True
    MAX_LINE = 256 * 1024

    def param(self, req, name, header):
        v = req.query.get(name, [None])[0]
        if v is None:
            v = req.header(header)
        return [x.strip() for x in v.split(",") if x.strip()] if v else []

    def handle(self, req):
        if req.path != "/insert/jsonline":
            return req.fail(text_response(400, f"unsupported path requested: {req.path}\n"),
                            f"no jsonline endpoint at {req.path}")
        if req.method != "POST":
            return req.fail(Response(405), f"{req.method} (POST only)")
        time_fields = self.param(req, "_time_field", "VL-Time-Field") or ["_time"]
        msg_fields = self.param(req, "_msg_field", "VL-Msg-Field")
        stream_fields = self.param(req, "_stream_fields", "VL-Stream-Fields")
        ignore = set(self.param(req, "ignore_fields", "VL-Ignore-Fields"))
        extra = []
        for ef in self.param(req, "extra_fields", "VL-Extra-Fields"):
            k, sep, v = ef.partition("=")
            if not sep or not k or not v:
                return req.fail(text_response(400, f"invalid extra_field format: {ef!r}\n"),
                                f"extra_fields {ef!r} is not field=value")
            extra.append((k, v))
        debug = (req.query.get("debug", [""])[0] or req.header("VL-Debug") or "").lower() in ("1", "true")
        enc = (req.header("Content-Encoding") or "").lower()
        try:
            dec = Decoder(enc)
        except ValueError as e:
            return req.fail(text_response(400, f"cannot decode jsonline request: {e}\n"), str(e))
        good = 0
        bad = 0
        last = None
        buf = b""
        n = 0

        def line_done(line):
            nonlocal good, bad, last, n
            n += 1
            if len(line) > self.MAX_LINE:
                bad += 1
                last = f"line #{n} is {len(line)} bytes, over -insert.maxLineSizeBytes=262144"
                req.store.add_rejected(req.number, {"line": line[:200].decode("utf-8", "replace")}, last)
                req.store.add_error(req.number, 200, last)
                return
            if not line.strip():
                return
            try:
                rec = self.row(line, time_fields, msg_fields, stream_fields, ignore, extra)
            except ValueError as e:
                bad += 1
                last = f"cannot read line #{n}: {e}"
                req.store.add_rejected(req.number, {"line": line.decode("utf-8", "replace")}, last)
                req.store.add_error(req.number, 200, last)
                return
            good += 1
            if debug:
                req.store.add_rejected(req.number, rec, "debug=1: logged, not stored")
            else:
                req.store.add_record(req.number, rec)

        try:
            for chunk in req.raw.chunks(16384):
                buf += dec.feed(chunk)
                while True:
                    i = buf.find(b"\n")
                    if i < 0:
                        break
                    line_done(buf[:i])
                    buf = buf[i + 1:]
            buf += dec.finish()
        except ValueError as e:
            if buf:
                line_done(buf)
            return req.fail(text_response(400, f"cannot decode jsonline request: {e}\n"), str(e))
        if buf:
            line_done(buf)
        if bad and not good:
            return text_response(400, f"cannot process jsonline request; error: {last}\n")
        return Response(200, content_type="application/json")

    def row(self, line, time_fields, msg_fields, stream_fields, ignore, extra):
        try:
            obj = json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"cannot parse JSON: {e}")
        obj = self.literal_surrogates(obj)
        if not isinstance(obj, dict):
            raise ValueError("the line is not a JSON object")
        fields = {}
        self.flatten(obj, "", fields)
        ts = None
        for tf in time_fields:
            if tf in fields:
                ts = self.parse_time(fields.pop(tf))
                break
        if ts is None or ts == 0:
            ts = time.time_ns()
        for mf in msg_fields:
            if fields.get(mf):
                fields["_msg"] = fields.pop(mf)
                break
        for k in list(fields):
            if k in ignore:
                del fields[k]
        for k, v in extra:
            fields[k] = v
        fields = {k: v for k, v in fields.items() if v != ""}
        if not fields.get("_msg"):
            fields["_msg"] = VL_DEFAULT_MSG
        stream = "{" + ",".join(f"{k}={go_quote(fields[k])}" for k in sorted(stream_fields)
                                if k in fields) + "}"
        return {"line": fields["_msg"], "_msg": fields["_msg"], "_time": rfc3339_ns(ts),
                "_stream": stream, "fields": fields}

    @classmethod
    def literal_surrogates(cls, v):
        """Strings with each lone surrogate as the text of its escape, as VictoriaLogs stores them."""
        if isinstance(v, str):
            return LONE_SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), v)
        if isinstance(v, dict):
            return {cls.literal_surrogates(k): cls.literal_surrogates(x) for k, x in v.items()}
        if isinstance(v, list):
            return [cls.literal_surrogates(x) for x in v]
        return v

    def flatten(self, v, prefix, out):
        for k, x in v.items():
            name = prefix + k
            if isinstance(x, dict):
                self.flatten(x, name + ".", out)
            elif isinstance(x, str):
                out[name] = x
            elif x is None:
                out[name] = ""
            elif isinstance(x, bool):
                out[name] = "true" if x else "false"
            elif isinstance(x, (int, float)):
                out[name] = json.dumps(x)
            else:
                out[name] = compact(x)

    @staticmethod
    def parse_time(s):
        if s in ("", "0", "-"):
            return 0
        if len(s) <= 4 or s[4] != "-":
            m = re.fullmatch(r"([0-9]+)(?:\.([0-9]+))?", s)
            if not m:
                raise ValueError(f"cannot parse unix timestamp {s!r}")
            whole = int(m.group(1))
            digits = len(m.group(1))
            if m.group(2) is not None:
                return int(round(float(s) * 1e9))
            if digits <= 10:
                return whole * 1_000_000_000
            if digits <= 13:
                return whole * 1_000_000
            if digits <= 16:
                return whole * 1_000
            return whole
        m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?"
                         r"(Z|[+-]\d{2}:\d{2})?", s)
        if not m:
            raise ValueError(f"cannot unmarshal rfc3339 timestamp {s!r}")
        tz = m.group(4) or "Z"
        base = datetime.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}" +
                                               ("+00:00" if tz == "Z" else tz))
        frac = int((m.group(3) or "0").ljust(9, "0"))
        return int(base.timestamp()) * 1_000_000_000 + frac


KINDS = {
    "loki": Loki,
    "elasticsearch": Elasticsearch,
    "opensearch": Elasticsearch,
    "splunk-hec": SplunkHEC,
    "otlp": OTLP,
    "datadog": Datadog,
    "vector": Vector,
    "fluent-bit": FluentBit,
    "victorialogs": VictoriaLogs,
}


# ---------------------------------------------------------------------------------------------
# Refusals chosen by a test, for every kind (--refuse-over, --refuse-record, --limit-rate-over,
# --drop-after): the answers real receivers and proxies give that a client must live with.
# Each is counted in the snapshot's "notes" ("refused: ..."), not in "errors": the client did
# nothing wrong.


class BufferedBody:
    """A body already read off the socket, handed to a kind as RawBody would hand it.

    Thread safety: owned by the one request thread that read it.
    """

    def __init__(self, raw, data):
        self.chunked = raw.chunked
        self.read_bytes = raw.read_bytes
        self.finished = True
        self.data = data

    def chunks(self, size=65536):
        for i in range(0, len(self.data), size):
            yield self.data[i:i + size]

    def read_all(self):
        return self.data


class Refusals:
    """The test-chosen refusals of one server.

    Thread safety: `drops_left` is guarded by `lock`; the rest is read-only after start.
    """

    def __init__(self, args):
        self.over = args.refuse_over
        self.record = re.compile(args.refuse_record) if args.refuse_record else None
        self.rate_over = args.limit_rate_over
        self.retry_after = args.retry_after
        self.drop_after = args.drop_after
        self.lock = threading.Lock()
        self.drops_left = args.drop_times

    def body_limit(self, kind_limit):
        """The raw body cap: the kind's, or --refuse-over when lower."""
        limits = [x for x in (kind_limit, self.over) if x is not None]
        return min(limits) if limits else None

    def too_large(self, error):
        """The answer to a body over --refuse-over, or None (the kind's own cap was passed)."""
        if self.over is None or error.limit != self.over:
            return None
        return text_response(413, f"Request Entity Too Large: over {self.over} bytes\n", close=True)

    def check(self, req, raw):
        """The refusal for this request, or None; may read the body (then `req.raw` replays it)."""
        if self.drop_after is not None:
            read = []
            for chunk in raw.chunks():
                read.append(chunk)
                if raw.read_bytes >= self.drop_after:
                    with self.lock:
                        drop = self.drops_left > 0
                        self.drops_left -= drop
                    if drop:
                        req.store.add_note(req.number, f"refused: dropped the connection after "
                                                       f"{raw.read_bytes} body bytes")
                        return Response(0, silent_close=True)
            req.raw = BufferedBody(raw, b"".join(read))
        if self.rate_over is None and self.record is None and self.over is None:
            return None
        # Read before the kind looks at the request, as a proxy in front of it would.
        if not isinstance(req.raw, BufferedBody):
            req.raw = BufferedBody(raw, raw.read_all())
        size = len(req.raw.data)
        if self.rate_over is not None and size > self.rate_over:
            req.store.add_note(req.number, f"refused: 429 to a body of {size} bytes")
            return text_response(429, f"rate limited: a request of {size} bytes is over the burst "
                                      f"of {self.rate_over} bytes\n",
                                 headers=[("Retry-After", str(self.retry_after))])
        if self.record is not None:
            try:
                text = decode_whole(req.raw.data, (req.header("Content-Encoding") or "").strip())
            except ValueError:
                return None  # the kind says what is wrong with it
            for number, line in enumerate(text.split(b"\n"), 1):
                if self.record.search(line.decode("utf-8", "replace")):
                    req.store.add_note(req.number, f"refused: 400 to record {number}")
                    return text_response(400, f"refused record {number}: it matches "
                                              f"{self.record.pattern}\n")
        return None


# ---------------------------------------------------------------------------------------------
# Read-back for tests


STREAM_ID = re.compile(r"^([0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})-([0-9]+)$")


def raw_line(value):
    """The bytes of a stored line, base64: a byte that was not UTF-8 (kept by surrogateescape)
    comes back as that byte."""
    if not isinstance(value, str):
        return ""
    return base64.b64encode(value.encode("utf-8", "surrogateescape")).decode()


def clean(value):
    """A stored value with every lone surrogate shown as U+FFFD, so any JSON parser takes it."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, list):
        return [clean(x) for x in value]
    if isinstance(value, dict):
        return {clean(k): clean(x) for k, x in value.items()}
    return value


def order_key(kind, record):
    """Where a record stands in the receiver's own order, or None where it has none: Loki's and
    OTLP's nanosecond times; Elasticsearch's `_id`, STREAM-OFFSET (a UUID stream) or
    DEVICE-INODE-FINGERPRINT-START-PIECE-TIME (a file's record)."""
    if kind == "loki":
        return [int(record["ts"])]
    if kind == "otlp":
        return [int(record["timeUnixNano"])]
    if kind in ("elasticsearch", "opensearch") and isinstance(record.get("id"), str):
        m = STREAM_ID.match(record["id"])
        if m:
            return [m.group(1), int(m.group(2))]
        parts = record["id"].split("-")
        if len(parts) == 6 and parts[3].isdigit() and parts[4].isdigit():
            return ["-".join(parts[:3]), int(parts[3]), int(parts[4])]
    return None


def snapshot_for_tests(data):
    """What a test compares, from a store's snapshot: lines as base64 of their bytes (one per
    line of text), the records in the receiver's own order where every record has a place in it,
    the first 20 records cleaned, and per top-level field its JSON types and up to 10 values."""
    records = data["records"]
    keys = [order_key(data["kind"], r) for r in records]
    ordered = bool(keys) and all(k is not None for k in keys)
    if ordered:
        records = [r for _, _, r in sorted(zip(keys, range(len(keys)), records), key=lambda t: (t[0], t[1]))]
    fields = {}
    for r in records:
        for k, v in r.items():
            f = fields.setdefault(k, {"types": set(), "values": set()})
            f["types"].add(type(v).__name__)
            if isinstance(v, str) and len(f["values"]) <= 10:
                f["values"].add(clean(v))
    return {
        "requests": data["requests"], "ordered": ordered,
        "lines": "\n".join(raw_line(r.get("line")) for r in records),
        "records": clean(records[:20]),
        "fields": {k: {"types": sorted(f["types"]), "values": sorted(f["values"]) if len(f["values"]) <= 10 else []}
                   for k, f in fields.items()},
        "rejected": "\n".join(raw_line(r.get("line")) for r in data["rejected"]),
        "errors": ["request %s: %s %s" % (e["request"], e["status"], clean(e["reason"])) for e in data["errors"]],
    }


# ---------------------------------------------------------------------------------------------
# Server


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes /_validator/* to the store and everything else to the kind.

    Thread safety: one instance per connection, on that connection's thread.
    """

    protocol_version = "HTTP/1.1"
    server_version = "streamup-validator"
    sys_version = ""

    def log_message(self, fmt, *args):  # quiet: --log FILE is the log
        pass

    def send(self, response):
        if response.silent_close:
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        self.send_response(response.status)
        if response.content_type:
            self.send_header("Content-Type", response.content_type)
        for k, v in response.headers:
            self.send_header(k, v)
        if response.status not in (204, 304) and not (100 <= response.status < 200):
            self.send_header("Content-Length", str(len(response.body)))
        if response.close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if response.status not in (204, 304):
            self.wfile.write(response.body)
        self.wfile.flush()

    def validator(self):
        store = self.server.store
        path = urllib.parse.urlsplit(self.path).path
        if self.command == "GET" and path == "/_validator/records":
            self.send(json_response(200, store.snapshot()))
            return True
        if self.command == "GET" and path == "/_validator/count":
            self.send(json_response(200, store.count()))
            return True
        if self.command == "GET" and path == "/_validator/snapshot":
            self.send(json_response(200, snapshot_for_tests(store.snapshot())))
            return True
        namespaces = self.server.namespaces
        if namespaces is not None and self.command == "POST" and path == "/_validator/namespaces":
            try:
                request = json.loads(RawBody(self.rfile, self.headers).read_all() or b"{}")
                url = namespaces.open(request.get("options", []))
            except (ValueError, BodyError, UsageError) as e:
                self.send(text_response(400, f"no namespace: {e}\n", close=True))
                return True
            self.send(json_response(200, {"url": url}))
            return True
        if namespaces is not None and self.command == "DELETE" and path.startswith("/_validator/namespaces/"):
            found = namespaces.close(path.rsplit("/", 1)[1])
            self.send(json_response(200 if found else 404, {"closed": found}))
            return True
        if self.command == "POST" and path == "/_validator/reset":
            store.reset()
            self.send(json_response(200, {"reset": True}))
            return True
        return False

    def handle_one(self):
        if urllib.parse.urlsplit(self.path).path.startswith("/_validator/") and self.validator():
            return
        kind = self.server.kind
        store = self.server.store
        number = store.next_request()
        t0 = time.monotonic()
        raw = None
        refusals = self.server.refusals
        try:
            raw = RawBody(self.rfile, self.headers, refusals.body_limit(kind.max_body))
            req = Request(number, self.command, self.path, self.headers, raw, store)
            response = refusals.check(req, raw) or kind.handle(req)
        except TooLarge as e:
            response = refusals.too_large(e)
            if response is not None:
                store.add_note(number, f"refused: 413 to a body of at least {e.size} bytes")
            elif kind.name == "fluent-bit":
                store.add_error(number, 413, str(e))
                response = Response(0, silent_close=True)
            elif kind.name == "splunk-hec":
                store.add_error(number, 413, str(e))
                response = json_response(413, {"text": f"Content-Length of {e.size} too large "
                                                       f"(maximum is {e.limit})"}, close=True)
            else:
                store.add_error(number, 413, str(e))
                response = Response(413, close=True)
        except BodyError as e:
            if self.server.lose_answers and raw is not None and raw.read_bytes == 0:
                # After a lost answer libcurl sends the request again on a fresh connection
                # and streamup, which sends it again itself, ends that copy before its body:
                # nothing of it arrived, so nothing is wrong with what did.
                store.add_note(number, f"abandoned before its body: {e}")
            else:
                store.add_error(number, 400, str(e))
            response = text_response(400, f"bad request body: {e}\n", close=True)
        except Exception as e:  # a validator bug must show, not hang the client
            store.add_error(number, 500, f"validator bug: {type(e).__name__}: {e}")
            response = text_response(500, f"validator bug: {e}\n", close=True)
        if raw is not None and not raw.finished:
            response.close = True  # the rest of the body is still on the wire
        lose = self.server.lose_answers
        if lose and number % lose == 0 and 200 <= response.status < 300 and not response.silent_close:
            # Stored, then the connection breaks before the answer: what a client sees when a
            # proxy or the network drops an answer, or its wait for one times out.
            store.add_note(number, f"lost answer: {response.status} stored, the connection closed unanswered")
            response = Response(0, silent_close=True)
        store.log({"request": number, "method": self.command, "path": self.path,
                   "status": response.status if not response.silent_close else None,
                   "body_bytes": raw.read_bytes if raw else 0,
                   "seconds": round(time.monotonic() - t0, 6)})
        self.send(response)

    def do_POST(self):
        self.handle_one()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_POST


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    namespaces = None


class UsageError(Exception):
    """Options a namespace was asked for that the parser refuses."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting (a namespace's options come over HTTP)."""

    def error(self, message):
        raise UsageError(message)


class Namespaces:
    """Servers of one kind in this process, each on a free port with its own store, for tests
    that share the process (`--namespaces`).

    Thread safety: `servers` is guarded by `lock`; each server runs on a thread of its own.
    """

    def __init__(self, kind):
        self.kind = kind
        self.lock = threading.Lock()
        self.servers = {}

    def open(self, options):
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise UsageError("options must be a list of strings")
        args = build_parser(Parser).parse_args([self.kind] + options + ["--port", "0"])
        server = make_server(args)
        port = server.server_address[1]
        with self.lock:
            self.servers[str(port)] = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return f"http://127.0.0.1:{port}"

    def close(self, port):
        with self.lock:
            server = self.servers.pop(port, None)
        if server is None:
            return False

        def stop():
            server.shutdown()
            server.server_close()
        threading.Thread(target=stop, daemon=True).start()
        return True


def make_server(args):
    """A server for `args` on 127.0.0.1 (`args.port`, 0 = a free one), not yet serving."""
    if args.path is None:
        args.path = "/v1/logs" if args.kind == "otlp" else "/"
    kind = KINDS[args.kind](args)
    server = Server(("127.0.0.1", args.port), Handler)
    server.kind = kind
    server.refusals = Refusals(args)
    server.lose_answers = args.lose_answers
    server.store = Store(kind.name, args.log)
    return server


def build_parser(parser_class=argparse.ArgumentParser):
    p = parser_class(description="Validating stand-in for a log receiver.")
    p.add_argument("kind", choices=sorted(KINDS))
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log", help="append one JSON line per request to this file")
    p.add_argument("--max-body", type=int, help="raw body cap in bytes (elasticsearch, otlp)")
    p.add_argument("--namespaces", action="store_true",
                   help="also serve POST /_validator/namespaces (a fresh server of KIND on a free "
                        "port per call) and DELETE /_validator/namespaces/PORT; exit when stdin ends")
    g = p.add_argument_group("refusals (every kind; counted in notes, not errors)")
    g.add_argument("--refuse-over", type=int, metavar="N",
                   help="answer 413 and close once a body passes N bytes (at once for a "
                        "Content-Length over N, after reading N bytes of a chunked body)")
    g.add_argument("--refuse-record", metavar="REGEX",
                   help="answer 400 to a request with a line (record) matching REGEX; nothing "
                        "of it is stored")
    g.add_argument("--limit-rate-over", type=int, metavar="N",
                   help="answer 429 with Retry-After to every request whose body is over N "
                        "bytes (a rate limit's burst it never passes)")
    g.add_argument("--retry-after", type=int, default=1, metavar="S",
                   help="the Retry-After seconds of --limit-rate-over (default 1)")
    g.add_argument("--drop-after", type=int, metavar="N",
                   help="close the connection without answering after reading N body bytes")
    g.add_argument("--drop-times", type=int, default=1, metavar="K",
                   help="how many requests --drop-after drops (default 1)")
    g.add_argument("--lose-answers", type=int, default=0, metavar="N",
                   help="every Nth request is handled (stored) and its 2xx answer never sent: "
                        "the connection closes unanswered (a lost answer)")
    g = p.add_argument_group("loki")
    g.add_argument("--ordered", action="store_true",
                   help="emulate unordered_writes: false (default: Loki >= 2.4 unordered writes)")
    g.add_argument("--max-chunk-age", type=float, default=7200.0,
                   help="seconds; unordered writes accept entries newer than newest - age/2")
    g.add_argument("--reject-old-samples-max-age", type=float, default=7 * 24 * 3600.0,
                   help="seconds (default 168h); 0 disables")
    g.add_argument("--creation-grace-period", type=float, default=600.0,
                   help="seconds into the future accepted (default 10m); 0 disables")
    g.add_argument("--max-line-size", type=int, default=256 * 1024)
    g.add_argument("--max-label-names", type=int, default=15)
    g.add_argument("--reject-line-regex", help="entries whose line matches are rejected")
    g.add_argument("--no-shard-streams", dest="shard_streams", action="store_false",
                   help="emulate shard_streams.enabled: false (default: Loki 3 shards a stream "
                        "whose rate passes --desired-rate)")
    g.add_argument("--desired-rate", type=int, default=1536 * 1024, metavar="BYTES",
                   help="shard_streams.desired_rate in bytes per second (default 1536KB)")
    g.add_argument("--rate-interval", type=float, default=1.0, metavar="S",
                   help="seconds per rate sample (Loki: 1)")
    g = p.add_argument_group("elasticsearch / datadog / splunk-hec")
    g.add_argument("--bulk-path-only", action="store_true",
                   help="elasticsearch: serve only POST /_bulk (400 'error: invalid HTTP endpoint' "
                        "elsewhere) and need no index, as Fluent Bit's elasticsearch input")
    g.add_argument("--reject-field-value", action="append", metavar="K=V",
                   help="elasticsearch: documents with source[K] == V get item status 400")
    g.add_argument("--reject-regex", help="records whose text matches are rejected")
    g.add_argument("--token", help="splunk-hec: the one valid token (default: any)")
    g.add_argument("--allowed-index", action="append", help="splunk-hec: indexes the token allows")
    g.add_argument("--max-content-length", type=int, default=1_000_000,
                   help="splunk-hec request cap in bytes (Splunk Cloud: 1 MB)")
    g.add_argument("--api-key", help="datadog: the one valid DD-API-KEY (default: any)")
    g = p.add_argument_group("otlp")
    g.add_argument("--reject-body-regex", help="log records whose body matches are rejected "
                                               "(partial success)")
    g.add_argument("--partial-int64", choices=("string", "number"), default="string")
    g.add_argument("--encodings", choices=("both", "protobuf"), default="both",
                   help="the encodings taken: both (the Collector, Alloy, Loki) or protobuf only "
                        "(VictoriaLogs, Elasticsearch's /_otlp, Datadog: JSON is a 415)")
    g = p.add_argument_group("vector")
    g.add_argument("--codec", choices=("bytes", "json"), default="bytes")
    g.add_argument("--path", default=None, help="vector: path prefix (default /); otlp: "
                                                "endpoint path (default /v1/logs)")
    g.add_argument("--strict-path", action="store_true")
    g.add_argument("--method", default="POST")
    g = p.add_argument_group("fluent-bit")
    g.add_argument("--buffer-max-size", type=int, default=4 * 1024 * 1024)
    g.add_argument("--successful-response-code", type=int, choices=(200, 201, 204), default=201)
    g.add_argument("--allow-concatenated", action="store_true")
    return p


def main(argv):
    args = build_parser().parse_args(argv)
    server = make_server(args)
    port = server.server_address[1]

    def stop(_signum=None, _frame=None):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.namespaces:
        server.namespaces = Namespaces(args.kind)

        def stop_at_end_of_stdin():
            while sys.stdin.buffer.read(65536):
                pass
            stop()
        threading.Thread(target=stop_at_end_of_stdin, daemon=True).start()
    sys.stdout.write(f"listening on http://127.0.0.1:{port}\n")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
