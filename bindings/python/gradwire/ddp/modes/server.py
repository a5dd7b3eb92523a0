"""Two-way compression through a sharded server (dist-EF-blockSGDM; any codec).

Rank j serves slice j of every parameter (gw_shard_range). Each rank
compresses slice j of its direction with worker (parameter, j) straight into
the region of its send tensor bound for rank j; an all_to_all carries the
regions to their owners; each owner runs one tiled server round per owned
slice over the M frames (in rank order) into its broadcast tensor; an
all_gather gives every rank every owner's frames, decoded into the update.
Fixed-size codecs exchange no sizes: every rank knows every frame's size.
"""

from __future__ import annotations

from ... import decode, shard_range
from ..._frames import SendBuffer, fixed_size, regions, sparse, split


def exchange(state, bucket) -> None:
    comm, flat, layout = state.comm, bucket.flat, bucket.layout
    M, r = comm.size, comm.rank
    slices = [[(pid, off, n, shard_range(n, M, j)) for pid, off, n in layout] for j in range(M)]
    slices = [[x for x in s if len(x[3])] for s in slices]   # empty slices: no frame
    workers = [[state.worker(pid, j, len(s)) for pid, _, _, s in slices[j]] for j in range(M)]
    bounds = [[w.frame_bound() for w in ws] for ws in workers]  # also the server frames'

    # 1. worker frames, region j for slice j's owner
    send = SendBuffer(sum(map(sum, bounds)))
    sizes = []
    masking = sparse(state.codec) and state._moment
    for j in range(M):
        start = send.pos
        for (pid, off, _, s), w, bound in zip(slices[j], workers[j], bounds[j]):
            g = flat[off + s.start:off + s.stop]
            size = send.write(bound, lambda o: w.step(g, state.lr_of(pid), out=o))
            if masking:
                state._moment.mask_frame(pid, s.start, send.data[send.pos - size:send.pos],
                                         len(s))
        sizes.append(send.pos - start)
    fixed = fixed_size(state.codec)
    recv_sizes = [sum(bounds[r])] * M if fixed else comm.exchange_sizes(sizes)
    mine = comm.all_to_all(send.data, sizes, recv_sizes).wait()

    # 2. this rank's server round per owned slice, over its M frames in rank order
    owned = slices[r]
    per_rank = [split(m, len(owned), "a worker message") for m in regions(mine, recv_sizes)]
    widest = max(sum(b) for b in bounds)
    bcast = SendBuffer(widest)
    for k, (pid, _, n, s) in enumerate(owned):
        server = state.server(pid, n, s)
        frames = [per_rank[i][k] for i in range(M)]
        bcast.write(bounds[r][k], lambda o: server.round(frames, state.lr_of(pid), out=o))

    # 3. every owner's frames, padded (with zeros) to the longest message
    width = widest if fixed else max(comm.gather_sizes(bcast.pos))
    bcast.data[bcast.pos:width].zero_()
    every = comm.all_gather(bcast.data[:width]).wait()
    for j in range(M):
        frames = split(every[j * width:(j + 1) * width], len(slices[j]), "a server message")
        for (_, off, _, s), frame in zip(slices[j], frames):
            decode(frame, out=bucket.out[off + s.start:off + s.stop])
