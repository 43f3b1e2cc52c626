#!/usr/bin/env python3
"""A minimal kdispatchd protocol client for the device scripts (daemon/PROTOCOL.md: a 4-byte
big-endian length, then one JSON object). Used where kdctl has no command: reporting a miss as an
application does, and reading jobs by key.

  kd_socket.py status SOCKET                       the status reply, as JSON
  kd_socket.py miss SOCKET KEY...                  reports each key missed once (acknowledged)
  kd_socket.py jobs SOCKET KEY...                  the jobs of the keys, as JSON
  kd_socket.py wait-settled SOCKET SECONDS KEY...  waits until every key's job is done, failed or
                                                   cancelled; exit 0, or 1 after SECONDS
"""
import json
import socket
import struct
import sys
import time

SETTLED = ("done", "failed", "cancelled")


def request(path, message, timeout_s=20.0):
    """Sends one request on a fresh connection and returns the reply object."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(path)
        body = json.dumps(dict(message, v=1)).encode()
        s.sendall(struct.pack(">I", len(body)) + body)
        header = _read(s, 4)
        (length,) = struct.unpack(">I", header)
        return json.loads(_read(s, length))


def _read(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("kdispatchd closed the connection")
        data += chunk
    return data


def status(path):
    return request(path, {"type": "status"})


def miss(path, keys):
    return request(path, {"type": "miss", "keys": [{"key": k, "count": 1} for k in keys], "ack": True})


def jobs(path, keys):
    return request(path, {"type": "jobs", "keys": list(keys)})


def wait_settled(path, seconds, keys):
    """The jobs' states once all settled, or None after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            states = [j.get("state") for j in jobs(path, keys).get("jobs", [])]
        except OSError:
            states = []
        if states and all(s in SETTLED for s in states):
            return states
        if time.monotonic() > deadline:
            return None
        time.sleep(0.5)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    command, path = argv[1], argv[2]
    if command == "status":
        print(json.dumps(status(path), indent=1))
    elif command == "miss":
        print(json.dumps(miss(path, argv[3:])))
    elif command == "jobs":
        print(json.dumps(jobs(path, argv[3:]), indent=1))
    elif command == "wait-settled":
        states = wait_settled(path, float(argv[3]), argv[4:])
        print(json.dumps(states))
        return 0 if states is not None else 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
