"""torch for the torch integrations (gradwire.ddp, gradwire.fsdp), which
need it; the rest of gradwire does not. Without torch, importing them
raises an ImportError that says how to install it."""

try:
    import torch
    import torch.distributed as dist
except ModuleNotFoundError as e:
    raise ImportError("gradwire's torch integrations (gradwire.ddp, gradwire.fsdp) need torch: "
                      "pip install 'gradwire[torch]'") from e

if not dist.is_available():
    raise ImportError("gradwire's torch integrations need torch.distributed, which this torch "
                      "build lacks")

__all__ = ["torch", "dist"]
