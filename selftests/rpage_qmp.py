#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rpage_qmp: one QMP command to a QEMU, for the VM demo's scripts.

  rpage_qmp.py ADDR COMMAND [ARGUMENTS-JSON]
                        run COMMAND; print its return value as JSON
  rpage_qmp.py move SRC DST URI [EVENTS]
                        moves a paused-at-once VM whose RAM both sides
                        share: stops SRC, turns x-ignore-shared on at
                        both, has DST (started with -incoming defer)
                        listen on URI, migrates SRC there and runs DST;
                        prints downtime_ms (SRC stopped to DST running,
                        one clock), migrated_bytes and SRC's state after;
                        appends to EVENTS, if given, a line
                        "E SECONDS NAME" for each step (stop, migrated,
                        running), SECONDS since the epoch as bash's
                        $EPOCHREALTIME has them, for the move's timeline
                        (selftests/rpage_timeline.py)

ADDR, SRC and DST are a Unix socket's path, or HOST:PORT. QEMU's QMP
server takes one client at a time; each call is one connection.
"""
import json
import socket
import sys
import time


def fail(msg):
    print(f"rpage_qmp: {msg}", file=sys.stderr)
    sys.exit(1)


class Qmp:
    def __init__(self, addr, timeout=30):
        if "/" in addr:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target = addr
        else:
            host, port = addr.rsplit(":", 1)
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            target = (host, int(port))
        self.sock.settimeout(timeout)
        self.sock.connect(target)
        self.buf = b""
        greeting = self.receive()
        if "QMP" not in greeting:
            fail(f"{addr}: not a QMP greeting: {greeting}")
        self.command("qmp_capabilities")

    def receive(self):
        """The next message that is not an event."""
        while True:
            while b"\n" not in self.buf:
                data = self.sock.recv(65536)
                if not data:
                    fail("QEMU closed the QMP connection")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            if not line.strip():
                continue
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def command(self, name, args=None):
        req = {"execute": name}
        if args:
            req["arguments"] = args
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        if name == "quit":
            # QEMU may close the socket before its reply is read.
            try:
                self.receive()
            except (OSError, SystemExit):
                pass
            return {}
        reply = self.receive()
        if "error" in reply:
            fail(f"{name}: {reply['error'].get('desc', reply['error'])}")
        return reply.get("return")


def wait_for(poll, deadline, what):
    """poll() until it returns (True, value); fails past deadline."""
    while True:
        done, value = poll()
        if done:
            return value
        if time.monotonic() > deadline:
            fail(f"{what}; last: {value}")
        time.sleep(0.01)


def move(src_addr, dst_addr, uri, events=None):
    caps = {"capabilities": [{"capability": "x-ignore-shared",
                              "state": True}]}
    said = []

    def event(name):
        said.append(f"E {time.time():.6f} {name}\n")
    src, dst = Qmp(src_addr), Qmp(dst_addr)
    dst.command("migrate-set-capabilities", caps)
    dst.command("migrate-incoming", {"uri": uri})
    src.command("migrate-set-capabilities", caps)
    # The downtime starts as the stop is asked for.
    event("stop")
    t0 = time.monotonic()
    src.command("stop")
    src.command("migrate", {"uri": uri})
    deadline = t0 + 120

    def migrated():
        info = src.command("query-migrate")
        return info.get("status") in ("completed", "failed", "cancelled"), info
    info = wait_for(migrated, deadline, "migration not over after 120 s")
    if info["status"] != "completed":
        fail(f"migration {info['status']}: {info.get('error-desc', '')}")
    event("migrated")

    # The source was paused: so is the destination, once it has it all.
    def dst_paused():
        status = dst.command("query-status")["status"]
        return status == "paused", status
    wait_for(dst_paused, deadline, "the destination never got the whole VM")
    dst.command("cont")
    t1 = time.monotonic()
    event("running")
    if events:
        # Written once the move is over: nothing slows its steps.
        with open(events, "a") as f:
            f.writelines(said)
    print(f"downtime_ms={(t1 - t0) * 1000:.0f}"
          f" migrated_bytes={info['ram']['transferred']}"
          f" source_state={src.command('query-status')['status']}"
          f" destination_state={dst.command('query-status')['status']}")


def main():
    if len(sys.argv) in (5, 6) and sys.argv[1] == "move":
        move(*sys.argv[2:])
        return
    if len(sys.argv) < 3:
        fail("usage: rpage_qmp.py ADDR COMMAND [ARGUMENTS-JSON]")
    addr, cmd = sys.argv[1], sys.argv[2]
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    print(json.dumps(Qmp(addr).command(cmd, args)))


if __name__ == "__main__":
    main()
