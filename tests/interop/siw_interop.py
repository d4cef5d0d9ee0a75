#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Scenarios between netdirect's ND programs on this host and rdma-core's rping and
ucmatose over kernel siw in the siw VM (run.sh boots it and starts this driver).

The VM runs one agent that connects back to us once per job, reads a shell command,
runs it and streams its output back, ending with "== rc=N". Our side runs
nd_rping_compat and nd_cmatose with ND_TRANSPORT=iwarp. One line per scenario, then
"N passed, N failed"; exit status 0 when none failed.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

JOB_TIMEOUT = 180


class Agent:
    """The VM's end: each accepted connection is one job."""

    def __init__(self, addr, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(4)
        self.sock.settimeout(JOB_TIMEOUT)

    def start(self, cmd):
        conn, _ = self.sock.accept()
        conn.settimeout(JOB_TIMEOUT)
        conn.sendall((cmd + "\n").encode())
        return Job(conn)

    def quit(self):
        try:
            conn, _ = self.sock.accept()
            conn.sendall(b"quit\n")
            conn.close()
        except OSError:
            pass


class Job:
    def __init__(self, conn):
        self.conn = conn
        self.buf = b""
        self.lines = []
        self.rc = None

    def _line(self):
        while b"\n" not in self.buf:
            data = self.conn.recv(65536)
            if not data:
                raise EOFError("agent closed the job")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        text = line.decode(errors="replace")
        self.lines.append(text)
        return text

    def until(self, marker):
        while True:
            line = self._line()
            if line.startswith("== rc="):
                self.rc = int(line[6:])
                return False
            if marker in line:
                return True

    def finish(self):
        try:
            if self.rc is None:
                self.until("\0never")
        except (OSError, EOFError):
            self.rc = -1
        self.conn.close()
        return self.rc


def nd_env(crc):
    env = dict(os.environ)
    env["ND_TRANSPORT"] = "iwarp"
    env["ND_IWARP_CRC"] = "1" if crc else "0"
    env.setdefault("ND_LOG", "iwarp:debug,cm:debug")
    return env


def run_nd(tool, args, crc, log):
    return subprocess.Popen([tool] + args, env=nd_env(crc), stdout=log, stderr=subprocess.STDOUT, text=True)


def wait_nd(proc):
    try:
        return proc.wait(timeout=JOB_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -9


def vm_listener_ready(port):
    # siw's listening socket is a kernel TCP socket: ss shows it once the server listens.
    return (f"for i in $(seq 600); do [ -n \"$(ss -Hltn 'sport = :{port}')\" ] && break; sleep 0.1; done; "
            "echo READY")


def scen_nd_client(m, tool, nd_args, vm_cmd, vm_port, crc, log):
    """A server in the VM, our client on this host."""
    job = m.agent.start(f"timeout 120 {vm_cmd} & p=$!; {vm_listener_ready(vm_port)}; wait $p")
    if not job.until("READY"):
        return False, job.lines
    proc = run_nd(tool, nd_args, crc, log)
    nd_rc = wait_nd(proc)
    vm_rc = job.finish()
    return nd_rc == 0 and vm_rc == 0, job.lines + [f"nd rc={nd_rc} vm rc={vm_rc}"]


def scen_vm_client(m, tool, nd_args, vm_cmd, crc, log):
    """Our server on this host, a client in the VM."""
    proc = run_nd(tool, nd_args, crc, log)
    # nd tools print "listening on" once the listener is up
    ready = False
    for _ in range(600):
        log.flush()
        with open(log.name) as f:
            ready = "listening on" in f.read()
        if ready or proc.poll() is not None:
            break
        time.sleep(0.05)
    if not ready:
        proc.kill()
        return False, ["our server never listened"]
    job = m.agent.start(f"timeout 120 {vm_cmd}")
    vm_rc = job.finish()
    nd_rc = wait_nd(proc)
    return nd_rc == 0 and vm_rc == 0, job.lines + [f"nd rc={nd_rc} vm rc={vm_rc}"]


class Matrix:
    def __init__(self, args):
        self.args = args
        self.agent = Agent(args.agent_addr, args.agent_port)
        self.passed = self.failed = 0
        bindir = args.bindir
        self.rping = os.path.join(bindir, "nd_rping_compat")
        self.cmatose = os.path.join(bindir, "nd_cmatose")

    def scenarios(self):
        a = self.args
        for crc in (False, True):
            for size in (64, 4096, 65535):
                yield (f"rping    nd-client -> siw-server {size:>7} B", crc,
                       lambda crc, log, s=size: scen_nd_client(
                           self, self.rping, ["-c", f"{a.vm_to_rping}", "-C", "100", "-S", str(s), "-V"],
                           f"rping -s -a 0.0.0.0 -p 7174 -S {s}", 7174, crc, log))
                yield (f"rping    siw-client -> nd-server {size:>7} B", crc,
                       lambda crc, log, s=size: scen_vm_client(
                           self, self.rping, ["-s", a.nd_rping_listen],
                           f"rping -c -a {a.vm_sees_host} -p {a.host_rping_port} -C 100 -S {s} -V", crc, log))
            for size in (100, 1048576):
                yield (f"ucmatose nd-client -> siw-server {size:>7} B", crc,
                       lambda crc, log, s=size: scen_nd_client(
                           self, self.cmatose, ["-c", f"{a.vm_to_cmatose}", "-C", "10", "-S", str(s)],
                           f"ucmatose -p 7471 -C 10 -S {s}", 7471, crc, log))
                yield (f"ucmatose siw-client -> nd-server {size:>7} B", crc,
                       lambda crc, log, s=size: scen_vm_client(
                           self, self.cmatose, ["-s", a.nd_cmatose_listen, "-C", "10", "-S", str(s)],
                           f"ucmatose -s {a.vm_sees_host} -p {a.host_cmatose_port} -C 10 -S {s}", crc, log))

    def run(self):
        for n in range(self.args.runs):
            for name, crc, fn in self.scenarios():
                if self.args.only and self.args.only not in f"crc={int(crc)} {name}":
                    continue
                logpath = os.path.join(self.args.logdir, "last-nd.log")
                t0 = time.monotonic()
                with open(logpath, "w") as log:
                    try:
                        ok, lines = fn(crc, log)
                    except (OSError, EOFError) as e:
                        ok, lines = False, [f"driver: {e}"]
                dt = time.monotonic() - t0
                label = f"{self.args.mode:<4} crc={int(crc)} {name}"
                print(f"{'PASS' if ok else 'FAIL'} run {n + 1:>2} {label} ({dt:.1f} s)", flush=True)
                if ok:
                    self.passed += 1
                else:
                    self.failed += 1
                    with open(logpath) as f:
                        nd_out = f.read().strip().splitlines()
                    keep = os.path.join(self.args.logdir, f"fail-{self.failed}.log")
                    try:
                        dmesg = self.agent.start("dmesg | tail -60")
                        dmesg.finish()
                        vm_log = dmesg.lines
                    except (OSError, EOFError):
                        vm_log = ["(no dmesg)"]
                    with open(keep, "w") as f:
                        f.write("\n".join([label, "-- vm job:"] + lines + ["-- nd:"] + nd_out +
                                          ["-- vm dmesg:"] + vm_log) + "\n")
                    for line in (lines[-6:] + ["-- nd:"] + nd_out[-6:] + [f"(all in {keep})"]):
                        print(f"     | {line}", flush=True)
        self.agent.quit()
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True, choices=["fwd", "tap"])
    p.add_argument("--bindir", required=True)
    p.add_argument("--logdir", required=True)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--only", default="", help="run the scenarios whose label contains this")
    a = p.parse_args()
    if a.mode == "fwd":
        # slirp: host 127.0.0.1:17174/17471 -> guest; guest 10.0.2.100:P -> host 127.0.0.1:1P
        a.agent_addr, a.agent_port = "127.0.0.1", 17300
        a.vm_to_rping, a.vm_to_cmatose = "127.0.0.1:17174", "127.0.0.1:17471"
        a.vm_sees_host, a.host_rping_port, a.host_cmatose_port = "10.0.2.100", 7200, 7201
        a.nd_rping_listen, a.nd_cmatose_listen = "127.0.0.1:17200", "127.0.0.1:17201"
    else:
        # tap: this driver runs inside the VM's namespace, host 10.77.0.1, guest 10.77.0.2
        a.agent_addr, a.agent_port = "10.77.0.1", 7300
        a.vm_to_rping, a.vm_to_cmatose = "10.77.0.2:7174", "10.77.0.2:7471"
        a.vm_sees_host, a.host_rping_port, a.host_cmatose_port = "10.77.0.1", 7200, 7201
        a.nd_rping_listen, a.nd_cmatose_listen = "10.77.0.1:7200", "10.77.0.1:7201"
    sys.exit(Matrix(a).run())


if __name__ == "__main__":
    main()
