"""Raw HTTP/1.1 over a socket for the system tests that urllib cannot express:
arbitrary body bytes (invalid UTF-8, lying or slow bodies), streams read
event by event and dropped mid-way, and a tolerant response parser."""

import json
import socket
import struct
import time


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))


def connect(port, timeout_s=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def request_head(method, path, content_length=None, extra=None):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1", "Connection: close",
             "Content-Type: application/json"]
    if content_length is not None:
        lines.append("Content-Length: %d" % content_length)
    lines += list(extra or [])
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(sock):
    """Reads one response until the server closes (we always send Connection: close)."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return parse_response(data)


def parse_response(data):
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0].startswith("HTTP/1."):
        raise ValueError("not an HTTP response: %r" % data[:200])
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    elif "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return Response(status, headers, body)


def dechunk(data):
    out = b""
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return out


def send(port, body, path="/generate", method="POST", timeout_s=60, extra_headers=None):
    """One request with exactly these body bytes; returns the Response."""
    with connect(port, timeout_s) as s:
        s.sendall(request_head(method, path, len(body), extra_headers) + body)
        return read_response(s)


class Stream:
    """A /generate_stream call read event by event; close() drops it abruptly (RST)."""

    def __init__(self, port, body, path="/generate_stream", timeout_s=60):
        payload = json.dumps(body).encode()
        self.sock = connect(port, timeout_s)
        self.sock.sendall(request_head("POST", path, len(payload)) + payload)
        self.buffer = b""
        self.status = None
        self.headers = {}
        self.events = []
        self._read_head()

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("the server closed the stream")
        self.buffer += chunk

    def _read_head(self):
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def next_event(self):
        """The next `data:` payload as parsed JSON. Each SSE frame is written as
        one chunk, so the frame's own blank line is intact inside the raw bytes."""
        while True:
            idx = self.buffer.find(b"data:")
            end = self.buffer.find(b"\n\n", idx) if idx >= 0 else -1
            if end >= 0:
                event = self.buffer[idx + 5:end].strip()
                self.buffer = self.buffer[end + 2:]
                self.events.append(json.loads(event))
                return self.events[-1]
            self._fill()

    def read_to_end(self):
        """Every remaining event until the server ends the response."""
        try:
            while True:
                event = self.next_event()
                if event.get("details") is not None or event.get("generated_text") is not None \
                        or "error" in event:
                    return event
        except EOFError:
            return None

    def close(self):
        # SO_LINGER 0: close with a reset, as a crashed or killed client would.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def wait_until(predicate, timeout_s, interval_s=0.1):
    """Polls predicate() until it returns a true value or timeout_s passes; returns the last value."""
    deadline = time.time() + timeout_s
    value = predicate()
    while not value and time.time() < deadline:
        time.sleep(interval_s)
        value = predicate()
    return value
