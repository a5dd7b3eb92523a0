"""The hook's modes, one module each, behind one registry (the shape of
torch's ddp_comm_hooks: a family's exchange in its own file).

A mode's `exchange(state, bucket)` runs on the state's engine thread: it
compresses `bucket.flat` (float32, one rank's gradient direction), moves the
frames with `state.comm` (collectives returning futures) and writes the
group's average update into `bucket.out` (float32, zeros). Every rank calls
it with the same layout, so collectives match across ranks.

A mode may also have an `issue(state, buf, flat, layout)` (DIRECT): the hook
then calls it on the autograd thread, as torch's own hooks run, in the steps
that need nothing of the exchange thread (no policy probing or decision, no
find_unused_parameters flags): it issues the bucket's collectives with
async_op=True and returns a future of the averaged bucket.

Adding a mode: a module with `exchange`, a line in MODES, and the methods
that name it in METHODS.
"""

from typing import Any, Callable, Dict

from . import allgather, allreduce, cast, cltk, randomk, server

MODES: Dict[str, Callable[[Any, Any], None]] = {
    "allreduce": allreduce.exchange,
    "server": server.exchange,
    "allgather": allgather.exchange,
    "lags": allgather.exchange,
    "randomk": randomk.exchange,
    "cltk": cltk.exchange,
    "cast": cast.exchange,
}

# Modes the hook may run on the autograd thread (see above).
DIRECT: Dict[str, Callable[..., Any]] = {
    "cast": cast.issue,
}

# Named methods: mode plus codec. Any codec works with mode "server" or
# "allgather" by name (GradwireState(model, mode="server", codec="fp16"): what
# method "fp16" was before mode "cast", and how its checkpoints still load);
# mode "cast" takes codec "fp16" or "bf16".
METHODS: Dict[str, Dict[str, Any]] = {
    "allreduce": dict(mode="allreduce"),
    # dist-EF-blockSGDM: one scale per 64 elements (one per tensor slice trains poorly
    # here; with heavy-ball momentum 64 trained 1.0 point closer to plain DDP than 256 over
    # 3 seeds, for 1.5 bits per element instead of 1.125: docs/results.md).
    "ef": dict(mode="server", codec=("scaled_sign", {"block_size": 64})),
    # DGC's exchange: each rank's top-k all-gathered (one way). Two-way (mode "server":
    # the sum compressed again) trained 3.6 points below plain DDP with heavy-ball
    # momentum, one-way 1.8 (docs/results.md).
    "topk": dict(mode="allgather", codec=("topk", {"density_ppm": 10000})),
    # torch's fp16_compress_hook with error feedback: one float16 all_reduce
    "fp16": dict(mode="cast", codec=("fp16", {})),
    "bf16": dict(mode="cast", codec=("bf16", {})),
    # 64-element blocks as ef: 0.7 points closer to plain DDP than 256 over 3 seeds.
    "efsignsgd": dict(mode="allgather", codec=("scaled_sign", {"block_size": 64})),
    # Without DGC's momentum masking: with heavy-ball momentum LAGS at 0.1% trained 0.9
    # and 2.1 points better without it, on two machines (docs/results.md).
    "lags": dict(mode="lags", codec=("topk", {"density_ppm": 1000}), momentum_masking=False),
    "randomk": dict(mode="randomk", codec=("randomk", {"density_ppm": 10000})),
    "cltk": dict(mode="cltk", codec=("index", {"density_ppm": 10000, "chunk_size": 4096})),
    # ef where it makes a bucket's exchange faster, DDP's own all-reduce elsewhere
    "auto": dict(mode="server", codec=("scaled_sign", {"block_size": 64}),
                 policy="never_slower"),
}

# Presets refused by name, with what to do instead: they did not train on the
# checks in docs/results.md. Their mode stays available with an explicit codec.
REFUSED: Dict[str, str] = {
    "randomk": (
        "method 'randomk' (random-k 1% with error feedback) does not train: on the "
        "Fashion-MNIST checks in docs/results.md it diverged with momentum and without (each "
        "coordinate goes out once in ~100 steps carrying ~100 steps of gradient), and at 10% it "
        "was 10 points below plain DDP after 2 epochs. For the same bytes use method='topk' or "
        "'cltk'; to run random-k anyway give its mode and codec: "
        "GradwireState(ddp, mode='randomk', codec=CodecSpec('randomk', density_ppm=...))"),
}

# Modes that trained more than 2 points below plain DDP with heavy-ball SGD
# momentum moved into the hook, and within 2 with Nesterov's (the CNN check over
# three seeds, docs/results.md "Over three seeds"): such an optimizer is refused,
# with what to change.
HEAVY_BALL: Dict[str, str] = {
    mode: (f"mode {mode!r} with heavy-ball SGD momentum trained {gaps[0]} points below plain "
           "DDP on average over three seeds of the Fashion-MNIST CNN check (docs/results.md, "
           "\"Over three seeds\"). Use torch.optim.SGD(..., momentum=0.9, nesterov=True), "
           f"{gaps[1]} below plain DDP with Nesterov, or method 'ef', 'efsignsgd' or 'topk', "
           "within 2 points with heavy-ball momentum on every seed. check_optimizer=False "
           "runs it anyway.")
    for mode, gaps in (("lags", ("2.6", "0.6 (0.9 at worst)")),
                        ("cltk", ("2.5", "1.0 (1.7 at worst)")))
}
