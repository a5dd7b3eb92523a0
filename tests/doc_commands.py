#!/usr/bin/python3
"""Every command the docs show a user, accounted for and run as written.

Commands are the lines of ```sh / ```bash blocks and the inline code spans of
prose that start with a command (bash, ./build/..., mpirun, pip, mvn, ...) in
README.md, docs/*.md and examples/README.md. Each must have a line in
tests/doc_commands.txt saying how it is tested:

    run | COMMAND             run here, from the source root, and must exit 0
    by FILE | COMMAND         FILE (a test script, or .ci/run) runs it word for word
    hand REASON | COMMAND     too long for CI or changes the machine; run by hand

A command missing from the table, a table line no doc shows any more, a `by`
file that does not contain its command and a `run` command that fails are all
failures. Relative links between the docs (file and #anchor) are checked too.

    usage: doc_commands.py SOURCE_ROOT BUILD_ROOT
`run` lines run only when BUILD_ROOT is SOURCE_ROOT/build (the commands name
./build) and it is not a sanitizer build, and GW_DOC_DRY is not set; the other
checks run everywhere.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import time

# The full demo takes about 4 minutes alone here and more than twice that
# beside the other suites on a slower machine; a hang still ends well within
# meson's timeout for the whole test.
COMMAND_TIMEOUT = 1800


def run_bounded(cmd, cwd, env, timeout):
    """(exit code, output) of bash -c CMD; (None, output so far) once it has run
    TIMEOUT seconds, its whole process group killed: a demo's ranks and
    threads must not go on eating the cores the other suites run on."""
    p = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out or ""

CMD = re.compile(r"^((bash|sh|mpirun|pip|python3?|mvn|meson|ninja|cc|taskset|gradwire|sudo|java)"
                 r"( |$)|\./build[\w-]*/)")


def docs(src):
    paths = ["README.md", "examples/README.md"] + sorted(
        os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    return [p for p in paths if os.path.exists(os.path.join(src, p))]


def commands(text):
    """(command, kind) for fenced shell lines and command-like inline spans."""
    out = []
    fence = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
    for m in fence.finditer(text):
        if m.group(1).strip().split(" ")[0] not in ("sh", "bash", "shell", "console"):
            continue
        body = m.group(2).replace("\\\n", " ")
        for line in body.splitlines():
            line = re.sub(r"(^|\s+)#.*$", "", line).strip()
            if line:
                out.append(line)
    prose = fence.sub("", text)
    for m in re.finditer(r"`([^`\n]+)`", prose):
        span = m.group(1).strip()
        if CMD.match(span) and (" " in span or span.startswith("./")):
            out.append(span)
    return out


def slug(heading):
    """GitHub's anchor for a heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def check_links(src, path, text, problems):
    here = os.path.dirname(os.path.join(src, path))
    prose = re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.S | re.M)
    for m in re.finditer(r"\]\(([^)\s]+)\)", prose):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(here, file)) if file else os.path.join(src, path)
        if not os.path.exists(full):
            problems.append(f"{path}: link to {target}: no such file")
            continue
        if anchor and full.endswith(".md"):
            heads = {slug(h) for h in re.findall(r"^#+\s+(.*)$", open(full).read(), re.M)}
            if anchor not in heads:
                problems.append(f"{path}: link to {target}: no heading with that anchor")


def main():
    src, build = (os.path.realpath(a) for a in sys.argv[1:3])
    table_path = os.path.join(src, "tests", "doc_commands.txt")
    table = {}
    for n, line in enumerate(open(table_path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        how, sep, cmd = line.rstrip("\n").partition(" | ")
        if not sep:
            sys.exit(f"{table_path}:{n}: expected 'HOW | COMMAND'")
        table[cmd.strip()] = how.strip()

    problems, seen = [], {}
    for path in docs(src):
        text = open(os.path.join(src, path)).read()
        check_links(src, path, text, problems)
        for cmd in commands(text):
            seen.setdefault(cmd, path)
    for cmd, path in seen.items():
        if cmd not in table:
            problems.append(f"{path}: `{cmd}` is not in tests/doc_commands.txt "
                            "(say how it is tested: run, by FILE or hand REASON)")
    for cmd, how in table.items():
        if cmd not in seen:
            problems.append(f"tests/doc_commands.txt: `{cmd}` is in no doc any more")
        kind, _, rest = how.partition(" ")
        if kind == "by":
            file = os.path.join(src, rest)
            if not os.path.exists(file) or cmd not in open(file).read():
                problems.append(f"`{cmd}`: not found word for word in {rest}")
        elif kind == "hand":
            if not rest:
                problems.append(f"`{cmd}`: 'hand' needs the reason it is not run")
        elif kind != "run":
            problems.append(f"`{cmd}`: unknown way '{how}'")

    runs = [c for c, h in table.items() if h == "run" and c in seen]
    sanitized = b"__asan_" in subprocess.run(["nm", "-D", os.path.join(build, "libgradwire.so")],
                                            capture_output=True).stdout
    if os.environ.get("GW_DOC_DRY"):
        print(f"{len(runs)} run commands not run (GW_DOC_DRY is set)")
    elif build != os.path.join(src, "build") or sanitized:
        print(f"{len(runs)} run commands not run: they name ./build, and this is {build}"
              + (" (a sanitizer build)" if sanitized else ""))
    else:
        env = dict(os.environ, PATH=os.path.join(build, "tools") + os.pathsep + os.environ["PATH"],
                   PYTHONPATH=os.path.join(build, "bindings", "python"))
        for cmd in runs:
            print(f"$ {cmd}", flush=True)
            t0 = time.monotonic()
            rc, out = run_bounded(cmd, src, env, COMMAND_TIMEOUT)
            took = f"({time.monotonic() - t0:.0f} s)"
            if rc is None:
                problems.append(f"`{cmd}` still running after {COMMAND_TIMEOUT} s, killed:\n"
                                f"{out[-3000:]}")
            elif rc != 0:
                problems.append(f"`{cmd}` exited {rc} {took}:\n{out[-3000:]}")
            else:
                print("  " + "\n  ".join(out.strip().splitlines()[-3:]) + f"\n  {took}", flush=True)
    for p in problems:
        print("FAIL:", p)
    counts = {k: sum(1 for c, h in table.items() if h.split(" ")[0] == k and c in seen)
              for k in ("run", "by", "hand")}
    print(f"{len(seen)} documented commands: {counts['run']} run here, {counts['by']} run by "
          f"other tests, {counts['hand']} by hand; {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
