"""One-way compression: every rank's frames are all-gathered and averaged.

Mode "allgather" keeps one error-feedback worker per parameter (EF-signSGD,
any codec); mode "lags" one LAGS-SGD layer per parameter (gw_lags_layer:
acc = eps + lr g, top-k_l of acc sent, the rest kept). Each rank writes its
frames back to back into its send tensor; fixed-size codecs need no
exchange of sizes (every rank's message fills the same bounds), the others
share sizes first and pad to the longest message.
"""

from __future__ import annotations

from ... import decode_accumulate_many
from ..._frames import SendBuffer, fixed_size, sparse, split


def exchange(state, bucket) -> None:
    comm, flat, layout = state.comm, bucket.flat, bucket.layout
    M = comm.size
    lags = state.mode == "lags"
    handles = [state.lags_layer(pid, n) if lags else state.worker(pid, 0, n)
               for pid, _, n in layout]
    bounds = [h.frame_bound() for h in handles]
    send = SendBuffer(sum(bounds))
    masking = sparse(state.codec) and state._moment
    for (pid, off, n), h, bound in zip(layout, handles, bounds):
        g = flat[off:off + n]
        size = send.write(bound, lambda o: h.step(g, state.lr_of(pid), out=o))
        if masking:
            state._moment.mask_frame(pid, 0, send.data[send.pos - size:send.pos], n)
    width = sum(bounds) if fixed_size(state.codec) else max(comm.gather_sizes(send.pos))
    send.data[send.pos:width].zero_()
    every = comm.all_gather(send.data[:width]).wait()
    per_rank = [split(every[i * width:(i + 1) * width], len(layout), "a rank's message")
                for i in range(M)]
    for k, (pid, off, n) in enumerate(layout):
        # LAGS sends lr-scaled values (acc = eps + lr g): undo it for a gradient-like output.
        alpha = 1.0 / M / (state.lr_of(pid) if lags else 1.0)
        # The parameter's M frames (in rank order), summed in one tiled call.
        decode_accumulate_many([per_rank[i][k] for i in range(M)], bucket.out[off:off + n],
                               alpha)
