#!/usr/bin/env python3
"""Checks clickhouse.py against the real ClickHouse 18.16 server: it starts by hand on free
loopback ports, takes JSONEachRow over HTTP, refuses a body cut mid-line, and stops cleanly.

    python3 Tests/Receivers/test_clickhouse.py [-v]

Skips when /usr/sbin/clickhouse-server is missing (install: apt-get install -y clickhouse-server).

Thread safety: unittest runs the tests on one thread; the class owns one server.
"""

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clickhouse  # noqa: E402

INSERT = "/?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow"


def post(url, body, headers=None):
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def rows(first, last):
    return "".join('{"n":%d}\n' % i for i in range(first, last + 1)).encode()


@unittest.skipUnless(os.path.exists(clickhouse.SERVER_BINARY), "clickhouse-server is not installed")
class TestClickHouse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="clickhouse-test-")
        cls.server = clickhouse.start(cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.server.query("TRUNCATE TABLE t")

    def count(self):
        return int(self.server.query("SELECT count() FROM t"))

    def test_listens_on_loopback_only_with_its_files_in_its_directory(self):
        self.assertRegex(self.server.url, r"^http://127\.0\.0\.1:[0-9]+$")
        self.assertTrue(os.path.isdir(os.path.join(self.dir, "data")))
        self.assertTrue(os.path.exists(os.path.join(self.dir, "log", "server.log")))

    def test_hundred_thousand_rows_arrive(self):
        status, _ = post(self.server.url + INSERT, rows(1, 100000))
        self.assertEqual(status, 200)
        self.assertEqual(self.count(), 100000)
        self.assertEqual(int(self.server.query("SELECT sum(n) FROM t")), 100000 * 100001 // 2)

    def test_a_body_cut_mid_line_is_refused_whole(self):
        status, body = post(self.server.url + INSERT, rows(1, 100000) + b'{"n":1')
        self.assertEqual(status, 500)
        self.assertIn("Unexpected end of stream while parsing JSONEachRow", body)
        self.assertEqual(self.count(), 0)

    def test_gzip_request_body_is_decoded_without_any_setting(self):
        status, _ = post(self.server.url + INSERT, gzip.compress(rows(1, 1000)),
                         {"Content-Encoding": "gzip"})
        self.assertEqual(status, 200)
        self.assertEqual(self.count(), 1000)

    def test_command_line_start_and_stop(self):
        d = tempfile.mkdtemp(prefix="clickhouse-cli-")
        self.addCleanup(shutil.rmtree, d, True)
        script = os.path.join(HERE, "clickhouse.py")
        p = subprocess.Popen([sys.executable, script, "start", "--dir", d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            url = p.stdout.readline().decode().strip()
            self.assertRegex(url, r"^http://127\.0\.0\.1:[0-9]+$")
            out = subprocess.run([sys.executable, script, "query", "--dir", d, "SELECT 1+1"],
                                 capture_output=True, timeout=60)
            self.assertEqual((out.returncode, out.stdout.strip()), (0, b"2"))
            stop = subprocess.run([sys.executable, script, "stop", "--dir", d], timeout=60)
            self.assertEqual(stop.returncode, 0)
            self.assertEqual(p.wait(60), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()


if __name__ == "__main__":
    unittest.main()
