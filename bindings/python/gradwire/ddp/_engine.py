"""The thread a GradwireState's buckets are exchanged on.

DDP calls the hook on its autograd thread as each bucket's gradients are
ready and waits for the returned futures only at the end of backward. The
hook therefore only queues the bucket here and returns a future at once;
this thread compresses, exchanges and decodes while backward goes on (the
native calls release the GIL). One thread per state, buckets strictly in
the order DDP hands them over: every rank then issues its collectives in the
same order, which gloo and NCCL require (collectives issued from future
callbacks on several threads may interleave differently on different ranks
and hang).
"""

from __future__ import annotations

import queue
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from .._torch import torch


class Engine:
    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self.clock = HookClock()

    def submit(self, job: Callable[[], torch.Tensor]) -> torch.futures.Future:
        """A future of job()'s tensor (or of the exception it raised)."""
        fut: torch.futures.Future = torch.futures.Future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="gradwire-ddp",
                                                daemon=True)
                self._thread.start()
        self._jobs.put((job, fut))
        return fut

    def _run(self) -> None:
        while True:
            job, fut = self._jobs.get()
            try:
                with self.clock():
                    result = job()
            except BaseException as e:  # the autograd thread raises it at wait()
                fut.set_exception(e)
            else:
                fut.set_result(result)
            del job, fut


class HookClock:
    """Seconds the hook's own work took, summed over the buckets it ran:
    `cpu`, the running thread's CPU time (encoding, decoding, copies, Python;
    gloo's transfers run on threads of its own), and `wall`, that plus the
    time it waited for collectives to complete or for a core."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            yield
        finally:
            self.cpu += time.thread_time() - cpu
            self.wall += time.perf_counter() - wall
