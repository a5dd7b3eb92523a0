"""Full precision: torch's all_reduce of the bucket, averaged (DDP's own
arithmetic: divided first, so float16 does not overflow)."""


def exchange(state, bucket) -> None:
    bucket.out = state.comm.all_reduce_sum(bucket.flat.div(state.comm.size)).wait()
