"""Sharding and shuffling as pure functions: which samples a rank reads in an epoch.

On demand (io.read_type=on_demand): the global order of an epoch is a true permutation of all
samples (seeded, changing with the epoch) or the identity. Rank r takes the r-th contiguous share
of steps*batch*ranks samples of that order (reader.sharding=block), or every ranks-th sample
from the r-th on (round_robin, as IOR's segments interleave the ranks' blocks; with a block of
k samples, every ranks-th run of k: block-cyclic, IOR's -b of k transfers), so every rank
runs the same number of steps; the
remainder (fewer than batch*ranks samples) is dropped, or, with remainder="pad", filled with the
first samples of the order again. With layout "replicated" every rank takes the whole order.
With shuffle_scope "rank" the epoch's order is the identity, split as above, and each rank
permutes its own share (seeded by the epoch and the rank): a rank keeps the same samples every
epoch and reads them at random, as IOR's -z reads its own block. With shuffle_block k either
shuffle permutes runs of k consecutive samples, each run in order (a loader that reads a batch
as one slice ds[i:i + k] at shuffled i).

Whole input in memory (io.read_type=memory): a rank first reads its memory share (all samples
when replicated, else a contiguous block of about N/ranks samples), then trains on a
permutation of that share each epoch, for the steps every rank can run.

Nothing here is per sample in Python: orders are numpy arrays, locations are computed."""
import numpy as np


def steps_per_epoch(num_samples, ranks, batch, remainder="drop", layout="multi",
                    read_type="on_demand"):
    if read_type == "memory":
        share = num_samples if layout == "replicated" else num_samples // ranks
        return share // batch
    if layout == "replicated":
        ranks = 1
    if remainder == "pad":
        return -(-num_samples // (ranks * batch))
    return num_samples // (ranks * batch)


def unread_per_epoch(num_samples, ranks, batch, remainder, layout, read_type):
    """Samples not read in an epoch (negative: samples read twice, when padded)."""
    steps = steps_per_epoch(num_samples, ranks, batch, remainder, layout, read_type)
    readers = 1 if layout == "replicated" and read_type != "memory" else ranks
    if read_type == "memory" and layout == "replicated":
        return num_samples - steps * batch
    return num_samples - steps * readers * batch


def permute_blocks(permutation, items, block=1):
    """items in the order of permutation (a generator's permutation method) applied to its
    runs of block consecutive items, each run's items kept in order (the last run shorter when
    block does not divide them); block 1 permutes the items themselves."""
    items = np.asarray(items)
    if block <= 1:
        return permutation(items)
    runs = -(-len(items) // block)
    at = (permutation(runs)[:, None] * block + np.arange(block)).reshape(-1)
    return items[at[at < len(items)]]


def epoch_order(num_samples, epoch, seed, shuffle, samples_per_file=0, file_shuffle=False,
                shuffle_block=1):
    """The global sample order of an epoch: a permutation of all samples (shuffle; of runs of
    shuffle_block consecutive samples, each run in order), or, with file_shuffle only, the
    files in a permuted order with each file's samples in order, or the identity."""
    if shuffle:
        rng = np.random.default_rng([seed, epoch])
        return permute_blocks(rng.permutation, np.arange(num_samples, dtype=np.int64),
                              shuffle_block)
    if file_shuffle and samples_per_file:
        files = -(-num_samples // samples_per_file)
        order = np.random.default_rng([seed, epoch, 1]).permutation(files).astype(np.int64)
        idx = (order[:, None] * samples_per_file + np.arange(samples_per_file)).reshape(-1)
        return idx[idx < num_samples]
    return np.arange(num_samples, dtype=np.int64)


def memory_share(num_samples, ranks, rank, layout):
    """The samples a rank reads into memory at start."""
    if layout == "replicated":
        return np.arange(num_samples, dtype=np.int64)
    lo, hi = rank * num_samples // ranks, (rank + 1) * num_samples // ranks
    return np.arange(lo, hi, dtype=np.int64)


def rank_samples(num_samples, ranks, rank, batch, epoch, seed, shuffle, remainder="drop",
                 layout="multi", read_type="on_demand", samples_per_file=0, file_shuffle=False,
                 sharding="block", shuffle_scope="global", sharding_block=1,
                 shuffle_block=1, shuffle_window=0):
    """The samples rank reads (or, in memory mode, trains on) in epoch: shape (steps, batch).
    round_robin sharding deals the order out sharding_block samples at a time (which must
    divide steps * batch); a shuffle permutes runs of shuffle_block consecutive samples, each
    run in order (a batch read as one slice at a shuffled start), or within windows of
    shuffle_window samples (window_share)."""
    steps = steps_per_epoch(num_samples, ranks, batch, remainder, layout, read_type)
    if shuffle and shuffle_window and read_type != "memory":
        share = window_share(num_samples, ranks, rank, epoch, seed, shuffle_window)
        return share[:steps * batch].reshape(steps, batch)
    if read_type == "memory":
        share = memory_share(num_samples, ranks, rank, layout)
        if shuffle:
            share = np.random.default_rng([seed, epoch, rank]).permutation(share)
        return share[:steps * batch].reshape(steps, batch)
    own = shuffle and shuffle_scope == "rank"
    order = epoch_order(num_samples, epoch, seed, shuffle and not own, samples_per_file,
                        file_shuffle, shuffle_block)
    permute = np.random.default_rng([seed, epoch, rank, 2]).permutation if own else None
    if layout == "replicated":
        ranks, rank = 1, 0
    per_rank = steps * batch
    need = per_rank * ranks
    if need > order.size:
        order = np.resize(order, need)      # the order again, as often as needed
    if sharding == "round_robin":
        k = sharding_block
        if per_rank % k:
            raise ValueError(f"a block of {k} samples does not divide a rank's {per_rank}")
        share = order[:need].reshape(-1, k)[rank::ranks].reshape(-1)
    else:
        share = order[rank * per_rank:(rank + 1) * per_rank]
    return (permute_blocks(permute, share, shuffle_block) if own else share).reshape(steps,
                                                                                  batch)


def window_share(num_samples, ranks, rank, epoch, seed, window):
    """A rank's samples in an epoch when the samples are shuffled within consecutive windows
    of ``window`` samples (which ranks divides, and which divides num_samples): one seeded
    permutation of a window's positions, its ranks-th parts dealt to the ranks in turn, the
    same positions in every window, the windows in order (IOR's -z on a shared file of
    several segments)."""
    per = window // ranks
    perm = np.random.default_rng([seed, epoch, 3]).permutation(window).astype(np.int64)
    mine = perm[rank * per:(rank + 1) * per]
    starts = np.arange(num_samples // window, dtype=np.int64) * window
    return (starts[:, None] + mine[None, :]).reshape(-1)


def locate(samples, samples_per_file, record_bytes):
    """(file index, byte offset) of each sample of a raw dataset."""
    samples = np.asarray(samples, dtype=np.int64)
    return samples // samples_per_file, (samples % samples_per_file) * record_bytes
