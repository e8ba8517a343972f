#!/usr/bin/env python3
"""Runs the local task suite (evals/local/tasks/*.toml) against a bosun binary.

Entry point: scripts/eval-local, which builds bosun and pulls the default
model first. This file only needs Python 3.11+ (tomllib) and the binary:

    python3 evals/local/run.py --bosun target/release/bosun [--model M]
        [--base-url URL] [--filter REGEX] [--timeout SECS] [--min-pass-rate PCT]
        [--report FILE.json] [--markdown FILE.md] [--keep]

Each task runs in a fresh temporary workspace, as

    bosun -C WS exec --json -o ANSWER [--model M] --mode MODE
          [--dangerously-approve-all] PROMPT

with stdin from /dev/null, a throwaway session database (BOSUN_SESSIONS_DB)
and a per-task timeout. The result is checked (evals/local/README.md):
the answer (the turn's final answer, as `-o` writes it), every file of the
workspace before and after (anything created, changed or deleted that the
task does not expect fails it), the expected files, and commands run on a
copy of the final workspace.

Exit status: 0, whatever the pass rate, unless --min-pass-rate is given and
not met (1); 2 for a broken task file, a missing binary or bad arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("read-only", "propose", "write", "autonomous")
CATEGORIES = ("list", "read", "search", "edit", "create", "run", "fix", "multi", "none", "missing")
TASK_KEYS = {"category", "prompt", "mode", "approve_all", "timeout", "files", "expect", "reference"}
REFERENCE_KEYS = {"answer", "files", "delete"}
FILE_KEYS = {"content", "executable"}
EXPECT_KEYS = {"answer_contains", "answer_not_contains", "answer_matches", "answer_not_matches", "files", "commands"}
EXPECT_FILE_KEYS = {"equals", "contains", "not_contains", "matches", "absent", "executable"}
COMMAND_KEYS = {"run", "exit_code", "stdout_contains", "stdout_matches", "timeout"}


class TaskError(Exception):
    """A task file that does not follow the format."""


# ------------------------------------------------------------------ tasks ----


@dataclasses.dataclass
class Task:
    name: str
    path: Path
    category: str
    prompt: str
    mode: str
    approve_all: bool
    timeout: float | None
    files: dict[str, tuple[str, bool]]  # path -> (content, executable)
    expect: dict
    reference: dict  # {"answer": str, "files": {path: content}, "delete": [path]}


def _strings(value, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f"{where} must be a list of strings")
    return value


def _regexes(value, where: str) -> list[str]:
    for pattern in _strings(value, where):
        try:
            re.compile(pattern)
        except re.error as error:
            raise TaskError(f"{where}: bad regex {pattern!r}: {error}") from None
    return value


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise TaskError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")


def _rel_path(path: str, where: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise TaskError(f"{where}: {path!r} is not a plain relative path")
    return path


def load_task(path: Path) -> Task:
    where = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise TaskError(f"{where}: {error}") from None
    _check_keys(data, TASK_KEYS, where)
    for key in ("category", "prompt", "mode"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise TaskError(f"{where}: `{key}` is required (a string)")
    if data["category"] not in CATEGORIES:
        raise TaskError(f"{where}: category {data['category']!r} is not one of {', '.join(CATEGORIES)}")
    if data["mode"] not in MODES:
        raise TaskError(f"{where}: mode {data['mode']!r} is not one of {', '.join(MODES)}")
    approve_all = data.get("approve_all", False)
    if not isinstance(approve_all, bool):
        raise TaskError(f"{where}: approve_all must be true or false")
    timeout = data.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise TaskError(f"{where}: timeout must be a positive number of seconds")

    files: dict[str, tuple[str, bool]] = {}
    raw_files = data.get("files", {})
    if not isinstance(raw_files, dict):
        raise TaskError(f"{where}: [files] must be a table")
    for name, spec in raw_files.items():
        _rel_path(name, f"{where}: files")
        if isinstance(spec, str):
            files[name] = (spec, False)
        elif isinstance(spec, dict):
            _check_keys(spec, FILE_KEYS, f"{where}: files.{name}")
            if not isinstance(spec.get("content"), str):
                raise TaskError(f"{where}: files.{name}.content is required (a string)")
            executable = spec.get("executable", False)
            if not isinstance(executable, bool):
                raise TaskError(f"{where}: files.{name}.executable must be true or false")
            files[name] = (spec["content"], executable)
        else:
            raise TaskError(f"{where}: files.{name} must be a string or a table")

    expect = data.get("expect", {})
    if not isinstance(expect, dict):
        raise TaskError(f"{where}: [expect] must be a table")
    _check_keys(expect, EXPECT_KEYS, f"{where}: expect")
    for key in ("answer_contains", "answer_not_contains"):
        if key in expect:
            _strings(expect[key], f"{where}: expect.{key}")
    for key in ("answer_matches", "answer_not_matches"):
        if key in expect:
            _regexes(expect[key], f"{where}: expect.{key}")
    expected_files = expect.get("files", {})
    if not isinstance(expected_files, dict):
        raise TaskError(f"{where}: [expect.files] must be a table")
    for name, spec in expected_files.items():
        at = f"{where}: expect.files.{name}"
        _rel_path(name, at)
        if not isinstance(spec, dict) or not spec:
            raise TaskError(f"{at} must be a non-empty table")
        _check_keys(spec, EXPECT_FILE_KEYS, at)
        if "equals" in spec and not isinstance(spec["equals"], str):
            raise TaskError(f"{at}.equals must be a string")
        for key in ("contains", "not_contains"):
            if key in spec:
                _strings(spec[key], f"{at}.{key}")
        if "matches" in spec:
            _regexes(spec["matches"], f"{at}.matches")
        for key in ("absent", "executable"):
            if key in spec and not isinstance(spec[key], bool):
                raise TaskError(f"{at}.{key} must be true or false")
        if spec.get("absent") and len(spec) > 1:
            raise TaskError(f"{at}: absent = true takes no other check")
    commands = expect.get("commands", [])
    if not isinstance(commands, list):
        raise TaskError(f"{where}: [[expect.commands]] must be an array of tables")
    for index, command in enumerate(commands):
        at = f"{where}: expect.commands[{index}]"
        if not isinstance(command, dict):
            raise TaskError(f"{at} must be a table")
        _check_keys(command, COMMAND_KEYS, at)
        if not isinstance(command.get("run"), str):
            raise TaskError(f"{at}.run is required (a string)")
        if "exit_code" in command and not isinstance(command["exit_code"], int):
            raise TaskError(f"{at}.exit_code must be an integer")
        if "stdout_contains" in command:
            _strings(command["stdout_contains"], f"{at}.stdout_contains")
        if "stdout_matches" in command:
            _regexes(command["stdout_matches"], f"{at}.stdout_matches")
    checks = [k for k in ("answer_contains", "answer_matches", "files", "commands") if expect.get(k)]
    if not checks:
        raise TaskError(f"{where}: the task checks nothing (give answer_contains, answer_matches, files or commands)")

    reference = data.get("reference")
    if not isinstance(reference, dict):
        raise TaskError(f"{where}: [reference] is required (a right result, for --self-test)")
    _check_keys(reference, REFERENCE_KEYS, f"{where}: reference")
    if not isinstance(reference.get("answer"), str):
        raise TaskError(f"{where}: reference.answer is required (a string)")
    ref_files = reference.get("files", {})
    if not isinstance(ref_files, dict) or not all(isinstance(v, str) for v in ref_files.values()):
        raise TaskError(f"{where}: reference.files must map paths to contents")
    for name in ref_files:
        _rel_path(name, f"{where}: reference.files")
    for name in _strings(reference.get("delete", []), f"{where}: reference.delete"):
        _rel_path(name, f"{where}: reference.delete")

    return Task(
        name=path.stem,
        path=path,
        category=data["category"],
        prompt=data["prompt"],
        mode=data["mode"],
        approve_all=approve_all,
        timeout=timeout,
        files=files,
        expect=expect,
        reference=reference,
    )


def load_tasks(directory: Path, pattern: str | None) -> list[Task]:
    paths = sorted(directory.glob("*.toml"))
    if not paths:
        raise TaskError(f"no task files in {directory}")
    tasks = [load_task(p) for p in paths]  # every file is checked, filtered or not
    if pattern:
        regex = re.compile(pattern)
        tasks = [t for t in tasks if regex.search(t.name) or regex.search(t.category)]
    return tasks


# -------------------------------------------------------------- workspace ----


def write_workspace(root: Path, files: dict[str, tuple[str, bool]]) -> None:
    root.mkdir(parents=True)
    for name, (content, executable) in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))
        target.chmod(0o755 if executable else 0o644)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root: path -> (kind, sha256 or link target, executable)."""
    entries: dict[str, tuple] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            full = Path(directory, name)
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                entries[rel] = ("symlink", os.readlink(full), False)
            elif full.is_dir():
                entries[rel] = ("dir", None, False)
            elif full.is_file():
                digest = hashlib.sha256(full.read_bytes()).hexdigest()
                entries[rel] = ("file", digest, bool(full.stat().st_mode & 0o111))
            else:
                entries[rel] = ("other", None, False)
    return entries


def parents_of(path: str) -> set[str]:
    parts = path.split("/")
    return {"/".join(parts[:i]) for i in range(1, len(parts))}


def check_workspace(task: Task, root: Path, before: dict, after: dict) -> list[str]:
    failures = []
    expected = task.expect.get("files", {})
    # Directories an expected file needs may appear.
    allowed_dirs = set().union(*(parents_of(p) for p in expected)) if expected else set()
    for path in sorted(set(before) | set(after)):
        if path in expected or (path in allowed_dirs and after.get(path, ("dir",))[0] == "dir"):
            continue
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None:
            failures.append(f"unexpected new {new[0]}: {path}")
        elif new is None:
            failures.append(f"unexpected deletion: {path}")
        else:
            failures.append(f"unexpected change: {path}")
    for path, spec in expected.items():
        full = root / path
        if spec.get("absent"):
            if full.exists() or full.is_symlink():
                failures.append(f"{path} should have been deleted")
            continue
        if full.is_symlink() or not full.is_file():
            failures.append(f"{path} is missing" if not full.exists() else f"{path} is not a regular file")
            continue
        try:
            text = full.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            failures.append(f"{path} is not UTF-8")
            continue
        if "equals" in spec and text.rstrip() != spec["equals"].rstrip():
            failures.append(f"{path} does not hold the expected content: {short(text)}")
        for needle in spec.get("contains", []):
            if needle not in text:
                failures.append(f"{path} lacks {needle!r}: {short(text)}")
        for needle in spec.get("not_contains", []):
            if needle in text:
                failures.append(f"{path} still holds {needle!r}")
        for pattern in spec.get("matches", []):
            if not re.search(pattern, text):
                failures.append(f"{path} does not match /{pattern}/: {short(text)}")
        if "executable" in spec and bool(full.stat().st_mode & 0o111) != spec["executable"]:
            failures.append(f"{path} should{'' if spec['executable'] else ' not'} be executable")
    return failures


def check_commands(task: Task, root: Path, scratch: Path) -> list[str]:
    failures = []
    for index, command in enumerate(task.expect.get("commands", [])):
        copy = scratch / f"check-{index}"
        shutil.copytree(root, copy, symlinks=True)
        shown = command["run"].strip()
        try:
            done = subprocess.run(
                ["bash", "-c", command["run"]],
                cwd=copy,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=command.get("timeout", 30),
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(copy), "LC_ALL": "C.UTF-8"},
            )
        except subprocess.TimeoutExpired:
            failures.append(f"`{shown}` timed out")
            continue
        out = done.stdout.decode("utf-8", "replace")
        wanted = command.get("exit_code")
        if wanted is not None and done.returncode != wanted:
            err = done.stderr.decode("utf-8", "replace")
            failures.append(f"`{shown}` exited {done.returncode}, not {wanted}: {short(out + err)}")
        for needle in command.get("stdout_contains", []):
            if needle.lower() not in out.lower():
                failures.append(f"`{shown}` printed {short(out)}, without {needle!r}")
        for pattern in command.get("stdout_matches", []):
            if not re.search(pattern, out, re.IGNORECASE):
                failures.append(f"`{shown}` printed {short(out)}, not matching /{pattern}/")
    return failures


def check_answer(task: Task, answer: str) -> list[str]:
    failures = []
    low = answer.lower()
    for needle in task.expect.get("answer_contains", []):
        if needle.lower() not in low:
            failures.append(f"answer lacks {needle!r}")
    for needle in task.expect.get("answer_not_contains", []):
        if needle.lower() in low:
            failures.append(f"answer names {needle!r}")
    for pattern in task.expect.get("answer_matches", []):
        if not re.search(pattern, answer, re.IGNORECASE):
            failures.append(f"answer does not match /{pattern}/")
    for pattern in task.expect.get("answer_not_matches", []):
        if re.search(pattern, answer, re.IGNORECASE):
            failures.append(f"answer matches /{pattern}/")
    return failures


def short(text: str, limit: int = 120) -> str:
    flat = json.dumps(text, ensure_ascii=False)
    return flat if len(flat) <= limit else flat[: limit - 4] + '…"'


# ------------------------------------------------------------------ a run ----


@dataclasses.dataclass
class Result:
    name: str
    category: str
    passed: bool
    failures: list[str]
    seconds: float
    exit_code: int | None
    outcome: str | None
    rounds: int
    usage: dict
    calls: list[dict]
    answer: str
    errors: list[str]
    stderr_tail: str


def run_bosun(args, task: Task, workspace: Path, scratch: Path, timeout: float):
    answer_file = scratch / "answer.txt"
    command = [args.bosun, "-C", str(workspace), "exec", "--json", "-o", str(answer_file)]
    if args.model:
        command += ["--model", args.model]
    if args.base_url:
        command += ["--base-url", args.base_url]
    command += ["--mode", task.mode]
    if task.approve_all:
        command.append("--dangerously-approve-all")
    command.append(task.prompt)
    env = dict(os.environ)
    env["BOSUN_SESSIONS_DB"] = str(args.sessions_db)
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=scratch,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    timed_out = False
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except KeyboardInterrupt:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGINT)  # bosun cancels the turn on Ctrl-C
        try:
            stdout, stderr = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    answer = answer_file.read_text(encoding="utf-8", errors="replace") if answer_file.exists() else None
    return process.returncode, timed_out, seconds, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), answer


def parse_events(stdout: str):
    calls, errors, usage, outcome, rounds = [], [], {}, None, 0
    by_id: dict[str, dict] = {}
    text = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = event.get("type")
        if kind == "model_round_start":
            rounds += 1
            text.append("")
        elif kind == "text_delta":
            if not text:
                text.append("")
            text[-1] += event.get("text", "")
        elif kind == "tool_call_proposed":
            call = {"round": rounds, "name": event.get("name"), "arguments": event.get("arguments")}
            calls.append(call)
            by_id[event.get("call_id")] = call
        elif kind == "approval_decided" and event.get("call_id") in by_id:
            by_id[event["call_id"]]["decision"] = event.get("decision")
        elif kind == "tool_end":
            call = by_id.get(event.get("call_id"))
            if call is None:
                call = {"round": rounds, "name": event.get("name"), "arguments": None}
                calls.append(call)
            call["is_error"] = event.get("is_error")
            call["output"] = event.get("output", "")[:400]
        elif kind == "turn_end":
            usage = event.get("usage") or {}
            outcome = event.get("outcome")
        elif kind == "error":
            errors.append(f"{event.get('kind')}: {event.get('message')}")
    return calls, errors, usage, outcome, rounds, text


def run_task(args, task: Task) -> Result:
    scratch = Path(tempfile.mkdtemp(prefix=f"eval-{task.name}-", dir=args.work))
    workspace = scratch / "ws"
    write_workspace(workspace, task.files)
    before = snapshot(workspace)
    timeout = task.timeout or args.timeout
    code, timed_out, seconds, stdout, stderr, answer = run_bosun(args, task, workspace, scratch, timeout)
    calls, errors, usage, outcome, rounds, texts = parse_events(stdout)

    failures = []
    if timed_out:
        failures.append(f"timed out after {timeout:.0f}s")
    elif code != 0:
        failures.append(f"bosun exited {code}" + (f" ({errors[-1]})" if errors else f": {short(stderr.strip()[-300:])}"))
    elif outcome != "completed":
        failures.append(f"turn outcome {outcome}")
    # With no final answer (the turn failed or was cut off) the text the
    # model streamed is shown, but never checked.
    shown_answer = answer if answer is not None else "".join(texts)
    failures += check_result(task, workspace, scratch, before, answer)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)

    return Result(
        name=task.name,
        category=task.category,
        passed=not failures,
        failures=failures,
        seconds=seconds,
        exit_code=code,
        outcome=outcome,
        rounds=rounds,
        usage=usage,
        calls=calls,
        answer=shown_answer,
        errors=errors,
        stderr_tail=stderr.strip()[-2000:],
    )


def check_result(task: Task, workspace: Path, scratch: Path, before: dict, answer: str | None) -> list[str]:
    """Every check of the task on the final workspace and answer."""
    failures = []
    if answer is None:
        if task.expect.get("answer_contains") or task.expect.get("answer_matches"):
            failures.append("no final answer")
    else:
        failures += check_answer(task, answer)
    failures += check_workspace(task, workspace, before, snapshot(workspace))
    if task.expect.get("commands"):
        failures += check_commands(task, workspace, scratch)
    return failures


def self_test(tasks: list[Task]) -> int:
    """Each task passes with its reference result and fails when nothing is done."""
    broken = 0
    for task in tasks:
        for agent in ("reference", "idle"):
            scratch = Path(tempfile.mkdtemp(prefix=f"eval-selftest-{task.name}-"))
            workspace = scratch / "ws"
            write_workspace(workspace, task.files)
            before = snapshot(workspace)
            if agent == "reference":
                for name, content in task.reference.get("files", {}).items():
                    target = workspace / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(content, encoding="utf-8")  # an existing file keeps its mode
                for name in task.reference.get("delete", []):
                    (workspace / name).unlink()
                answer = task.reference["answer"]
            else:
                answer = ""
            failures = check_result(task, workspace, scratch, before, answer)
            shutil.rmtree(scratch, ignore_errors=True)
            if agent == "reference" and failures:
                broken += 1
                print(f"BROKEN {task.name}: the reference result fails: {'; '.join(failures)}")
            elif agent == "idle" and not failures:
                broken += 1
                print(f"BROKEN {task.name}: doing nothing passes")
    print(f"self-test: {broken} problem(s)" if broken else f"self-test: all {len(tasks)} task(s) sound")
    return 2 if broken else 0


# ----------------------------------------------------------------- output ----


def call_summary(call: dict) -> str:
    arguments = call.get("arguments")
    if isinstance(arguments, dict):
        shown = ", ".join(f"{k}={short(v, 40) if isinstance(v, str) else json.dumps(v)}" for k, v in arguments.items())
    else:
        shown = short(json.dumps(arguments), 60)
    mark = ""
    if call.get("decision") in ("deny", "denied_by_policy"):
        mark = " [denied]"
    elif call.get("is_error"):
        mark = " [error]"
    return f"{call.get('name')}({shown}){mark}"


def tokens(usage: dict) -> str:
    return f"in {usage.get('input', 0)} (+{usage.get('cache_read', 0)} cached) out {usage.get('output', 0)}"


def print_result(result: Result, index: int, total: int) -> None:
    status = "PASS" if result.passed else "FAIL"
    print(f"[{index}/{total}] {status} {result.name}  {result.seconds:.1f}s  {result.rounds} round(s)  {tokens(result.usage)}")
    if not result.passed:
        for failure in result.failures:
            print(f"      - {failure}")
        calls = "; ".join(call_summary(c) for c in result.calls) or "none"
        print(f"      tool calls: {calls}")
        print(f"      answer: {short(result.answer.strip(), 300)}")
    sys.stdout.flush()


def markdown_table(results: list[Result]) -> str:
    def cell(text: str, limit: int) -> str:
        text = text if len(text) <= limit else text[: limit - 1] + "…"
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| task | category | result | time | rounds | tokens in / cached / out | tool calls | why it failed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        calls = "; ".join(cell(call_summary(c), 70) for c in r.calls) or "none"
        reason = "; ".join(cell(f, 90) for f in r.failures)
        lines.append(
            f"| {r.name} | {r.category} | {'pass' if r.passed else 'FAIL'} | {r.seconds:.0f} s | {r.rounds} | "
            f"{r.usage.get('input', 0)} / {r.usage.get('cache_read', 0)} / {r.usage.get('output', 0)} | {calls} | {reason} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the local task suite against a bosun binary.")
    parser.add_argument("--bosun", help="the bosun binary (required unless --self-test)")
    parser.add_argument("--model", help="passed to bosun as --model (default: none, the embedded local model)")
    parser.add_argument("--base-url", help="passed to bosun as --base-url")
    parser.add_argument("--filter", help="only tasks whose name or category matches this regex")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per task (default 600)")
    parser.add_argument("--min-pass-rate", type=float, help="exit 1 when fewer than this percentage of tasks pass")
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks", help="the task directory")
    parser.add_argument("--report", type=Path, help="write every result (answers, calls, events summary) as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the per-task table as Markdown here")
    parser.add_argument("--self-test", action="store_true", help="check the tasks, not a model: each passes with its [reference] result and fails when nothing is done")
    parser.add_argument("--keep", action="store_true", help="keep each task's workspace and answer (paths printed)")
    args = parser.parse_args()

    if args.self_test:
        try:
            return self_test(load_tasks(args.tasks, args.filter))
        except (TaskError, re.error) as error:
            print(f"eval-local: {error}", file=sys.stderr)
            return 2
    if not args.bosun:
        print("eval-local: --bosun is required", file=sys.stderr)
        return 2
    bosun = shutil.which(args.bosun) if os.sep not in args.bosun else args.bosun
    if not bosun or not os.access(bosun, os.X_OK) or not os.path.isfile(bosun):
        print(f"eval-local: no executable bosun at {args.bosun}", file=sys.stderr)
        return 2
    args.bosun = os.path.abspath(bosun)
    if args.min_pass_rate is not None and not 0 <= args.min_pass_rate <= 100:
        print("eval-local: --min-pass-rate is a percentage, 0 to 100", file=sys.stderr)
        return 2
    try:
        tasks = load_tasks(args.tasks, args.filter)
    except (TaskError, re.error) as error:
        print(f"eval-local: {error}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"eval-local: no task matches {args.filter!r}", file=sys.stderr)
        return 2

    args.work = Path(tempfile.mkdtemp(prefix="bosun-eval-local-"))
    args.sessions_db = args.work / "sessions.db"
    # A copy, so that a rebuild of the same path during the run (a shared
    # target directory) cannot change the binary between tasks.
    shutil.copy2(args.bosun, args.work / "bosun")
    shown_bosun, args.bosun = args.bosun, str(args.work / "bosun")
    model = args.model or "the embedded default (no --model)"
    print(f"eval-local: {len(tasks)} task(s), model {model}, bosun {shown_bosun}, timeout {args.timeout:.0f}s")
    if args.keep:
        print(f"eval-local: workspaces kept under {args.work}")
    sys.stdout.flush()

    results = []
    started = time.monotonic()
    for index, task in enumerate(tasks, 1):
        result = run_task(args, task)
        results.append(result)
        print_result(result, index, len(tasks))
    wall = time.monotonic() - started
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)

    passed = sum(r.passed for r in results)
    rate = 100.0 * passed / len(results)
    total = {k: sum(r.usage.get(k, 0) for r in results) for k in ("input", "cache_read", "output")}
    print()
    print("category   passed")
    for category in CATEGORIES:
        group = [r for r in results if r.category == category]
        if group:
            print(f"{category:<10} {sum(r.passed for r in group)}/{len(group)}")
    print()
    print(f"passed {passed}/{len(results)} ({rate:.1f}%)")
    print(f"wall time {wall:.0f}s ({wall / len(results):.0f}s per task)")
    print(f"tokens: input {total['input']} (+{total['cache_read']} from cache), output {total['output']}")

    if args.report:
        report = {
            "model": args.model,
            "bosun": shown_bosun,
            "passed": passed,
            "total": len(results),
            "pass_rate": rate,
            "wall_seconds": wall,
            "tokens": total,
            "results": [dataclasses.asdict(r) for r in results],
        }
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown_table(results), encoding="utf-8")

    if args.min_pass_rate is not None and rate < args.min_pass_rate:
        print(f"eval-local: pass rate {rate:.1f}% is below --min-pass-rate {args.min_pass_rate:g}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
