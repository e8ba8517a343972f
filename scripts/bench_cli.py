#!/usr/bin/env python3
"""Whole-process benchmark of `bosun exec` on a one-turn task served by aimock.

Run through `scripts/bench-cli`, which builds bosun, installs what is missing
and, when it can, runs this file inside private network and mount namespaces
(only the loopback interface; /etc/resolv.conf pointing at a stub resolver
that this file runs), so that nothing measured can reach past this machine.

The task: the prompt "hello", which aimock answers with the text "Hi there."
(no tool call), streamed; both agents run in `--json` mode in an empty
workspace directory, with their homes (session store, caches) kept in
--workdir and reused from run to run after one warm-up run.

Each timed run spawns the agent as a whole process (`os.posix_spawn`, stdin
from /dev/null, stdout a pipe, stderr appended to a log file) and records, all
with `time.time_ns()` (the wall clock; aimock runs on the same machine, so its
`Date.now()` reads the same clock):

  t0      immediately before the spawn
  lines   the arrival time of every chunk read from stdout (JSON lines); the
          last line is the run's end event (`result` for bosun, after its
          `turn_end`; `turn.completed` for codex)
  exit    the moment the process's pidfd becomes readable (it has exited)

Three passes, each of RUNS runs per agent, interleaved agent by agent:

  A  pointed at aimock directly:
       first request (aimock)  aimock's journal timestamp of the model request
                               minus t0. aimock stamps `Date.now()`: whole
                               milliseconds, truncated, taken once the request
                               body has been read and parsed. The true figure
                               lies in [x, x + 1) ms.
       wall                    exit - t0
       exit after last event   exit - arrival of the last stdout line
  B  pointed at a timestamping TCP proxy in this file that forwards every byte
     to the same aimock:
       first request (proxy)   arrival of the first bytes of the model request
                               at the proxy (time.time_ns()) minus t0
  C  run under GNU time (`/usr/bin/time -f %M`):
       peak RSS                "Maximum resident set size". Not taken from
                               wait4 in this process: a child forked or
                               vforked from Python starts with Python's
                               ~26 MB counted in its ru_maxrss, which exec
                               does not reset; GNU time is a small process.

The harness floor (spawn, exit and reap of /bin/true through the same code)
is printed too.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field

MODEL_PATHS = ("/chat/completions", "/responses")
PROMPT = "hello"
ANSWER = "Hi there."
FIXTURES = {"fixtures": [{"match": {"userMessage": PROMPT}, "response": {"content": ANSWER}}]}


# ---------------------------------------------------------------- aimock ----


class Aimock:
    def __init__(self, cli: str, workdir: str):
        self.fixtures = os.path.join(workdir, "fixtures.json")
        with open(self.fixtures, "w") as f:
            json.dump(FIXTURES, f)
        self.log = open(os.path.join(workdir, "aimock.log"), "w")
        self.proc = subprocess.Popen(
            ["node", cli, "-p", "0", "-h", "127.0.0.1", "-f", self.fixtures],
            stdout=subprocess.PIPE,
            stderr=self.log,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.url = None
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.log.write(line)
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            self.stop()
            raise SystemExit(f"aimock did not start; see {self.log.name}")
        # Keep draining its stdout so that it never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        self.port = int(self.url.rsplit(":", 1)[1])

    def _drain(self):
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.write(line)

    def journal(self) -> list[dict]:
        with urllib.request.urlopen(self.url + "/__aimock/journal", timeout=10) as r:
            return json.load(r)

    def reset_journal(self):
        req = urllib.request.Request(self.url + "/__aimock/reset/journal", method="POST", data=b"")
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()

    def first_model_request_ns(self) -> int | None:
        stamps = [e["timestamp"] for e in self.journal() if e.get("path", "").endswith(MODEL_PATHS)]
        return min(stamps) * 1_000_000 if stamps else None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ------------------------------------------------- timestamping proxy ------


class StampProxy:
    """Forwards TCP bytes to aimock; stamps the first bytes of each connection."""

    def __init__(self, upstream_port: int):
        self.upstream = ("127.0.0.1", upstream_port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.stamps: list[tuple[int, str]] = []  # (time_ns, request line)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _serve(self, conn: socket.socket):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            first = conn.recv(65536)
        except OSError:
            first = b""
        stamp = time.time_ns()
        if not first:
            conn.close()
            return
        with self.lock:
            self.stamps.append((stamp, first.split(b"\r\n", 1)[0].decode("latin-1")))
        up = socket.create_connection(self.upstream)
        up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up.sendall(first)
        back = threading.Thread(target=self._pump, args=(up, conn), daemon=True)
        back.start()
        self._pump(conn, up)
        back.join()
        conn.close()
        up.close()

    def take_first_model_request_ns(self) -> int | None:
        with self.lock:
            stamps, self.stamps = self.stamps, []
        model = [t for t, line in stamps if any(p in line for p in MODEL_PATHS)]
        return min(model) if model else None

    def close(self):
        self.sock.close()


# ---------------------------------------------------------- stub resolver --


class StubResolver:
    """Answers every DNS query on 127.0.0.1:53 at once with NXDOMAIN.

    Inside the private namespace nothing can be resolved anyway; without an
    answer a musl resolver (codex's) waits 2.5 s per lookup before giving up,
    which would charge codex for our isolation. Records the names asked for.
    """

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        self.names: set[str] = set()
        threading.Thread(target=self._serve, daemon=True).start()

    @staticmethod
    def _question(packet: bytes) -> tuple[str, int]:
        """The first question's name and where the question ends."""
        labels, i = [], 12
        while i < len(packet) and packet[i]:
            n = packet[i]
            labels.append(packet[i + 1 : i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        return ".".join(labels), i + 1 + 4  # the root label, QTYPE, QCLASS

    def _serve(self):
        while True:
            try:
                packet, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            if len(packet) < 12:
                continue
            name, end = self._question(packet)
            self.names.add(name)
            flags = 0x8000 | (packet[2] & 0x01) << 8 | 0x0080 | 3  # QR, RD copied, RA, NXDOMAIN
            reply = packet[:2] + flags.to_bytes(2, "big") + b"\0\1\0\0\0\0\0\0" + packet[12:end]
            self.sock.sendto(reply, peer)

    def close(self):
        self.sock.close()


# -------------------------------------------------------------- disk load --


class DiskLoad:
    """Another process that writes 1 MiB and fsyncs it, over and over (at most
    an hour), on the disk that holds the homes: what a second agent, a build
    or a test suite writing to the same disk does to a store that fsyncs."""

    CODE = """
import os, signal, sys, time
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
path, deadline = sys.argv[1], time.monotonic() + 3600
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
block, count = bytes(1 << 20), 0
while not stop and time.monotonic() < deadline:
    os.pwrite(fd, block, 0)
    os.fsync(fd)
    count += 1
print(count, flush=True)
"""

    def __init__(self, base: str):
        self.path = os.path.join(base, "disk-load.bin")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.CODE, self.path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
        )

    def stop(self) -> float:
        """Stops the load; returns its rate in fsynced writes per second."""
        self.proc.terminate()
        out, _ = self.proc.communicate()
        elapsed = time.monotonic() - self.started
        try:
            os.unlink(self.path)
        except OSError:
            pass
        try:
            return int(out.strip()) / elapsed
        except ValueError:
            return 0.0


# ----------------------------------------------------------- one run -------


@dataclass
class Run:
    t0: int
    exit: int
    lines: list[tuple[int, str]]
    status: int
    first_request: int | None = None  # absolute ns

    @property
    def wall_ms(self) -> float:
        return (self.exit - self.t0) / 1e6

    @property
    def exit_after_last_ms(self) -> float:
        return (self.exit - self.lines[-1][0]) / 1e6

    @property
    def first_request_ms(self) -> float:
        assert self.first_request is not None
        return (self.first_request - self.t0) / 1e6


def spawn_and_measure(argv: list[str], env: dict, cwd: str, stderr_path: str) -> Run:
    r, w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    actions = [
        (os.POSIX_SPAWN_DUP2, devnull, 0),
        (os.POSIX_SPAWN_DUP2, w, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
        (os.POSIX_SPAWN_CLOSE, r),
    ]
    old_cwd = os.getcwd()
    os.chdir(cwd)
    try:
        t0 = time.time_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    finally:
        os.chdir(old_cwd)
    os.close(w)
    os.close(devnull)
    os.close(err)
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    lines: list[tuple[int, str]] = []
    pending = b""
    exit_ns = None
    out_open = True
    while out_open or exit_ns is None:
        for fd, _ in poller.poll():
            now = time.time_ns()
            if fd == pidfd:
                exit_ns = now
                poller.unregister(pidfd)
            elif fd == r:
                data = os.read(r, 65536)
                if not data:
                    out_open = False
                    poller.unregister(r)
                    continue
                pending += data
                *complete, pending = pending.split(b"\n")
                lines += [(now, line.decode("utf-8", "replace")) for line in complete if line.strip()]
    os.close(r)
    os.close(pidfd)
    _, status, _ = os.wait4(pid, 0)
    return Run(t0=t0, exit=exit_ns, lines=lines, status=status)


def gnu_time_maxrss_kib(argv: list[str], env: dict, cwd: str, stderr_path: str) -> int:
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out, open(stderr_path, "a") as err:
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", out.name] + argv,
            env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{argv[0]} under GNU time: exit {proc.returncode}; see {stderr_path}")
        return int(out.read().strip().splitlines()[-1])


# ----------------------------------------------------------- the agents ----


@dataclass
class Agent:
    name: str
    last_event: str  # the `type` of the final JSON line
    make_argv: object  # (base_url) -> argv
    env: dict
    cwd: str
    stderr: str
    note: str = ""
    runs_a: list[Run] = field(default_factory=list)
    runs_b: list[Run] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    warmup: Run | None = None


def check(agent: Agent, run: Run):
    if os.waitstatus_to_exitcode(run.status) != 0:
        raise SystemExit(f"{agent.name}: exit status {run.status}; see {agent.stderr}")
    if not run.lines:
        raise SystemExit(f"{agent.name}: no output; see {agent.stderr}")
    try:
        last = json.loads(run.lines[-1][1])
    except json.JSONDecodeError:
        raise SystemExit(f"{agent.name}: the last line is not JSON: {run.lines[-1][1]!r}")
    if last.get("type") != agent.last_event:
        raise SystemExit(f"{agent.name}: the last event is {last.get('type')!r}, not {agent.last_event!r}")
    if ANSWER not in "".join(text for _, text in run.lines):
        raise SystemExit(f"{agent.name}: the answer {ANSWER!r} is not in the output")


def base_env(home: str) -> dict:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "OPENAI_API_KEY": "test",
        "LANG": "C.UTF-8",
    }


def bosun_agent(binary: str, base: str) -> Agent:
    home = os.path.join(base, "bosun-home")
    ws = os.path.join(base, "ws")
    os.makedirs(home, exist_ok=True)
    env = base_env(home) | {"BOSUN_HOME": home}
    return Agent(
        name="bosun",
        last_event="result",
        make_argv=lambda url: [
            binary, "-C", ws, "exec", "--json", "--model", "openai/gpt-test", "--base-url", url + "/v1", PROMPT,
        ],
        env=env,
        cwd=ws,
        stderr=os.path.join(base, "bosun.stderr"),
        note=f"{binary}, OpenAI Chat Completions",
    )


def codex_agents(codex_dir: str, base: str) -> list[Agent]:
    natives = sorted(glob.glob(os.path.join(codex_dir, "node_modules/@openai/codex-*/vendor/*/bin/codex")))
    launcher = os.path.join(codex_dir, "node_modules/@openai/codex/bin/codex.js")
    if not natives or not os.path.exists(launcher):
        raise FileNotFoundError(f"no codex under {codex_dir}")
    native = natives[0]
    home = os.path.join(base, "codex-home")
    ws = os.path.join(base, "ws")
    os.makedirs(home, exist_ok=True)
    env = base_env(home) | {"CODEX_HOME": home}

    def args(url: str) -> list[str]:
        # A custom provider on aimock's OpenAI Responses endpoint (codex
        # speaks only Responses), its key read from OPENAI_API_KEY.
        provider = (
            'model_providers.mock={name="mock",base_url="%s/v1",env_key="OPENAI_API_KEY",wire_api="responses"}' % url
        )
        return [
            "exec", "--json", "--skip-git-repo-check", "-C", ws, "-m", "gpt-test",
            "-c", "model_provider=mock", "-c", provider, PROMPT,
        ]

    node = shutil.which("node") or "/usr/bin/node"
    return [
        Agent(
            name="codex",
            last_event="turn.completed",
            make_argv=lambda url: [native] + args(url),
            env=env,
            cwd=ws,
            stderr=os.path.join(base, "codex.stderr"),
            note="the native binary, " + os.path.relpath(native, codex_dir) + ", OpenAI Responses",
        ),
        Agent(
            name="codex (npm launcher)",
            last_event="turn.completed",
            make_argv=lambda url: [node, launcher] + args(url),
            env=env,
            cwd=ws,
            stderr=os.path.join(base, "codex.stderr"),
            note="`codex` as npm installs it: node bin/codex.js, which spawns the native binary; "
            "its peak RSS is the larger of the two processes, not their sum",
        ),
    ]


# ------------------------------------------------------------ reporting ----


def fmt(values: list[float], unit: str, digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} {unit} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def figures(agent: Agent) -> dict:
    return {
        "first_request_aimock_ms": [r.first_request_ms for r in agent.runs_a],
        "first_request_proxy_ms": [r.first_request_ms for r in agent.runs_b],
        "wall_ms": [r.wall_ms for r in agent.runs_a],
        "exit_after_last_event_ms": [r.exit_after_last_ms for r in agent.runs_a],
        "peak_rss_mb": [k * 1024 / 1e6 for k in agent.rss_kib],
    }


def machine(base: str) -> dict:
    def sh(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    mem_kib = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
    mount = sh(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", base])
    disk = ""
    dev = mount.split()[0] if mount else ""
    if dev.startswith("/dev/"):
        disk = sh(["lsblk", "-d", "-n", "-o", "NAME,TYPE,ROTA,SIZE", dev])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kib / 1048576, 1),
        "kernel": platform.release(),
        "homes": base,
        "homes_mount": mount,
        "homes_disk (NAME TYPE ROTA SIZE)": disk,
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


TARGETS = {
    "first_request_aimock_ms": ("first model request, aimock journal (ms stamps; true value in [x, x+1))", 15.0, "ms", 1),
    "first_request_proxy_ms": ("first model request, timestamping proxy (ns clock)", 15.0, "ms", 2),
    "wall_ms": ("total wall time", None, "ms", 1),
    "exit_after_last_event_ms": ("exit after the last event", 20.0, "ms", 2),
    "peak_rss_mb": ("peak RSS, GNU time (MB = 10^6 bytes)", 18.0, "MB", 1),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bosun", required=True)
    ap.add_argument("--aimock", required=True, help="aimock's dist/cli.js")
    ap.add_argument("--workdir", required=True, help="homes, workspace, logs (reused between runs)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--codex-dir", help="npm prefix holding @openai/codex")
    ap.add_argument("--no-codex-reason", default="", help="why codex is not measured (printed)")
    ap.add_argument("--stub-dns", action="store_true", help="answer DNS on 127.0.0.1:53 with NXDOMAIN")
    ap.add_argument(
        "--disk-load",
        action="store_true",
        help="keep the disk busy meanwhile: another process writes 1 MiB and fsyncs it, in a loop",
    )
    ap.add_argument("--json-out", help="write every raw figure here")
    args = ap.parse_args()

    base = os.path.abspath(args.workdir)
    os.makedirs(os.path.join(base, "ws"), exist_ok=True)
    agents = [bosun_agent(os.path.abspath(args.bosun), base)]
    no_codex = args.no_codex_reason
    if args.codex_dir and not no_codex:
        try:
            agents += codex_agents(os.path.abspath(args.codex_dir), base)
        except FileNotFoundError as e:
            no_codex = str(e)
    elif not no_codex:
        no_codex = "no --codex-dir given"
    have_gnu_time = os.access("/usr/bin/time", os.X_OK)

    interfaces = [name for _, name in socket.if_nameindex()]  # this namespace's, unlike /sys/class/net
    isolated = interfaces == ["lo"]
    mach = machine(base)
    print(f"machine: {json.dumps(mach)}")
    print(f"network: {'private namespace, loopback only' if isolated else 'host network: ' + ', '.join(interfaces)}")

    resolver = StubResolver() if args.stub_dns else None
    load = DiskLoad(base) if args.disk_load else None
    mock = Aimock(args.aimock, base)
    proxy = StampProxy(mock.port)
    try:
        floor = [spawn_and_measure(["/bin/true"], {}, base, os.devnull).wall_ms for _ in range(args.runs)]

        def run_a(agent: Agent) -> Run:
            mock.reset_journal()
            run = spawn_and_measure(agent.make_argv(mock.url), agent.env, agent.cwd, agent.stderr)
            check(agent, run)
            run.first_request = mock.first_model_request_ns()
            if run.first_request is None:
                raise SystemExit(f"{agent.name}: no model request in aimock's journal")
            return run

        # One warm-up run each: a fresh home gets its database and caches.
        for agent in agents:
            agent.warmup = run_a(agent)

        # Timed runs, interleaved so that load on the machine hits all alike.
        for i in range(args.runs):
            for agent in agents:
                agent.runs_a.append(run_a(agent))
            for agent in agents:
                proxy.take_first_model_request_ns()
                run = spawn_and_measure(agent.make_argv(proxy.url), agent.env, agent.cwd, agent.stderr)
                check(agent, run)
                run.first_request = proxy.take_first_model_request_ns()
                if run.first_request is None:
                    raise SystemExit(f"{agent.name}: no model request reached the proxy")
                agent.runs_b.append(run)
            if have_gnu_time:
                for agent in agents:
                    agent.rss_kib.append(gnu_time_maxrss_kib(agent.make_argv(mock.url), agent.env, agent.cwd, agent.stderr))
            print(f"  round {i + 1}/{args.runs} done", file=sys.stderr, flush=True)
    finally:
        proxy.close()
        mock.stop()
        if resolver:
            resolver.close()
        load_rate = load.stop() if load else None

    def version(agent: Agent) -> str:
        argv = agent.make_argv("")
        argv = argv[:2] if argv[0].endswith("node") else argv[:1]
        return subprocess.run(argv + ["--version"], capture_output=True, text=True, env=agent.env).stdout.strip()

    versions = {a.name: version(a) for a in agents if a.name != "codex (npm launcher)"}
    versions["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    print()
    print(f"versions: {json.dumps(versions)}")
    print(f"runs: {args.runs} per agent and pass, after one warm-up run each; median (min–max)")
    print(f"load average: {' '.join(mach['loadavg'])} at the start, {' '.join(open('/proc/loadavg').read().split()[:3])} at the end")
    print(f"harness floor (spawn, exit and reap of /bin/true): {fmt(floor, 'ms', 2)}")
    if resolver:
        print(f"DNS names asked for (answered NXDOMAIN): {', '.join(sorted(resolver.names)) or 'none'}")
    if load_rate is not None:
        print(f"disk load meanwhile: {load_rate:.0f} fsynced 1 MiB writes per second, from another process")
    print()
    all_figures = {a.name: figures(a) for a in agents}
    verdicts = {}
    for key, (label, target, unit, digits) in TARGETS.items():
        print(label + (f"   [target: under {target:g} {unit}]" if target else ""))
        for agent in agents:
            vals = all_figures[agent.name][key]
            if not vals:
                print(f"  {agent.name:<22} n/a (no /usr/bin/time)")
                continue
            line = f"  {agent.name:<22} {fmt(vals, unit, digits)}"
            if target is not None and agent.name == "bosun":
                med = statistics.median(vals)
                verdicts[key] = "met" if med < target else "missed"
                line += f"   median {verdicts[key].upper()}; {sum(v < target for v in vals)}/{len(vals)} runs under"
            print(line)
        print()
    for agent in agents:
        w = agent.warmup
        print(
            f"warm-up run (fresh home), {agent.name}: first request {w.first_request_ms:.0f} ms (aimock), "
            f"wall {w.wall_ms:.1f} ms, exit after last event {w.exit_after_last_ms:.2f} ms"
        )
    print()
    if len(agents) > 1:
        b = all_figures["bosun"]
        for other in agents[1:]:
            o = all_figures[other.name]
            print(f"ratios, {other.name} / bosun (medians):")
            for key in TARGETS:
                if not b[key] or not o[key]:
                    continue
                mb, mo = statistics.median(b[key]), statistics.median(o[key])
                print(f"  {key:<26} {mo:9.2f} / {mb:7.2f} = {mo / mb:.1f}x")
            print(f"  ({other.note})")
    else:
        print(f"codex not measured: {no_codex}")

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(
                {
                    "machine": mach,
                    "versions": versions,
                    "runs": args.runs,
                    "harness_floor_ms": floor,
                    "figures": all_figures,
                    "verdicts": verdicts,
                    "dns_names": sorted(resolver.names) if resolver else None,
                    "disk_load_fsyncs_per_s": load_rate,
                    "no_codex": no_codex,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
