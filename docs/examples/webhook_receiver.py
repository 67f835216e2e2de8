#!/usr/bin/env python3
"""A threatd webhook receiver: verifies each delivery's Standard Webhooks
signature and timestamp, skips a webhook-id it has already handled, and
answers 204. Python 3 standard library only.

    WEBHOOK_SECRET=whsec_... PORT=8080 python3 webhook_receiver.py
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

SECRET = base64.b64decode(os.environ["WEBHOOK_SECRET"].removeprefix("whsec_"))
TOLERANCE = 5 * 60  # seconds
seen = set()  # keep handled webhook-ids in a database in production


def verify(headers, body):
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not (msg_id and stamp.isdigit() and signatures):
        raise ValueError("missing webhook headers")
    if abs(time.time() - int(stamp)) > TOLERANCE:
        raise ValueError("timestamp out of tolerance")
    mac = hmac.new(SECRET, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256)
    expected = base64.b64encode(mac.digest()).decode()
    for sig in signatures.split():
        version, _, value = sig.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return msg_id
    raise ValueError("no matching signature")


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            msg_id = verify(self.headers, body)
        except ValueError as e:
            self.send_error(400, str(e))
            return
        if msg_id not in seen:  # at least once: the same id may come again
            seen.add(msg_id)
            event = json.loads(body)
            report = event["data"]
            print(event["type"], msg_id, report["id"], report.get("resource_identifier"), flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8080"))), Receiver)
    print("listening on", server.server_address[1], flush=True)
    sys.stdout.flush()
    server.serve_forever()
