"""A stand-in for Bedrock's runtime that checks every request's SigV4
signature with botocore (AWS's own Python signer, independent of the Rust
`aws-sigv4` crate bosun signs with) before answering.

    python bedrock_sigv4_server.py RECORDING ACCESS_KEY SECRET TOKEN REGION

RECORDING is a nock recording (JSON, `response` the event-stream body in
hex), or `round-trip`: then the first turn calls `read_file` on greet.sh
and a request that carries the file's text back (`hello wrold`) gets the
answer, both as event-stream frames built here. TOKEN is `-` for none. Prints `PORT <n>` once listening. For each
POST it recomputes the signature over the headers a SigV4 client must sign
(content-type, host, x-amz-date, x-amz-security-token when a token is in
use) at the request's own x-amz-date, and answers 403 as Bedrock does when
the Authorization header differs; otherwise it sends the recorded stream.
GET /count answers how many POSTs came and how many were refused.
"""

import json
import struct
import sys
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import sigv4_check

recording_path, access_key, secret, token, region = sys.argv[1:6]
token = None if token == "-" else token
ROUND_TRIP = recording_path == "round-trip"
if not ROUND_TRIP:
    with open(recording_path, encoding="utf-8") as f:
        stream = bytes.fromhex(json.load(f)[0]["response"])


def frame(event_type, payload):
    """One event-stream frame: prelude and its CRC, string headers, the
    JSON payload, the message CRC (AWS's documented layout)."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def turn(second):
    start = [frame("messageStart", {"role": "assistant"})]
    if second:
        blocks = [frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "It prints hello wrold."}})]
        stop = "end_turn"
    else:
        blocks = [
            frame("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read_file"}}}),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": json.dumps({"path": "greet.sh"})}}}),
        ]
        stop = "tool_use"
    end = [
        frame("contentBlockStop", {"contentBlockIndex": 0}),
        frame("messageStop", {"stopReason": stop}),
        frame("metadata", {"usage": {"inputTokens": 1000, "outputTokens": 100, "totalTokens": 1100}, "metrics": {"latencyMs": 1}}),
    ]
    return b"".join(start + blocks + end)
counts = {"posts": 0, "refused": 0}


def expected_authorization(handler, body):
    return sigv4_check.expected_authorization(handler, body, access_key, secret, token, "bedrock", region)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, content_type, body, extra=()):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send(200, "application/json", json.dumps(counts).encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        counts["posts"] += 1
        expected = expected_authorization(self, body)
        if self.headers.get("authorization") != expected:
            counts["refused"] += 1
            message = {
                "message": "The request signature we calculated does not match the signature you provided. "
                f"Expected {expected}"
            }
            extra = [("x-amzn-ErrorType", "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/")]
            self.send(403, "application/json", json.dumps(message).encode(), extra)
            return
        if ROUND_TRIP:
            self.send(200, "application/vnd.amazon.eventstream", turn(b"hello wrold" in body))
        else:
            self.send(200, "application/vnd.amazon.eventstream", stream)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
