"""Sharding and shuffling as pure functions: which samples a rank reads in an epoch.

The global order of an epoch is a true permutation of all samples (seeded, changing with the
epoch) or the identity. Rank r takes the r-th contiguous share of steps*batch*ranks samples of
that order, so every rank runs the same number of steps; the remainder (fewer than batch*ranks
samples) is dropped and reported."""
import numpy as np


def steps_per_epoch(num_samples, ranks, batch):
    return num_samples // (ranks * batch)


def dropped_per_epoch(num_samples, ranks, batch):
    return num_samples - steps_per_epoch(num_samples, ranks, batch) * ranks * batch


def epoch_order(num_samples, epoch, seed, shuffle):
    """The global sample order of an epoch."""
    if not shuffle:
        return np.arange(num_samples, dtype=np.int64)
    rng = np.random.default_rng([seed, epoch])
    return rng.permutation(num_samples).astype(np.int64)


def rank_samples(num_samples, ranks, rank, batch, epoch, seed, shuffle):
    """The samples rank reads in epoch, in step order: shape (steps, batch)."""
    steps = steps_per_epoch(num_samples, ranks, batch)
    per_rank = steps * batch
    order = epoch_order(num_samples, epoch, seed, shuffle)
    return order[rank * per_rank:(rank + 1) * per_rank].reshape(steps, batch)


def locate(samples, samples_per_file, record_bytes):
    """(file index, byte offset) of each sample of a raw dataset."""
    samples = np.asarray(samples, dtype=np.int64)
    return samples // samples_per_file, (samples % samples_per_file) * record_bytes
