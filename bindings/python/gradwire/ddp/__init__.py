"""A torch DistributedDataParallel communication hook running any gradwire method.

    state = GradwireState(ddp_model, method="ef")
    ddp_model.register_comm_hook(state, hook)

Error-feedback state lives per parameter (never per bucket), so DDP's
bucket rebuild after the first iteration changes nothing; gradient
accumulation with no_sync() needs nothing either (DDP hands the hook the
accumulated gradient). The state pickles (and has state_dict /
load_state_dict): every handle's checkpoint plus the step count, restoring
bit-identically. Each rank keeps and checkpoints its own state.

Modes (docs/distributed.md for what each collective carries):
  allreduce  full precision: torch's all_reduce of the bucket, averaged
  cast       methods fp16 / bf16: torch's fp16 (bf16) compress hook with error
             feedback: y = residual + bucket / M, cast to 16 bits (the rounding
             kept), ONE all_reduce(SUM) of the 16-bit bucket, cast back
  server     two-way compression through a sharded server: rank j serves
             slice j of every parameter (gw_shard_range). Worker frames go
             all-to-all to their slice's owner, the owner averages them with
             its residual and compresses again, the owners' frames are
             all-gathered and every rank decodes the same update
  allgather  one-way: every rank's frames are all-gathered and averaged
  lags       one-way with LAGS-SGD's per-layer state (gw_lags_layer)
  randomk    random-k values from a seed all ranks share: a plain sum all_reduce
  cltk       ScaleCom's CLT-k: the leader's index frame is broadcast, the
             values at those indices are summed by all_reduce

The hook exchanges over the DDP model's own process group (any group, any
ranks; after unpickling, bind() takes the new model's). float64 buckets are
compressed in float32 and returned in float64; other dtypes but float16 and
bfloat16 are refused at construction. Sparse gradients are averaged by a
plain all_reduce in every mode; zero-element parameters have no state. Under
find_unused_parameters / static_graph, parameters no rank used are not sent
(DDP would drop them): their residuals keep the mass. docs/distributed.md
has the rules. policy="never_slower" (method="auto": ef with it) sends each
bucket dense where compressing it was not faster (_policy.py). start_step=N
makes the first N steps a plain all-reduce
(PowerSGD's start_powerSGD_iter, DeepSpeed's freeze_step); from_config(model,
dict or JSON) builds a state from the constructor's options.

The hook returns at once a future of the bucket's update direction (a
gradient-like average); the state's own thread compresses, exchanges and
decodes while backward goes on (gradwire's native calls release the GIL),
collectives issued with async_op=True in bucket order; a step of plain
all-reduces only issues them from the hook, as DDP's own hook does, and so
does mode cast (modes.DIRECT) where nothing needs the thread. The optimizer applies
the learning rate. Give it to the state (optimizer=opt): its momentum then
runs on each rank's gradient before compression, where error feedback needs
it (an optimizer's momentum after the exchange re-applies the residuals'
delayed mass and trains badly; without optimizer= such an optimizer is
refused at its first step), and its learning rate rescales the residuals
(lr_prev / lr). Without it, set `state.lr` to the rate if it changes.
momentum="nesterov", mu=0.9 instead runs dist-EF-blockSGDM's worker momentum
(then use an optimizer without momentum).

Layout: _state.py (GradwireState), _hook.py (the hook), _engine.py (the
exchange thread), _optim.py (the optimizer's momentum), _policy.py
(never_slower), modes/ (one module per mode and the registry); gradwire/_frames.py and _collectives.py (frames
in tensors, collectives returning futures) are shared with gradwire.fsdp.
"""

from ._state import GradwireState, config_options
from ._hook import hook
from ._checkpoint import dcp_entry, dcp_states, load_checkpoint, save_checkpoint
from ._reshard import reshard
from .modes import METHODS, MODES

__all__ = ["GradwireState", "hook", "config_options", "METHODS", "MODES", "reshard",
           "save_checkpoint", "load_checkpoint", "dcp_entry", "dcp_states"]
