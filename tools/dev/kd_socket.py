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
import inspect
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


def run_command(argv, commands, usage):
    """A script's main: runs commands[argv[1]] on the words after it and returns its exit code (0
    where it returns None). A missing or unknown command, or words the command does not take,
    print `usage` and return 2."""
    command = commands.get(argv[1]) if len(argv) > 1 else None
    if command is not None:
        try:
            inspect.signature(command).bind(*argv[2:])
        except TypeError:
            command = None
    if command is None:
        print(usage, file=sys.stderr)
        return 2
    rc = command(*argv[2:])
    return 0 if rc is None else rc


def _wait_settled_command(path, seconds, *keys):
    states = wait_settled(path, float(seconds), list(keys))
    print(json.dumps(states))
    return 0 if states is not None else 1


COMMANDS = {
    "status": lambda path: print(json.dumps(status(path), indent=1)),
    "miss": lambda path, *keys: print(json.dumps(miss(path, list(keys)))),
    "jobs": lambda path, *keys: print(json.dumps(jobs(path, list(keys)), indent=1)),
    "wait-settled": _wait_settled_command,
}


if __name__ == "__main__":
    sys.exit(run_command(sys.argv, COMMANDS, __doc__))
