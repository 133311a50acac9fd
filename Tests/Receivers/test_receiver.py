#!/usr/bin/env python3
"""Self-tests for receiver.py: each kind gets valid and invalid requests over real sockets
(Content-Length, chunked and gzip bodies) and the answers and stored records are checked.

    python3 Tests/Receivers/test_receiver.py [-v] [TestLoki ...]

Thread safety: unittest runs the tests on one thread; each test owns its receiver process.
"""

import gzip
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
RECEIVER = os.path.join(HERE, "receiver.py")
DEADLINE = 20.0  # a hang deadline, not a speed limit


class Receiver:
    """A receiver.py process for one test.

    Thread safety: used from the test's thread.
    """

    def __init__(self, kind, *options):
        self.log = tempfile.NamedTemporaryFile(prefix="receiver-", suffix=".log", delete=False)
        self.log.close()
        self.process = subprocess.Popen(
            [sys.executable, RECEIVER, kind, "--port", "0", "--log", self.log.name, *options],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.process.stdout.readline().decode()
        if not line.startswith("listening on http://127.0.0.1:"):
            self.process.kill()
            raise RuntimeError(f"receiver did not start: {line!r} "
                               f"{self.process.stderr.read().decode()}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.first_line = line

    def close(self):
        self.process.terminate()
        try:
            self.process.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()
        os.unlink(self.log.name)

    def request(self, method, path, body=b"", headers=None, chunked=False, chunk_size=7):
        """(status, headers dict, body bytes); chunked sends the body in chunk_size pieces."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE)
        try:
            return self._exchange(c, method, path, body, headers, chunked, chunk_size)
        finally:
            c.close()

    @staticmethod
    def _exchange(c, method, path, body, headers, chunked, chunk_size):
        headers = dict(headers or {})
        if chunked:
            c.putrequest(method, path, skip_accept_encoding=True)
            for k, v in headers.items():
                c.putheader(k, v)
            c.putheader("Transfer-Encoding", "chunked")
            c.endheaders()
            for i in range(0, len(body), chunk_size):
                piece = body[i:i + chunk_size]
                c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            c.send(b"0\r\n\r\n")
        else:
            c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        return (r.status, {k.lower(): v for k, v in r.getheaders()}, data)

    def post(self, path, body, headers=None, **kw):
        if isinstance(body, str):
            body = body.encode()
        return self.request("POST", path, body, headers, **kw)

    def state(self):
        status, _, body = self.request("GET", "/_validator/records")
        assert status == 200, status
        return json.loads(body)


class ReceiverTest(unittest.TestCase):
    kind = None
    options = ()

    def setUp(self):
        self.r = Receiver(self.kind, *self.options)
        self.addCleanup(lambda: self.r.close())

    def restart(self, *options):
        self.r.close()
        self.r = Receiver(self.kind, *options)

    def lines(self):
        return [rec["line"] for rec in self.r.state()["records"]]

    def assertNoErrors(self):
        self.assertEqual(self.r.state()["errors"], [])

    def assertOneError(self, status, containing):
        errors = self.r.state()["errors"]
        self.assertEqual(len(errors), 1, errors)
        self.assertEqual(errors[0]["status"], status)
        self.assertIn(containing, errors[0]["reason"])


def now_ns():
    return time.time_ns()


# ---------------------------------------------------------------------------------------------


class TestCommon(unittest.TestCase):
    def test_prints_listening_line_first_and_logs_each_request(self):
        r = Receiver("vector")
        try:
            self.assertRegex(r.first_line, r"^listening on http://127\.0\.0\.1:[0-9]+\n$")
            r.post("/", "a\n")
            r.post("/", "b\n")
            with open(r.log.name) as f:
                entries = [json.loads(l) for l in f]
            self.assertEqual([e["request"] for e in entries], [1, 2])
            self.assertEqual([e["status"] for e in entries], [200, 200])
        finally:
            r.close()

    def test_a_cut_chunked_body_is_an_error_with_a_reason(self):
        r = Receiver("vector")
        try:
            s = socket.create_connection(("127.0.0.1", r.port))
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
            s.shutdown(socket.SHUT_WR)
            s.settimeout(DEADLINE)
            answer = s.recv(4096)
            s.close()
            self.assertTrue(answer.startswith(b"HTTP/1.1 400"), answer)
            state = r.state()
            self.assertEqual(state["records"], [])
            self.assertIn("chunk", state["errors"][0]["reason"])
        finally:
            r.close()

    def test_bad_chunk_size_line_is_rejected(self):
        r = Receiver("vector")
        try:
            s = socket.create_connection(("127.0.0.1", r.port))
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n")
            s.settimeout(DEADLINE)
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 400"))
            s.close()
            self.assertIn("hexadecimal", r.state()["errors"][0]["reason"])
        finally:
            r.close()

    def test_reset_forgets_everything(self):
        r = Receiver("vector")
        try:
            r.post("/", "x\n")
            r.post("/_validator/reset", b"")
            state = r.state()
            self.assertEqual((state["requests"], state["records"]), (0, []))
        finally:
            r.close()


# ---------------------------------------------------------------------------------------------


class TestLoki(ReceiverTest):
    kind = "loki"
    JSON = {"Content-Type": "application/json"}

    def push(self, streams, **kw):
        return self.r.post("/loki/api/v1/push", json.dumps({"streams": streams}), self.JSON, **kw)

    def test_valid_push_is_204_and_stored_with_labels(self):
        t = now_ns()
        status, _, body = self.push([{"stream": {"job": "app", "host": "h1"},
                                      "values": [[str(t), "one"], [str(t + 1), "two", {"trace_id": "ab"}]]}])
        self.assertEqual((status, body), (204, b""))
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["one", "two"])
        self.assertEqual(records[0]["labels"], {"job": "app", "host": "h1"})
        self.assertEqual(records[0]["ts"], str(t))
        self.assertEqual(records[1]["structured_metadata"], {"trace_id": "ab"})
        self.assertEqual(records[0]["stream"], '{host="h1", job="app"}')
        self.assertNoErrors()

    def test_gzip_and_chunked_bodies_are_decoded(self):
        t = now_ns()
        body = gzip.compress(json.dumps({"streams": [{"stream": {"a": "b"},
                                                      "values": [[str(t), "zipped"]]}]}).encode())
        status, _, _ = self.r.post("/loki/api/v1/push", body,
                                   {**self.JSON, "Content-Encoding": "gzip"}, chunked=True)
        self.assertEqual(status, 204)
        self.assertEqual(self.lines(), ["zipped"])
        self.assertNoErrors()

    def test_numeric_timestamp_rejects_the_whole_request(self):
        t = now_ns()
        status, _, body = self.push([{"stream": {"a": "b"},
                                      "values": [[str(t), "ok"], [t, "number"]]}])
        self.assertEqual(status, 400)
        self.assertIn(b"timestamp", body)
        self.assertEqual(self.lines(), [])
        self.assertOneError(400, "must be a string of nanoseconds")

    def test_a_lone_surrogate_refuses_the_whole_request(self):
        t = now_ns()
        body = '{"streams":[{"stream":{"a":"b"},"values":[["%d","ok"],["%d","x\\udc80y"]]}]}' % (t, t + 1)
        status, _, answer = self.r.post("/loki/api/v1/push", body, self.JSON)
        self.assertEqual(status, 400)
        self.assertIn(b"lone surrogate", answer)
        self.assertEqual(self.lines(), [])
        self.assertOneError(400, "lone surrogate")
        pair = '{"streams":[{"stream":{"a":"b"},"values":[["%d","\\ud83d\\ude00 \ufffd"]]}]}' % (t + 2)
        self.assertEqual(self.r.post("/loki/api/v1/push", pair, self.JSON)[0], 204)
        self.assertEqual(self.lines(), ["\U0001F600 \ufffd"])

    def test_non_digit_timestamp_and_non_string_label_are_400(self):
        self.assertEqual(self.push([{"stream": {"a": "b"}, "values": [["1.5e18", "x"]]}])[0], 400)
        self.assertEqual(self.push([{"stream": {"a": 1}, "values": [[str(now_ns()), "x"]]}])[0], 400)
        self.assertEqual(len(self.r.state()["errors"]), 2)

    def test_missing_labels_and_bad_label_names_reject_their_stream_only(self):
        t = now_ns()
        status, _, body = self.push([
            {"stream": {}, "values": [[str(t), "no labels"]]},
            {"stream": {"bad-name": "x"}, "values": [[str(t), "bad name"]]},
            {"stream": {"ok": "y"}, "values": [[str(t), "kept"]]}])
        self.assertEqual(status, 400)
        # The distributor's grouped form: one error per refused stream.
        self.assertIn(b"1 errors like: error at least one label pair is required per stream; "
                      b"1 errors like: error parsing labels", body)
        state = self.r.state()
        self.assertEqual([r["line"] for r in state["records"]], ["kept"])
        self.assertEqual(sorted(r["line"] for r in state["rejected"]), ["bad name", "no labels"])

    def test_out_of_order_depends_on_the_chosen_mode(self):
        t = now_ns()
        self.assertEqual(self.push([{"stream": {"a": "b"}, "values": [[str(t), "new"],
                                                                     [str(t - 10**9), "older"]]}])[0],
                         204, "unordered writes (Loki >= 2.4) take a slightly older entry")
        status, _, body = self.push([{"stream": {"a": "b"},
                                      "values": [[str(t - 2 * 3600 * 10**9), "far behind"]]}])
        self.assertEqual(status, 400)
        self.assertIn(b"entry too far behind", body)
        self.restart("--ordered")
        status, _, body = self.push([{"stream": {"a": "b"}, "values": [[str(t), "new"],
                                                                     [str(t - 1), "older"]]}])
        self.assertEqual(status, 400)
        self.assertIn(b"entry out of order", body)
        self.assertEqual(self.lines(), ["new"])

    def test_identical_entry_is_deduplicated_silently(self):
        t = str(now_ns())
        self.assertEqual(self.push([{"stream": {"a": "b"}, "values": [[t, "same"]]}])[0], 204)
        self.assertEqual(self.push([{"stream": {"a": "b"}, "values": [[t, "same"]]}])[0], 204)
        self.assertEqual(self.lines(), ["same"])

    def test_too_old_and_too_new_entries_are_rejected(self):
        t = now_ns()
        status, _, body = self.push([{"stream": {"a": "b"}, "values": [
            [str(t - 8 * 24 * 3600 * 10**9), "old"], [str(t + 3600 * 10**9), "future"], [str(t), "now"]]}])
        self.assertEqual(status, 400)
        self.assertIn(b"timestamp too old", body)
        self.assertIn(b"timestamp too new", body)
        self.assertEqual(self.lines(), ["now"])

    def test_distributor_errors_are_grouped_as_loki_3_answers(self):
        self.restart("--max-line-size", "10")
        t = now_ns()
        status, _, body = self.push([{"stream": {"a": "b"}, "values": [
            [str(t), "x" * 20], [str(t + 1), "y" * 20], [str(t + 2), "ok"], [str(t + 3), "z" * 30]]}])
        self.assertEqual(status, 400)
        too_long = "max entry size '10' bytes exceeded for stream '{a=\"b\"}' while adding an entry with length '%d' bytes"
        self.assertEqual(body.decode(), f"2 errors like: {too_long % 20}; 1 errors like: {too_long % 30}\n")
        self.assertEqual(self.lines(), ["ok"])
        status, _, body = self.push([{"stream": {"a": "b"}, "values": [[str(t + 4), "w" * 11]]}])
        self.assertEqual((status, body.decode()), (400, too_long % 11 + "\n"), "one error alone has no count")

    def test_content_type_and_encoding_are_checked(self):
        body = json.dumps({"streams": [{"stream": {"a": "b"}, "values": [[str(now_ns()), "x"]]}]}).encode()
        self.assertEqual(self.r.post("/loki/api/v1/push", body, {})[0], 400)
        self.assertEqual(self.r.post("/loki/api/v1/push", body,
                                     {"Content-Type": "application/x-www-form-urlencoded"})[0], 400)
        self.assertEqual(self.r.post("/loki/api/v1/push", body,
                                     {**self.JSON, "Content-Encoding": "br"})[0], 400)
        self.assertEqual(self.r.post("/loki/api/v1/push", body,
                                     {"Content-Type": "application/json; charset=utf-8"})[0], 204)
        self.assertEqual(len(self.r.state()["errors"]), 3)

    def test_test_chosen_rejection_is_not_a_client_error(self):
        self.restart("--reject-line-regex", "^drop")
        t = now_ns()
        status, _, _ = self.push([{"stream": {"a": "b"}, "values": [[str(t), "keep"], [str(t + 1), "drop me"]]}])
        self.assertEqual(status, 400)
        state = self.r.state()
        self.assertEqual([r["line"] for r in state["records"]], ["keep"])
        self.assertEqual([r["line"] for r in state["rejected"]], ["drop me"])
        self.assertEqual(state["errors"], [])

    def test_a_push_of_no_stream_is_422(self):
        self.assertEqual(self.push([])[0], 422)
        self.assertOneError(422, "no stream")

    def wait_for_a_rate_sample(self, interval):
        """Lets one rate interval pass: the next push is sharded by the rate it measured."""
        time.sleep(interval * 1.5)

    def test_a_fast_stream_is_dealt_over_shards_and_a_resend_is_kept_twice(self):
        # Loki 3 with shard_streams on (its default): once the stream's rate is known, a push
        # whose rate plus size passes desired_rate is dealt round robin over shard streams.
        self.restart("--desired-rate", "1000", "--rate-interval", "0.2")
        t = now_ns()
        values = [[str(t + i), f"line {i:03d} " + "x" * 91] for i in range(10)]  # 100 B each
        self.assertEqual(self.push([{"stream": {"job": "a"}, "values": values}])[0], 204)
        self.assertEqual({r["stream"] for r in self.r.state()["records"]}, {'{job="a"}'},
                         "the first push: no rate yet, one stream")
        self.wait_for_a_rate_sample(0.2)
        # A rate of 1000 B/s (the first sample is taken whole; 600 if a second, empty one has
        # passed) and a push of 1000 B: 2 shards; the resend is dealt over them, kept again.
        self.assertEqual(self.push([{"stream": {"job": "a"}, "values": values}])[0], 204)
        records = self.r.state()["records"]
        self.assertEqual(len(records), 20)
        resent = records[10:]
        self.assertEqual({r["labels"].get("__stream_shard__") for r in resent}, {"0", "1"})
        self.assertEqual([r["line"] for r in resent if r["labels"]["__stream_shard__"] == "0"],
                         [v[1] for v in values[0::2]], "entry i goes to copy i % copies")
        # The next push starts where this one left off (shard 2 % 2 = 0), and a resend into the
        # same shard is dropped: only the entries dealt to another copy are kept twice.
        self.assertEqual(self.push([{"stream": {"job": "a"}, "values": values[:2]}])[0], 204)
        self.assertEqual(len(self.r.state()["records"]), 20)
        self.assertNoErrors()

    def test_without_shard_streams_a_resend_is_dropped(self):
        self.restart("--desired-rate", "1000", "--rate-interval", "0.2", "--no-shard-streams")
        t = now_ns()
        values = [[str(t + i), f"line {i:03d} " + "x" * 91] for i in range(10)]
        for _ in range(2):
            self.assertEqual(self.push([{"stream": {"job": "a"}, "values": values}])[0], 204)
            self.wait_for_a_rate_sample(0.2)
        self.assertEqual(len(self.r.state()["records"]), 10)

    def test_streams_below_the_desired_rate_are_not_sharded(self):
        # Eight streams of an eighth each (what streamup sends): none passes the rate.
        self.restart("--desired-rate", "1000", "--rate-interval", "0.2")
        t = now_ns()
        for round in range(3):
            streams = [{"stream": {"job": "a", "streamup_shard": str(n)},
                        "values": [[str(t + 10 * n + i), f"{round} {n} {i} " + "y" * 40] for i in range(2)]}
                       for n in range(8)]
            self.assertEqual(self.push(streams)[0], 204)
            self.wait_for_a_rate_sample(0.2)
        records = self.r.state()["records"]
        self.assertEqual(len(records), 48)
        self.assertTrue(all("__stream_shard__" not in r["labels"] for r in records))


# ---------------------------------------------------------------------------------------------


class TestElasticsearch(ReceiverTest):
    kind = "elasticsearch"
    ND = {"Content-Type": "application/x-ndjson"}

    def bulk(self, text, path="/_bulk", headers=None, **kw):
        status, _, body = self.r.post(path, text, self.ND if headers is None else headers, **kw)
        return status, json.loads(body) if body else None

    def test_index_and_create_actions_are_stored(self):
        status, answer = self.bulk('{"index":{"_index":"logs"}}\n{"message":"one","n":1}\n'
                                   '{"create":{"_index":"logs","_id":"x"}}\n{"message":"two"}\n')
        self.assertEqual(status, 200)
        self.assertFalse(answer["errors"])
        self.assertEqual([list(i) for i in answer["items"]], [["index"], ["create"]])
        self.assertEqual([i[k]["status"] for i in answer["items"] for k in i], [201, 201])
        self.assertEqual(answer["items"][1]["create"]["_id"], "x")
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["one", "two"])
        self.assertEqual(records[0]["source"], {"message": "one", "n": 1})
        self.assertEqual(records[0]["index"], "logs")
        self.assertNoErrors()

    def test_index_from_the_path_and_crlf_lines(self):
        status, answer = self.bulk('{"index":{}}\r\n{"message":"p"}\r\n', path="/app-logs/_bulk")
        self.assertEqual((status, answer["errors"]), (200, False))
        self.assertEqual(self.r.state()["records"][0]["index"], "app-logs")

    def test_bulk_path_only_serves_post_bulk_as_fluent_bit(self):
        self.restart("--bulk-path-only")
        status, _, body = self.r.post("/logs-app/_bulk", '{"create":{}}\n{"message":"x"}\n', self.ND)
        self.assertEqual((status, body), (400, b"error: invalid HTTP endpoint\n"))
        self.assertOneError(400, "only POST /_bulk")
        status, answer = self.bulk('{"create":{}}\n{"message":"y"}\n')
        self.assertEqual((status, answer["errors"]), (200, False))
        self.assertEqual(self.lines(), ["y"])

    def test_body_must_end_with_a_newline(self):
        status, answer = self.bulk('{"index":{"_index":"l"}}\n{"message":"x"}')
        self.assertEqual(status, 400)
        self.assertIn("terminated by a newline", answer["error"]["reason"])
        self.assertEqual(self.lines(), [])
        self.assertOneError(400, "newline")

    def test_missing_index_and_wrong_content_type(self):
        status, answer = self.bulk('{"index":{}}\n{"message":"x"}\n')
        self.assertEqual(status, 400)
        self.assertIn("index is missing", answer["error"]["reason"])
        status, answer = self.bulk('{"index":{"_index":"l"}}\n{"m":1}\n',
                                   headers={"Content-Type": "text/plain"})
        self.assertEqual(status, 406)
        self.assertEqual(answer["status"], 406)
        status, _ = self.bulk('{"index":{"_index":"l"}}\n{"m":1}\n', headers={})
        self.assertEqual(status, 406)

    def test_bad_source_fails_its_item_only(self):
        status, answer = self.bulk('{"index":{"_index":"l"}}\n{"message":"a"}\n'
                                   '{"index":{"_index":"l"}}\n{not json\n'
                                   '{"index":{"_index":"l"}}\n{"message":"c"}\n')
        self.assertEqual(status, 200)
        self.assertTrue(answer["errors"])
        self.assertEqual([i["index"]["status"] for i in answer["items"]], [201, 400, 201])
        self.assertEqual(answer["items"][1]["index"]["error"]["type"], "document_parsing_exception")
        self.assertEqual(self.lines(), ["a", "c"])
        self.assertOneError(400, "not a JSON object")

    def test_reject_field_value_option(self):
        self.restart("--reject-field-value", "level=bad")
        status, answer = self.bulk('{"index":{"_index":"l"}}\n{"message":"a","level":"ok"}\n'
                                   '{"index":{"_index":"l"}}\n{"message":"b","level":"bad"}\n')
        self.assertEqual(status, 200)
        self.assertTrue(answer["errors"])
        self.assertEqual([i["index"]["status"] for i in answer["items"]], [201, 400])
        state = self.r.state()
        self.assertEqual([r["line"] for r in state["records"]], ["a"])
        self.assertEqual([r["line"] for r in state["rejected"]], ["b"])
        self.assertEqual(state["errors"], [])

    def test_create_twice_is_a_conflict(self):
        self.bulk('{"create":{"_index":"l","_id":"1"}}\n{"message":"a"}\n')
        status, answer = self.bulk('{"create":{"_index":"l","_id":"1"}}\n{"message":"a"}\n'
                                   '{"create":{"_index":"l","_id":"2"}}\n{"message":"b"}\n')
        self.assertEqual(status, 200)
        self.assertTrue(answer["errors"])
        conflict = answer["items"][0]["create"]
        self.assertEqual(conflict["status"], 409)
        self.assertEqual(conflict["error"]["type"], "version_conflict_engine_exception")
        self.assertEqual(answer["items"][1]["create"]["status"], 201)
        # The resent document is stored once, and its 409 is no refusal of the client's data.
        state = self.r.state()
        self.assertEqual([r["line"] for r in state["records"]], ["a", "b"])
        self.assertEqual(state["rejected"], [])
        self.assertEqual(state["errors"], [])

    def test_index_with_the_same_id_replaces_and_without_one_adds(self):
        self.bulk('{"index":{"_index":"l","_id":"1"}}\n{"message":"a"}\n')
        status, answer = self.bulk('{"index":{"_index":"l","_id":"1"}}\n{"message":"a"}\n'
                                   '{"index":{"_index":"l"}}\n{"message":"c"}\n'
                                   '{"index":{"_index":"l"}}\n{"message":"c"}\n')
        self.assertEqual([i["index"]["status"] for i in answer["items"]], [200, 201, 201])
        self.assertEqual(answer["items"][0]["index"]["result"], "updated")
        self.assertNotEqual(answer["items"][1]["index"]["_id"], answer["items"][2]["index"]["_id"])

    def test_lost_answers_store_and_close_unanswered(self):
        self.restart("--lose-answers", "2")
        body = '{"create":{"_index":"l","_id":"1"}}\n{"message":"a"}\n'
        self.assertEqual(self.bulk(body)[0], 200)
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.r.post("/_bulk", '{"create":{"_index":"l","_id":"2"}}\n{"message":"b"}\n',
                        {"Content-Type": "application/x-ndjson"})
        status, answer = self.bulk('{"create":{"_index":"l","_id":"2"}}\n{"message":"b"}\n')
        self.assertEqual(answer["items"][0]["create"]["status"], 409)
        state = self.r.state()
        self.assertEqual([r["line"] for r in state["records"]], ["a", "b"])
        self.assertTrue(any("lost answer" in n["note"] for n in state["notes"]), state["notes"])

    def test_gzip_chunked_and_type_parameter(self):
        body = gzip.compress(b'{"index":{"_index":"l"}}\n{"message":"z"}\n')
        status, answer = self.bulk(body, headers={**self.ND, "Content-Encoding": "gzip"}, chunked=True)
        self.assertEqual((status, answer["errors"]), (200, False))
        self.assertEqual(self.lines(), ["z"])
        status, answer = self.bulk('{"index":{"_index":"l","_type":"_doc"}}\n{"message":"t"}\n')
        self.assertEqual(status, 400)
        self.assertIn("unknown parameter [_type]", answer["error"]["reason"])


# ---------------------------------------------------------------------------------------------


class TestSplunkHEC(ReceiverTest):
    kind = "splunk-hec"
    options = ("--token", "t0k")
    AUTH = {"Authorization": "Splunk t0k"}

    def send(self, body, path="/services/collector/event", headers=None, **kw):
        status, _, data = self.r.post(path, body, self.AUTH if headers is None else headers, **kw)
        return status, json.loads(data) if data else None

    def test_concatenated_events_succeed(self):
        body = ('{"event":"one","time":1700000000.5,"host":"h","source":"s","sourcetype":"st"}'
                '\n{"event":{"k":"v"},"fields":{"env":"prod","n":3}} {"event":"three"}')
        self.assertEqual(self.send(body), (200, {"text": "Success", "code": 0}))
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["one", '{"k":"v"}', "three"])
        self.assertEqual(records[0]["host"], "h")
        self.assertEqual(records[1]["fields"], {"env": "prod", "n": 3})
        self.assertNoErrors()

    def test_authorization_is_checked(self):
        self.assertEqual(self.send('{"event":"x"}', headers={}), (401, {"text": "Token is required", "code": 2}))
        self.assertEqual(self.send('{"event":"x"}', headers={"Authorization": "t0k"}),
                         (401, {"text": "Invalid authorization", "code": 3}))
        self.assertEqual(self.send('{"event":"x"}', headers={"Authorization": "Splunk nope"}),
                         (403, {"text": "Invalid token", "code": 4}))
        self.assertEqual(self.lines(), [])

    def test_invalid_event_number_and_earlier_events_kept(self):
        status, answer = self.send('{"event":"a"}{"event":"b"}{"time":1}{"event":"d"}')
        self.assertEqual(status, 400)
        self.assertEqual(answer, {"text": "Event field is required", "code": 12, "invalid-event-number": 2})
        self.assertEqual(self.lines(), ["a", "b"])
        status, answer = self.send('{"event":"a"} {"event":')
        self.assertEqual((status, answer["code"], answer["invalid-event-number"]), (400, 6, 1))
        status, answer = self.send('{"event":""}')
        self.assertEqual((status, answer["code"]), (400, 13))
        status, answer = self.send('[{"event":"in an array"}]')
        self.assertEqual((status, answer["code"], answer["invalid-event-number"]), (400, 6, 0))
        status, answer = self.send('{"event":"x","fields":{"nested":{"no":1}}}')
        self.assertEqual((status, answer["code"]), (400, 15))
        self.assertEqual(self.send("  \n"), (400, {"text": "No data", "code": 5}))

    def test_gzip_chunked_and_size_cap(self):
        body = gzip.compress(b'{"event":"zipped"}')
        self.assertEqual(self.send(body, headers={**self.AUTH, "Content-Encoding": "gzip"}, chunked=True)[0], 200)
        self.assertEqual(self.lines(), ["zipped"])
        self.restart("--token", "t0k", "--max-content-length", "100")
        status, answer = self.send('{"event":"' + "x" * 200 + '"}')
        self.assertEqual(status, 413)
        status, answer = self.send(('{"event":"' + "x" * 200 + '"}').encode(), chunked=True, chunk_size=50)
        self.assertEqual(status, 413)
        self.assertEqual(self.lines(), [])

    def test_bare_collector_path_works(self):
        self.assertEqual(self.send('{"event":"x"}', path="/services/collector")[0], 200)


# ---------------------------------------------------------------------------------------------


def otlp_request(records, resource=None):
    return {"resourceLogs": [{"resource": {"attributes": resource or [
        {"key": "service.name", "value": {"stringValue": "app"}}]},
        "scopeLogs": [{"scope": {"name": "streamup"}, "logRecords": records}]}]}


class TestOTLP(ReceiverTest):
    kind = "otlp"
    JSON = {"Content-Type": "application/json"}

    def export(self, doc, headers=None, **kw):
        body = doc if isinstance(doc, (bytes, str)) else json.dumps(doc)
        status, h, data = self.r.post("/v1/logs", body, headers or self.JSON, **kw)
        return status, h, (json.loads(data) if data and h.get("content-type", "").startswith(
            "application/json") else data)

    def test_valid_export_is_empty_success(self):
        t = str(now_ns())
        status, headers, answer = self.export(otlp_request([
            {"timeUnixNano": t, "severityNumber": 9, "severityText": "INFO",
             "body": {"stringValue": "hello"},
             "attributes": [{"key": "n", "value": {"intValue": "5"}}],
             "traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174"}]))
        self.assertEqual((status, answer), (200, {}))
        self.assertEqual(headers["content-type"], "application/json")
        rec = self.r.state()["records"][0]
        self.assertEqual(rec["line"], "hello")
        self.assertEqual(rec["timeUnixNano"], t)
        self.assertEqual(rec["attributes"], {"n": 5})
        self.assertEqual(rec["resource"], {"service.name": "app"})
        self.assertEqual(rec["traceId"], "5b8efff798038103d269b633813fc60c")
        self.assertNoErrors()
        self.assertEqual(self.r.state()["notes"], [])

    def test_numeric_time_is_accepted_with_a_note(self):
        status, _, _ = self.export(otlp_request([{"timeUnixNano": now_ns(), "body": {"stringValue": "n"}}]))
        self.assertEqual(status, 200)
        self.assertNoErrors()
        self.assertIn("timeUnixNano", self.r.state()["notes"][0]["note"])

    def test_bad_data_is_400_and_nothing_stored(self):
        for bad in ({"timeUnixNano": "12x", "body": {"stringValue": "a"}},
                    {"severityNumber": "SEVERITY_NUMBER_INFO", "body": {"stringValue": "a"}},
                    {"body": {"stringValue": "a", "intValue": "1"}},
                    {"traceId": "xyz", "body": {"stringValue": "a"}},
                    {"body": {"stringValue": 5}}):
            status, _, answer = self.export(otlp_request([{"body": {"stringValue": "ok"}}, bad]))
            self.assertEqual(status, 400, bad)
            self.assertIn("message", answer)
        self.assertEqual(self.lines(), [])
        self.assertEqual(len(self.r.state()["errors"]), 5)

    def test_snake_case_keys_are_ignored_and_reported(self):
        status, _, answer = self.export({"resource_logs": [{"scope_logs": []}]})
        self.assertEqual((status, answer), (200, {}))
        self.assertEqual(self.lines(), [])
        self.assertOneError(200, "lowerCamelCase")

    def test_content_type_is_checked(self):
        self.assertEqual(self.export(otlp_request([]), headers={"Content-Type": "text/plain"})[0], 415)

    def test_a_record_without_a_time_is_reported(self):
        status, _, _ = self.export(otlp_request([{"body": {"stringValue": "when?"}},
                                                 {"observedTimeUnixNano": str(now_ns()),
                                                  "body": {"stringValue": "seen"}}]))
        self.assertEqual(status, 200)
        self.assertOneError(200, "neither time_unix_nano nor observed_time_unix_nano")

    def test_partial_success_option_and_gzip_chunked(self):
        self.restart("--reject-body-regex", "^bad")
        t = str(now_ns())
        body = gzip.compress(json.dumps(otlp_request([{"timeUnixNano": t, "body": {"stringValue": "good"}},
                                                      {"timeUnixNano": t, "body": {"stringValue": "bad 1"}},
                                                      {"timeUnixNano": t, "body": {"stringValue": "bad 2"}}])).encode())
        status, _, answer = self.export(body, headers={**self.JSON, "Content-Encoding": "gzip"}, chunked=True)
        self.assertEqual(status, 200)
        self.assertEqual(answer["partialSuccess"]["rejectedLogRecords"], "2")
        self.assertTrue(answer["partialSuccess"]["errorMessage"])
        state = self.r.state()
        self.assertEqual([r["line"] for r in state["records"]], ["good"])
        self.assertEqual(len(state["rejected"]), 2)
        self.assertEqual(state["errors"], [])

    def test_body_limit_after_decompression(self):
        self.restart("--max-body", "1000")
        big = json.dumps(otlp_request([{"body": {"stringValue": "x" * 5000}}])).encode()
        status, _, _ = self.export(gzip.compress(big), headers={**self.JSON, "Content-Encoding": "gzip"})
        self.assertEqual(status, 413)


def has_opentelemetry_proto():
    try:
        import opentelemetry.proto.collector.logs.v1.logs_service_pb2  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(has_opentelemetry_proto() or os.environ.get("CI"),
                     "needs Python's opentelemetry-proto: python3 -m pip install opentelemetry-proto")
class TestOTLPProtobuf(ReceiverTest):
    """OTLP/HTTP's default encoding, built and read with the OpenTelemetry project's classes."""
    kind = "otlp"
    PROTOBUF = {"Content-Type": "application/x-protobuf"}

    def request(self, records):
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
        from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
        from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs, ScopeLogs
        from opentelemetry.proto.resource.v1.resource_pb2 import Resource
        return ExportLogsServiceRequest(resource_logs=[ResourceLogs(
            resource=Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value="app"))]),
            scope_logs=[ScopeLogs(scope=InstrumentationScope(name="streamup"), log_records=records)])])

    def record(self, text, **fields):
        from opentelemetry.proto.common.v1.common_pb2 import AnyValue
        from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
        return LogRecord(time_unix_nano=now_ns(), body=AnyValue(string_value=text), **fields)

    def export(self, body, headers=None, **kw):
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
        body = body if isinstance(body, bytes) else body.SerializeToString()
        status, h, data = self.r.post("/v1/logs", body, headers or self.PROTOBUF, **kw)
        if status == 200:
            self.assertEqual(h["content-type"], "application/x-protobuf")
            return status, ExportLogsServiceResponse.FromString(data)
        return status, data

    def test_export_is_decoded_and_answered_in_protobuf(self):
        from opentelemetry.proto.logs.v1.logs_pb2 import SEVERITY_NUMBER_ERROR
        status, answer = self.export(self.request([self.record("hello é", severity_number=SEVERITY_NUMBER_ERROR,
                                                               severity_text="err")]))
        self.assertEqual(status, 200)
        self.assertFalse(answer.HasField("partial_success"))
        rec = self.r.state()["records"][0]
        self.assertEqual((rec["line"], rec["severityNumber"], rec["severityText"]), ("hello é", 17, "err"))
        self.assertEqual(rec["resource"], {"service.name": "app"})
        self.assertNoErrors()

    def test_partial_success_gzip_chunked(self):
        self.restart("--reject-body-regex", "^bad")
        body = gzip.compress(self.request([self.record("good"), self.record("bad 1"), self.record("bad 2")])
                             .SerializeToString())
        status, answer = self.export(body, headers={**self.PROTOBUF, "Content-Encoding": "gzip"}, chunked=True)
        self.assertEqual(status, 200)
        self.assertEqual(answer.partial_success.rejected_log_records, 2)
        self.assertTrue(answer.partial_success.error_message)
        self.assertEqual(self.lines(), ["good"])

    def test_bytes_that_are_not_the_message_are_a_400_status(self):
        status, data = self.export(b"\x0a\x05\x01")  # a field longer than the body
        self.assertEqual(status, 400)
        self.assertIn(b"ExportLogsServiceRequest", data)
        self.assertEqual(self.lines(), [])
        self.assertOneError(400, "not an ExportLogsServiceRequest")

    def test_a_receiver_that_takes_only_protobuf_refuses_json(self):
        self.restart("--encodings", "protobuf")
        status, _ = self.export(json.dumps(otlp_request([{"timeUnixNano": str(now_ns())}])).encode(),
                                headers={"Content-Type": "application/json"})
        self.assertEqual(status, 415)
        self.assertOneError(415, "protobuf only")
        self.assertEqual(self.export(self.request([self.record("ok")]))[0], 200)

    def test_a_field_the_message_does_not_have_is_reported(self):
        # LogRecord field 99 (a varint): what a wrong field number would send.
        record = self.record("x").SerializeToString() + bytes([0x98, 0x06, 0x01])
        from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
        status, _ = self.export(self.request([LogRecord.FromString(record)]))
        self.assertEqual(status, 200)
        self.assertOneError(200, "field 99")


# ---------------------------------------------------------------------------------------------


class TestDatadog(ReceiverTest):
    kind = "datadog"
    options = ("--api-key", "k")
    H = {"Content-Type": "application/json", "DD-API-KEY": "k"}

    def send(self, doc, headers=None, **kw):
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        status, _, data = self.r.post("/api/v2/logs", body, self.H if headers is None else headers, **kw)
        return status, json.loads(data) if data else None

    def test_array_is_accepted_with_202(self):
        status, answer = self.send([{"message": "one", "ddsource": "streamup", "ddtags": "env:t",
                                     "hostname": "h", "service": "s", "extra": 1},
                                    {"message": "two"}])
        self.assertEqual((status, answer), (202, {}))
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["one", "two"])
        self.assertEqual(records[0]["service"], "s")
        self.assertEqual(records[0]["attributes"], {"extra": 1})
        self.assertNoErrors()

    def test_api_key_is_required(self):
        self.assertEqual(self.send([{"message": "x"}], headers={"Content-Type": "application/json"})[0], 401)
        self.assertEqual(self.send([{"message": "x"}], headers={**self.H, "DD-API-KEY": "no"})[0], 403)

    def test_limits(self):
        self.assertEqual(self.send([{"message": str(i)} for i in range(1001)])[0], 400)
        big = [{"message": "x" * 900_000} for _ in range(6)]
        self.assertEqual(self.send(gzip.compress(json.dumps(big).encode()),
                                   headers={**self.H, "Content-Encoding": "gzip"})[0], 413)
        self.assertEqual(self.lines(), [])
        status, _ = self.send([{"message": "y" * 1_200_000}], chunked=True, chunk_size=65536)
        self.assertEqual(status, 202)
        rec = self.r.state()["records"][0]
        self.assertTrue(rec["truncated"])
        self.assertLessEqual(len(rec["line"]), 1_000_000)

    def test_missing_message_and_not_json(self):
        self.assertEqual(self.send([{"msg": "x"}])[0], 400)
        self.assertEqual(self.send(b"{nope")[0], 400)
        self.assertEqual(len(self.r.state()["errors"]), 2)


# ---------------------------------------------------------------------------------------------


class TestVector(ReceiverTest):
    kind = "vector"

    def test_bytes_codec_splits_lines_on_any_path(self):
        status, _, body = self.r.post("/any/where", "one\ntwo\n\nlast-without-newline")
        self.assertEqual((status, body), (200, b""))
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["one", "two", "", "last-without-newline"])
        self.assertEqual(records[0]["path"], "/any/where")
        self.assertEqual(records[0]["source_type"], "http_server")

    def test_gzip_chunked(self):
        status, _, _ = self.r.post("/", gzip.compress(b"a\nb\n"), {"Content-Encoding": "gzip"},
                                   chunked=True, chunk_size=5)
        self.assertEqual(status, 200)
        self.assertEqual(self.lines(), ["a", "b"])
        self.assertEqual(self.r.post("/", zlib.compress(b"c\n"), {"Content-Encoding": "deflate"})[0], 200)
        two_members = gzip.compress(b"d\n") + gzip.compress(b"e\n")
        self.assertEqual(self.r.post("/", two_members, {"Content-Encoding": "gzip"})[0], 200)
        self.assertEqual(self.lines(), ["a", "b", "c", "d", "e"])
        cut = gzip.compress(b"f\n" * 1000)[:-12]
        self.assertEqual(self.r.post("/", cut, {"Content-Encoding": "gzip"})[0], 400)
        self.assertEqual(self.r.post("/", b"x", {"Content-Encoding": "br"})[0], 415)

    def test_json_codec(self):
        self.restart("--codec", "json")
        status, _, _ = self.r.post("/", '{"message":"m1","k":1}\n\n[{"message":"m2"},{"other":2}]\n')
        self.assertEqual(status, 200)
        self.assertEqual(self.lines(), ["m1", "m2", '{"other":2}'])
        status, _, body = self.r.post("/", '{"message":"ok"}\nnot json\n')
        self.assertEqual(status, 400)
        self.assertIn(b"Failed decoding body", body)
        self.assertEqual(len(self.lines()), 3)

    def test_strict_path_and_method(self):
        self.restart("--path", "/logs", "--strict-path")
        self.assertEqual(self.r.post("/logs", "x\n")[0], 200)
        self.assertEqual(self.r.post("/logs/x", "y\n")[0], 404)
        self.assertEqual(self.r.request("PUT", "/logs", b"z\n")[0], 405)
        self.assertEqual(self.lines(), ["x"])


# ---------------------------------------------------------------------------------------------


class TestFluentBit(ReceiverTest):
    kind = "fluent-bit"
    JSON = {"Content-Type": "application/json"}

    def test_object_and_array_are_records_tagged_by_path(self):
        status, _, body = self.r.post("/app.log", '{"log":"one"}', self.JSON)
        self.assertEqual((status, body), (201, b""))
        self.assertEqual(self.r.post("/", '[{"log":"two"},{"message":"three","k":1}]', self.JSON)[0], 201)
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["one", "two", "three"])
        self.assertEqual([r["tag"] for r in records], ["app.log", "http.0", "http.0"])
        self.assertEqual(records[2]["record"], {"message": "three", "k": 1})
        self.assertNoErrors()

    def test_content_type_payload_and_gzip(self):
        self.assertEqual(self.r.post("/t", '{"log":"x"}', {})[2], b"error: header 'Content-Type' is not set\n")
        self.assertEqual(self.r.post("/t", '{"log":"x"}', {"Content-Type": "text/plain"})[0], 400)
        self.assertEqual(self.r.post("/t", '{"log":', self.JSON)[0], 400)
        self.assertEqual(self.r.post("/t", '{"log":"a"}\n{"log":"b"}\n', self.JSON)[0], 400)
        self.assertEqual(self.r.post("/t", b"", self.JSON)[0], 400)
        self.assertEqual(self.r.post("/t", gzip.compress(b'{"log":"z"}'),
                                     {**self.JSON, "Content-Encoding": "gzip"}, chunked=True)[0], 201)
        self.assertEqual(self.lines(), ["z"])
        self.assertEqual(len(self.r.state()["errors"]), 5)

    def test_over_buffer_max_size_closes_without_an_answer(self):
        self.restart("--buffer-max-size", "1000")
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.r.post("/t", json.dumps({"log": "x" * 5000}), self.JSON)
        self.assertEqual(self.lines(), [])
        self.assertEqual(self.r.state()["errors"][0]["status"], 413)


# ---------------------------------------------------------------------------------------------


class TestVictoriaLogs(ReceiverTest):
    kind = "victorialogs"

    def test_lines_fields_and_stream(self):
        body = ('{"log":{"level":"info","message":"hello"},"date":"0","stream":"s1","n":5}\n\n')
        status, _, answer = self.r.post("/insert/jsonline?_stream_fields=stream&_time_field=date"
                                        "&_msg_field=log.message", body)
        self.assertEqual((status, answer), (200, b""))
        status, _, _ = self.r.post("/insert/jsonline", '{"_msg":"plain","_time":"2023-06-20T15:32:10.5Z"}')
        self.assertEqual(status, 200)
        records = self.r.state()["records"]
        self.assertEqual([r["line"] for r in records], ["hello", "plain"])
        self.assertEqual(records[0]["fields"], {"log.level": "info", "_msg": "hello", "stream": "s1", "n": "5"})
        self.assertEqual(records[0]["_stream"], '{stream="s1"}')
        self.assertEqual(records[1]["_time"], "2023-06-20T15:32:10.5Z")
        self.assertNoErrors()

    def test_bad_lines_are_skipped_and_only_all_bad_fails(self):
        status, _, _ = self.r.post("/insert/jsonline", '{"_msg":"ok"}\nnot json\n{"_msg":"ok2","_time":"bad"}\n')
        self.assertEqual(status, 200)
        self.assertEqual(self.lines(), ["ok"])
        self.assertEqual(len(self.r.state()["errors"]), 2)
        status, _, _ = self.r.post("/insert/jsonline", "nope\n")
        self.assertEqual(status, 400)

    def test_a_lone_surrogate_is_stored_as_the_text_of_its_escape(self):
        status, _, _ = self.r.post("/insert/jsonline", '{"_msg":"a\\udc80b \\ud83d\\ude00"}\n')
        self.assertEqual(status, 200)
        self.assertEqual(self.lines(), ["a\\udc80b \U0001F600"])
        self.assertNoErrors()

    def test_missing_msg_gets_the_default(self):
        self.r.post("/insert/jsonline", '{"other":"x"}\n')
        self.assertTrue(self.lines()[0].startswith("missing _msg field"))

    def test_records_are_visible_while_the_chunked_body_is_open(self):
        c = socket.create_connection(("127.0.0.1", self.r.port))
        self.addCleanup(c.close)
        c.sendall(b"POST /insert/jsonline HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                  b"Content-Encoding: gzip\r\n\r\n")
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        for i in range(3):
            data = z.compress(b'{"_msg":"live %d"}\n' % i) + z.flush(zlib.Z_SYNC_FLUSH)
            c.sendall(b"%x\r\n%s\r\n" % (len(data), data))
            deadline = time.monotonic() + DEADLINE
            while len(self.lines()) < i + 1:
                self.assertLess(time.monotonic(), deadline, "record not visible while body open")
                time.sleep(0.01)
        tail = z.flush()
        c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(tail), tail))
        c.settimeout(DEADLINE)
        self.assertTrue(c.recv(4096).startswith(b"HTTP/1.1 200"))
        self.assertEqual(self.lines(), ["live 0", "live 1", "live 2"])
        self.assertNoErrors()


class TestRefusals(unittest.TestCase):
    """The test-chosen refusals answer the same for every kind; what passes them reaches the
    kind (vector's bytes codec stores any body), and they count as notes, not client errors."""

    KINDS = ("loki", "elasticsearch", "splunk-hec", "otlp", "datadog", "vector", "fluent-bit",
             "victorialogs")

    def receiver(self, kind, *options):
        r = Receiver(kind, *options)
        self.addCleanup(r.close)
        return r

    def notes(self, r):
        return [n["text"] if isinstance(n, dict) else n for n in r.state()["notes"]]

    def test_every_kind_refuses_as_told(self):
        for kind in self.KINDS:
            with self.subTest(kind=kind):
                r = self.receiver(kind, "--drop-after", "100", "--refuse-over", "4000",
                                  "--limit-rate-over", "2000", "--retry-after", "3",
                                  "--refuse-record", "^BAD")
                with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
                    r.post("/", b"w" * 50 + b"\n" + b"v" * 5000, chunked=True, chunk_size=64)
                status, headers, _ = r.post("/", b"x" * 5000)
                self.assertEqual((status, headers.get("connection")), (413, "close"))
                status, _, _ = r.post("/", b"y" * 6000, chunked=True, chunk_size=500)
                self.assertEqual(status, 413, "a chunked body is refused once it passes the limit")
                status, headers, _ = r.post("/", b"z" * 3000)
                self.assertEqual((status, headers.get("retry-after")), (429, "3"))
                status, _, body = r.post("/", b"one\nBAD two\nthree\n")
                self.assertEqual((status, body), (400, b"refused record 2: it matches ^BAD\n"))
                state = r.state()
                self.assertEqual((state["errors"], state["records"], len(state["notes"])), ([], [], 5))

    def test_what_passes_the_refusals_reaches_the_kind(self):
        r = self.receiver("vector", "--drop-after", "100", "--drop-times", "2", "--refuse-over", "4000",
                          "--limit-rate-over", "2000", "--refuse-record", "^BAD")
        for _ in range(2):
            with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
                r.post("/", b"k\n" * 100)
        self.assertEqual(r.post("/", b"k\n" * 100)[0], 200, "only the first two are dropped")
        self.assertEqual(r.post("/", gzip.compress(b"x\nBAD\n"), {"Content-Encoding": "gzip"})[0], 400)
        self.assertEqual(r.post("/", b"q" * 2500, chunked=True, chunk_size=500)[0], 429)
        self.assertEqual(r.post("/", b"fine\n", chunked=True)[0], 200)
        self.assertEqual([x["line"] for x in r.state()["records"]], ["k"] * 100 + ["fine"])


class TestReadBack(unittest.TestCase):
    """The cheap count a wait repeats and the snapshot a test compares, each one request."""

    def receiver(self, kind, *options):
        r = Receiver(kind, *options)
        self.addCleanup(r.close)
        return r

    def get(self, r, path):
        status, _, body = r.request("GET", path)
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def test_count_says_how_many_without_the_records(self):
        r = self.receiver("vector", "--refuse-record", "^BAD")
        r.post("/", "a\nb\n")
        r.post("/", "BAD\n")
        self.assertEqual(self.get(r, "/_validator/count"), {"requests": 2, "records": 2, "rejected": 0, "errors": 0})
        r.request("GET", "/_validator/nothing-here")
        self.assertEqual(self.get(r, "/_validator/count")["requests"], 3, "an unknown validator path is a request of the kind")

    def test_snapshot_gives_bytes_back_and_the_receivers_order(self):
        import base64
        r = self.receiver("loki")
        now = time.time_ns()
        body = json.dumps({"streams": [{"stream": {"job": "x"}, "values": [[str(now + 2), "second"], [str(now + 1), "caf\u00e9 first"]]}]})
        self.assertEqual(r.post("/loki/api/v1/push", body, {"Content-Type": "application/json"})[0], 204)
        snapshot = self.get(r, "/_validator/snapshot")
        lines = [base64.b64decode(x) for x in snapshot["lines"].split("\n")]
        self.assertEqual((snapshot["ordered"], lines), (True, ["café first".encode(), b"second"]))
        self.assertEqual((snapshot["requests"], snapshot["errors"], snapshot["rejected"]), (1, [], ""))
        self.assertEqual(snapshot["fields"]["labels"]["types"], ["dict"])
        # Vector has no order of its own: arrival order.
        v = self.receiver("vector")
        v.post("/", "z \u65e5\na\n".encode())
        snapshot = self.get(v, "/_validator/snapshot")
        self.assertFalse(snapshot["ordered"])
        self.assertEqual([base64.b64decode(x) for x in snapshot["lines"].split("\n")], ["z \u65e5".encode(), b"a"])

    def test_a_byte_kept_by_surrogateescape_comes_back_as_that_byte(self):
        import base64
        import importlib.util
        spec = importlib.util.spec_from_file_location("receiver", RECEIVER)
        receiver = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(receiver)
        data = {"kind": "victorialogs", "requests": 1, "records": [{"line": "caf\udce9", "note": "caf\udce9"}],
                "rejected": [{"line": "x\udcff"}], "errors": [{"request": 1, "status": 400, "reason": "bad \udcff"}]}
        snapshot = receiver.snapshot_for_tests(data)
        self.assertEqual(base64.b64decode(snapshot["lines"]), b"caf\xe9")
        self.assertEqual(base64.b64decode(snapshot["rejected"]), b"x\xff")
        self.assertEqual(snapshot["records"][0]["note"], "caf\ufffd")
        self.assertEqual(snapshot["errors"], ["request 1: 400 bad \ufffd"])
        json.dumps(snapshot).encode("utf-8")  # any JSON parser takes it


class TestNamespaces(unittest.TestCase):
    """One process, many receivers: each namespace its own port, store and options."""

    def setUp(self):
        self.process = subprocess.Popen([sys.executable, RECEIVER, "loki", "--port", "0", "--namespaces"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.process.stdout.readline().decode()
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.addCleanup(self.end)

    def end(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for f in (self.process.stdin, self.process.stdout, self.process.stderr):
            if not f.closed:
                f.close()

    def control(self, method, path, value=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE)
        try:
            c.request(method, path, body=json.dumps(value).encode() if value is not None else None)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def open(self, *options):
        status, body = self.control("POST", "/_validator/namespaces", {"options": list(options)})
        self.assertEqual(status, 200, body)
        port = int(json.loads(body)["url"].rsplit(":", 1)[1])
        r = Receiver.__new__(Receiver)
        r.port = port
        return r

    def push(self, r, line):
        body = json.dumps({"streams": [{"stream": {"job": "x"}, "values": [[str(time.time_ns()), line]]}]})
        return r.post("/loki/api/v1/push", body, {"Content-Type": "application/json"})

    def test_each_namespace_has_its_own_port_store_and_options(self):
        plain = self.open()
        losing = self.open("--lose-answers", "1")
        self.assertNotEqual(plain.port, losing.port)
        self.assertEqual(self.push(plain, "one")[0], 204)
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.push(losing, "two")
        self.assertEqual([x["line"] for x in plain.state()["records"]], ["one"])
        self.assertEqual([x["line"] for x in losing.state()["records"]], ["two"])
        status, body = self.control("GET", "/_validator/count")
        self.assertEqual(json.loads(body)["requests"], 0, "the control port's own store saw nothing")

    def test_a_closed_namespace_stops_listening(self):
        r = self.open()
        self.assertEqual(self.control("DELETE", f"/_validator/namespaces/{r.port}")[0], 200)
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", r.port), timeout=1).close()
            except ConnectionRefusedError:
                break
            except ConnectionResetError:
                pass  # closed while this connection waited in its backlog
            time.sleep(0.01)
        else:
            self.fail("the namespace still accepts connections")
        self.assertEqual(self.control("DELETE", f"/_validator/namespaces/{r.port}")[0], 404)

    def test_options_the_parser_refuses_are_a_400_and_the_process_goes_on(self):
        status, body = self.control("POST", "/_validator/namespaces", {"options": ["--no-such-option"]})
        self.assertEqual(status, 400, body)
        self.assertIn(b"--no-such-option", body)
        self.open()

    def test_the_process_ends_when_its_stdin_ends(self):
        self.open()
        self.process.stdin.close()
        self.assertEqual(self.process.wait(DEADLINE), 0)


if __name__ == "__main__":
    unittest.main()
