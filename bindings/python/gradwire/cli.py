"""The gradwire command line over the Python binding (docs/cli.md).

The same commands and output as the C program tools/cli (installed with the C
library); this one is the package's console script (`gradwire`) and
`python -m gradwire`. tests/cli_test.sh checks that both print the same bytes
for inspect, codecs and demo.
"""

from __future__ import annotations

import math
import struct
import sys
import time
from typing import Callable, List, Optional, Sequence, TextIO, Tuple

import numpy as np

from . import (CodecSpec, GradwireError, Server, Worker, compression_ratio, crc32c, decode,
               decode_accumulate, encode)
from . import gwnative as _n

OK, BAD, USAGE = 0, 1, 2
FIELD = "  %-13s "
_FLOAT_PARAMS = {_n.GW_PARAM_THRESHOLD, _n.GW_PARAM_BUDGET}
_COMMANDS = [
    ("inspect", "validate and describe frames (files, '-' for stdin, hex text)"),
    ("codecs", "every codec with its parameters, ranges and defaults"),
    ("bench", "a quick timing of a few codecs (the real suite: scripts/bench.sh)"),
    ("demo", "two-way compressed SGD on a toy quadratic with a few codecs"),
]


class _Usage(Exception):
    """A command-line mistake: the message goes to stderr, the exit status is 2."""


def _is_help(arg: str) -> bool:
    return arg in ("-h", "--help")


def _count(text: str, what: str) -> int:
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    body, m = text, 1
    if body and body[-1].lower() in mult:
        body, m = body[:-1], mult[body[-1].lower()]
    if not body.isdigit() or not body.isascii():
        raise _Usage(f"gradwire: {what}: expected a count such as 1000, 64K or 1M, got '{text}'")
    value = int(body) * m
    if value >= 1 << 64:
        raise _Usage(f"gradwire: {what}: expected a count such as 1000, 64K or 1M, got '{text}'")
    return value


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _seq_sum(values: np.ndarray) -> float:
    """The sum of float64 values added one after another, as the C program
    adds them (np.cumsum is sequential; chunks bound its memory)."""
    total = 0.0
    step = 1 << 20
    for i in range(0, values.size, step):
        chunk = np.concatenate(([total], values[i:i + step]))
        total = float(np.cumsum(chunk)[-1])
    return total


# ---------------------------------------------------------------- inspect

_INSPECT_USAGE = """\
usage: gradwire inspect [--max-elements N] FRAME [FRAME...]
  FRAME             a file holding one or more frames back to back; '-' reads stdin;
                    hex text as in tests/vectors/*.frame.hex is accepted too
  --max-elements N  decode (for the statistics) frames of at most N elements
                    (default 64M; K, M, G suffixes)
Prints the header fields, both CRC32C checksums, the library's verdict, the codec's
parameters, the sizes and the decoded values' min, max, mean, L2 norm and nonzero
count. Exit status: 0 every frame valid, 1 a frame is bad, 2 usage or read error.
"""

_HEX = frozenset(b"0123456789abcdefABCDEF")
_SPACE = frozenset(b" \t\r\n")


def _hex_decode(data: bytes) -> Optional[bytes]:
    """The bytes hex text spells (tests/vectors format), or None if it is not hex text."""
    digits = bytearray()
    for i, line in enumerate(data.split(b"\n")):
        if line.startswith(b"#"):
            continue
        for c in line:
            if c in _HEX:
                digits.append(c)
            elif c not in _SPACE:
                return None
    if not digits or len(digits) % 2:
        return None
    return bytes.fromhex(digits.decode("ascii"))


def _read_input(path: str) -> Tuple[bytes, bool]:
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    decoded = _hex_decode(data)
    return (data, False) if decoded is None else (decoded, True)


def _le(p: bytes, at: int, size: int) -> int:
    return int.from_bytes(p[at:at + size], "little")


def _codec_label(codec_id: int) -> str:
    return _n.codec_name(codec_id) or "unknown"


def _print_header(out: TextIO, p: bytes) -> None:
    size = len(p)
    if size < 4 or p[:4] != b"GWFR":
        have = min(size, 4)
        if have == 0:
            out.write(FIELD % "magic" + "(no bytes)\n")
            return
        spelled = "".join("%02x " % b for b in p[:have])
        verdict = "(GWFR cut short)" if b"GWFR"[:have] == p[:have] else "(not GWFR)"
        out.write(FIELD % "magic" + spelled + verdict + "\n")
        return
    out.write(FIELD % "magic" + "GWFR\n")
    if size < 5:
        return
    version = p[4]
    out.write(FIELD % "format" + "%d\n" % version)
    if version not in (1, 2):
        return
    if size >= 6:
        out.write(FIELD % "codec" + "%s (%d)\n" % (_codec_label(p[5]), p[5]))
    if size >= 8:
        out.write(FIELD % "flags" + "0x%04x\n" % _le(p, 6, 2))
    if version == 2:
        if size >= 16:
            tag = _le(p, 8, 8)
            out.write(FIELD % "tag" + "0x%016x (tensor %d, round %d)\n"
                      % (tag, tag >> 32, tag & 0xFFFFFFFF))
        len_at, plen_at, hdr = 16, 32, _n.GW_FRAME_HEADER_SIZE
    else:
        len_at, plen_at, hdr = 8, 24, 26
    if size >= len_at + 8:
        out.write(FIELD % "elements" + "%d\n" % _le(p, len_at, 8))
    if size >= len_at + 16:
        out.write(FIELD % "payload" + "%d bytes\n" % _le(p, len_at + 8, 8))
    if size >= plen_at + 2:
        out.write(FIELD % "params size" + "%d bytes\n" % _le(p, plen_at, 2))
    if version == 2:
        if size >= hdr:
            stored, crc = _le(p, 36, 4), crc32c(p[:36])
            if crc == stored:
                out.write(FIELD % "header crc" + "ok (0x%08x)\n" % crc)
            else:
                out.write(FIELD % "header crc" + "MISMATCH (stored 0x%08x, computed 0x%08x)\n"
                          % (stored, crc))
        else:
            out.write(FIELD % "header crc" + "missing (%d of %d header bytes)\n" % (size, hdr))
    else:
        out.write(FIELD % "header crc" + "none (format 1)\n")
    if size >= hdr:
        body = hdr + _le(p, plen_at, 2) + _le(p, len_at + 8, 8)
        if body + 4 <= size:
            stored, crc = _le(p, body, 4), crc32c(p[:body])
            if crc == stored:
                out.write(FIELD % "frame crc" + "ok (0x%08x)\n" % crc)
            else:
                out.write(FIELD % "frame crc" + "MISMATCH (stored 0x%08x, computed 0x%08x)\n"
                          % (stored, crc))
            return
    out.write(FIELD % "frame crc" + "missing (the frame is cut short)\n")


def _param_text(spec: CodecSpec, p: int) -> str:
    name = _n.param_name(p) or "?"
    if p in _FLOAT_PARAMS:
        return "%s=%.9g" % (name, spec.get_f32(p))
    return "%s=%d" % (name, spec.get(p))


def _print_stats(out: TextIO, frame: bytes, count: int, max_elements: int) -> None:
    if count > max_elements:
        out.write(FIELD % "stats" + "skipped: %d elements, more than --max-elements %d\n"
                  % (count, max_elements))
        return
    x = decode(frame, max_elements=None)
    if x.size == 0:
        out.write(FIELD % "min" + "-\n" + FIELD % "max" + "-\n" + FIELD % "mean" + "-\n")
        sumsq = 0.0
    else:
        x64 = x.astype(np.float64)
        out.write(FIELD % "min" + "%.9g\n" % float(x.min()))
        out.write(FIELD % "max" + "%.9g\n" % float(x.max()))
        out.write(FIELD % "mean" + "%.6g\n" % (_seq_sum(x64) / x.size))
        sumsq = _seq_sum(x64 * x64)
    out.write(FIELD % "l2 norm" + "%.6g\n" % math.sqrt(sumsq))
    out.write(FIELD % "nonzero" + "%d of %d\n" % (np.count_nonzero(x), x.size))


def _inspect_input(out: TextIO, path: str, data: bytes, hexed: bool, max_elements: int) -> int:
    out.write("== %s: %d bytes (%s)\n" % ("<stdin>" if path == "-" else path, len(data),
                                         "hex" if hexed else "binary"))
    offset, frame_no = 0, 0
    while True:
        p = data[offset:]
        frame_no += 1
        out.write("frame %d at offset %d\n" % (frame_no, offset))
        _print_header(out, p)
        try:
            info = _n.frame_inspect(p)
        except GradwireError as e:
            out.write(FIELD % "status" + "BAD %s: %s\n" % (e.name, _n.status_message(e.status)))
            return BAD
        out.write(FIELD % "status" + "ok\n")
        frame = p[:info.frame_size]
        spec = CodecSpec.from_frame(frame)
        params = " ".join(_param_text(spec, q) for q in _n.codec_params(spec.codec()))
        out.write(FIELD % "params" + (params or "(none)") + "\n")
        out.write(FIELD % "frame size" + "%d bytes (%d as f32), ratio %.3f\n"
                  % (info.frame_size, 4 * info.count, compression_ratio(frame)))
        _print_stats(out, frame, info.count, max_elements)
        offset += info.frame_size
        if offset >= len(data):
            return OK


def cmd_inspect(args: Sequence[str], out: TextIO) -> int:
    max_elements = 1 << 26
    i = 0
    while i < len(args):
        a = args[i]
        if _is_help(a):
            out.write(_INSPECT_USAGE)
            return OK
        if a == "--max-elements":
            if i + 1 >= len(args):
                raise _Usage(_INSPECT_USAGE.rstrip("\n"))
            max_elements = _count(args[i + 1], "--max-elements")
            i += 2
        elif a.startswith("-") and a != "-":
            raise _Usage(f"gradwire inspect: unknown option '{a}'\n" + _INSPECT_USAGE.rstrip("\n"))
        else:
            break
    paths = args[i:]
    if not paths:
        raise _Usage(_INSPECT_USAGE.rstrip("\n"))
    rc = OK
    for path in paths:
        try:
            data, hexed = _read_input(path)
        except OSError as e:
            sys.stderr.write(f"gradwire: {path}: {e.strerror}\n")
            rc = USAGE
            continue
        r = _inspect_input(out, path, data, hexed, max_elements)
        if r != OK and rc == OK:
            rc = r
    return rc


# ----------------------------------------------------------------- codecs

_CODECS_USAGE = """\
usage: gradwire codecs
Lists every built-in codec with its parameters (wire order), their ranges and the
value a new codec spec holds. threshold and budget are floats (the ranges are of
their bit patterns, shown as floats).
"""


def cmd_codecs(args: Sequence[str], out: TextIO) -> int:
    if args:
        if _is_help(args[0]):
            out.write(_CODECS_USAGE)
            return OK
        raise _Usage(f"gradwire codecs: unexpected argument '{args[0]}'\n"
                     + _CODECS_USAGE.rstrip("\n"))
    ids = list(_n.codec_list())
    out.write("%d codecs; each parameter: range, then the value a new spec holds\n" % len(ids))
    for cid in ids:
        spec = CodecSpec(cid)
        out.write("%s (%d)\n" % (_n.codec_name(cid) or "?", cid))
        params = list(_n.codec_params(cid))
        if not params:
            out.write("  (no parameters)\n")
        for p in params:
            b = _n.codec_param_bounds(cid, p)
            line = "  %-12s " % (_n.param_name(p) or "?")
            if p in _FLOAT_PARAMS:
                f = spec.get_f32(p)
                line += "%.9g..%.9g  default %.9g" % (_f32(b.min), _f32(b.max), f)
                if not 0 <= b.default_value < 1 << 32 or _f32(b.default_value) != f:
                    line += " (bounds say %.9g)" % _f32(b.default_value)
                line += " (float)"
            else:
                cur = spec.get(p)
                line += "%d..%d  default %d" % (b.min, b.max, cur)
                if cur != b.default_value:
                    line += " (bounds say %d)" % b.default_value
            out.write(line + "\n")
    return OK


# ------------------------------------------------------------------ bench

_BENCH_USAGE = """\
usage: gradwire bench [--quick] [--sizes N[,N...]] [--codecs NAME[,NAME...]]
A quick check, not the benchmark suite (for that: bash scripts/bench.sh).
  --quick          time each call for at least 0.02 s instead of 0.2 s
  --sizes LIST     elements per tensor (default 1M; K, M, G suffixes)
  --codecs LIST    codecs with default parameters (default
                   identity,fp16,sign,scaled_sign,topk,qsgd; see gradwire codecs)
Prints, per codec and size, the frame size and the best time of encode, decode and
decode_accumulate in ms and in GB/s of float32 (4n bytes per call).
"""
_BENCH_CODECS = ["identity", "fp16", "sign", "scaled_sign", "topk", "qsgd"]


def _best_time(call: Callable[[], object], min_time: float) -> float:
    """Best seconds per call over calls adding up to at least min_time (3 at least)."""
    best, reps, start = float("inf"), 0, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        call()
        t = time.perf_counter()
        best = min(best, t - t0)
        reps += 1
        if reps >= 3 and t - start >= min_time:
            return best


def cmd_bench(args: Sequence[str], out: TextIO) -> int:
    sizes, codecs, min_time = [1 << 20], list(_BENCH_CODECS), 0.2
    i = 0
    while i < len(args):
        a = args[i]
        if _is_help(a):
            out.write(_BENCH_USAGE)
            return OK
        if a == "--quick":
            min_time = 0.02
            i += 1
        elif a == "--sizes" and i + 1 < len(args):
            items = [s for s in args[i + 1].split(",") if s]
            if not 1 <= len(items) <= 16:
                raise _Usage("gradwire bench: --sizes: 1 to 16 sizes")
            sizes = [_count(s, "--sizes") for s in items]
            if any(not 1 <= s <= 1 << 30 for s in sizes):
                raise _Usage("gradwire bench: --sizes: each from 1 to 1G elements")
            i += 2
        elif a == "--codecs" and i + 1 < len(args):
            codecs = [s for s in args[i + 1].split(",") if s]
            if not 1 <= len(codecs) <= 32:
                raise _Usage("gradwire bench: --codecs: 1 to 32 codecs")
            i += 2
        else:
            raise _Usage(f"gradwire bench: unknown or incomplete option '{a}'\n"
                         + _BENCH_USAGE.rstrip("\n"))
    specs = {}
    for name in codecs:
        try:
            specs[name] = CodecSpec(name)
        except GradwireError as e:
            sys.stderr.write(f"gradwire bench: {name}: {e.name}: {_n.status_message(e.status)}\n")
            return USAGE
    out.write("gradwire bench: a quick check, not the benchmark suite (run bash scripts/bench.sh;\n"
              "docs/performance.md). SIMD target %s; best of calls over %.2f s; GB/s of float32\n"
              "(4n bytes per call)\n" % (_n.simd_target_name(_n.simd_active_target()), min_time))
    out.write("%-13s %10s %12s %10s %7s %10s %7s %10s %7s\n" % (
        "codec", "elements", "frame bytes", "encode ms", "GB/s", "decode ms", "GB/s",
        "accum ms", "GB/s"))
    out.flush()
    total, index = len(sizes) * len(codecs), 0
    rng = np.random.default_rng(1)
    for n in sizes:
        x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
        dec = np.zeros(n, np.float32)
        for name in codecs:
            index += 1
            spec = specs[name]
            buf = bytearray(spec.encode_bound(n))
            written = [0]
            frame = [memoryview(buf)]

            def do_encode() -> None:
                written[0] = encode(spec, x, out=buf)
                frame[0] = memoryview(buf)[:written[0]]

            ops = [("encode", do_encode),
                   ("decode", lambda: decode(frame[0], out=dec)),
                   ("decode_accumulate", lambda: decode_accumulate(frame[0], dec, 1e-6))]
            best = []
            for op, call in ops:
                sys.stderr.write(f"bench [{index}/{total}] {name} n={n}: {op}\n")
                sys.stderr.flush()
                best.append(_best_time(call, min_time))
            row = "%-13s %10d %12d" % (name, n, written[0])
            for b in best:
                row += " %10.3f %7.2f" % (b * 1e3, 4.0 * n / b / 1e9)
            out.write(row + "\n")
            out.flush()
    sys.stderr.write("bench: done\n")
    return OK


# ------------------------------------------------------------------- demo

_DEMO_USAGE = """\
usage: gradwire demo [--n N] [--steps S] [--lr X]
One worker and one server, two-way compressed SGD with error feedback (no momentum)
on f(x) = ||x - t||^2 / 2 (the README's C example), once per codec.
  --n N       elements (default 100000; K, M suffixes)
  --steps S   steps (default 100)
  --lr X      learning rate (default 0.1)
Prints the bytes of each frame (worker to server, server to worker), the ratio to
float32 and ||x - t|| / ||t|| at five points of the run.
"""
_DEMO_CODECS = [
    ("identity", "identity", {}),
    ("fp16", "fp16", {}),
    ("scaled_sign block_size=100", "scaled_sign", {"block_size": 100}),
    ("topk density_ppm=50000", "topk", {"density_ppm": 50000}),
]
_CHECKPOINTS = 5


def _distance(x: np.ndarray, t: np.ndarray) -> float:
    d = x.astype(np.float64) - t.astype(np.float64)
    return math.sqrt(_seq_sum(d * d))


def cmd_demo(args: Sequence[str], out: TextIO) -> int:
    n, steps, lr = 100000, 100, 0.1
    i = 0
    while i < len(args):
        a = args[i]
        if _is_help(a):
            out.write(_DEMO_USAGE)
            return OK
        if a == "--n" and i + 1 < len(args):
            n = _count(args[i + 1], "--n")
        elif a == "--steps" and i + 1 < len(args):
            steps = _count(args[i + 1], "--steps")
        elif a == "--lr" and i + 1 < len(args):
            try:
                lr = float(args[i + 1])
            except ValueError:
                lr = -1.0
            if not 0 < lr < 100:
                raise _Usage("gradwire demo: --lr: expected a number in (0, 100)")
        else:
            raise _Usage(f"gradwire demo: unknown or incomplete option '{a}'\n"
                         + _DEMO_USAGE.rstrip("\n"))
        i += 2
    if not 1 <= n <= 1 << 26 or not 1 <= steps <= 100000:
        raise _Usage("gradwire demo: --n from 1 to 64M, --steps from 1 to 100000")
    lr32 = float(np.float32(lr))
    marks = [-(-(m + 1) * steps // _CHECKPOINTS) for m in range(_CHECKPOINTS)]
    hashed = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    t = (hashed >> np.uint64(9)).astype(np.float32) / np.float32(4194304) - np.float32(1)
    out.write("gradwire demo: one worker, one server, f(x) = ||x - t||^2 / 2, n = %d, %d steps,\n"
              "lr %g, no momentum, error feedback both ways; float32 is %d bytes\n"
              % (n, steps, lr, 4 * n))
    out.write("%-27s %9s %9s %8s" % ("codec", "worker B", "server B", "ratio")
              + "".join(" %8s" % ("step %d" % s) for s in marks) + "\n")
    norm_t = _distance(t, np.zeros(n, np.float32))
    for label, codec, params in _DEMO_CODECS:
        spec = CodecSpec(codec, **params)
        worker = Worker(n, spec, momentum="none", mu=0.0)
        server = Server(n, 1, spec, expect=spec)
        x = np.zeros(n, np.float32)
        wbytes = sbytes = 0
        dist: List[float] = []
        for step in range(1, steps + 1):
            wframe = worker.step(x - t, lr32)
            server.push(wframe)
            sframe = server.step(lr32)
            decode_accumulate(sframe, x, -lr32)
            wbytes += len(wframe)
            sbytes += len(sframe)
            while len(dist) < _CHECKPOINTS and marks[len(dist)] == step:
                dist.append(_distance(x, t) / norm_t)
        out.write("%-27s %9d %9d %7.1fx" % (label, wbytes // steps, sbytes // steps,
                                            4.0 * n * steps / wbytes)
                  + "".join(" %8.4f" % d for d in dist) + "\n")
        worker.close()
        server.close()
    out.write("worker B, server B: bytes per frame; ratio: float32 bytes / worker bytes;\n"
              "step S: ||x - t|| / ||t|| after S steps (1 at the start)\n")
    return OK


# ------------------------------------------------------------------- main

def _usage() -> str:
    lines = ["usage: gradwire [--version] [--help] COMMAND [ARGS]", "", "commands:"]
    lines += ["  %-8s  %s" % c for c in _COMMANDS]
    lines += ["", "'gradwire COMMAND --help' describes a command (docs/cli.md)."]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out = sys.stdout
    if not args:
        sys.stderr.write(_usage())
        return USAGE
    if _is_help(args[0]):
        out.write(_usage())
        return OK
    if args[0] == "--version":
        out.write("gradwire %s (wire format %d)\n" % (_n.version(), _n.GW_FRAME_FORMAT_VERSION))
        return OK
    commands = {"inspect": cmd_inspect, "codecs": cmd_codecs, "bench": cmd_bench,
                "demo": cmd_demo}
    run = commands.get(args[0])
    if run is None:
        sys.stderr.write(f"gradwire: unknown command '{args[0]}'\n" + _usage())
        return USAGE
    try:
        rc = run(args[1:], out)
        out.flush()
        return rc
    except _Usage as e:
        out.flush()
        sys.stderr.write(str(e) + "\n")
        return USAGE
    except BrokenPipeError:
        return OK


if __name__ == "__main__":
    sys.exit(main())
