"""The sharding plan as pure functions: coverage (every sample at most once per epoch, all of
them when nothing is dropped), balance (equal steps on every rank), shuffling per epoch."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlio_mpi.data import sampler


def dropped_per_epoch(n, ranks, batch, remainder="drop"):
    """Samples not read in an epoch (0 when the remainder is padded)."""
    return max(0, sampler.unread_per_epoch(n, ranks, batch, remainder, "multi", "on_demand"))


def padded_per_epoch(n, ranks, batch, remainder="drop"):
    """Samples read a second time in an epoch to fill the last step (io.remainder=pad)."""
    return max(0, -sampler.unread_per_epoch(n, ranks, batch, remainder, "multi", "on_demand"))


def all_ranks(n, ranks, batch, epoch=0, **kw):
    return [sampler.rank_samples(n, ranks, r, batch, epoch, 7, True, **kw) for r in range(ranks)]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 500), ranks=st.integers(1, 40), batch=st.integers(1, 9),
       epoch=st.integers(0, 3))
def test_drop_covers_each_sample_at_most_once_with_equal_steps(n, ranks, batch, epoch):
    plans = all_ranks(n, ranks, batch, epoch)
    steps = sampler.steps_per_epoch(n, ranks, batch)
    assert all(p.shape == (steps, batch) for p in plans)
    seen = np.concatenate([p.reshape(-1) for p in plans])
    assert np.unique(seen).size == seen.size
    assert seen.size + dropped_per_epoch(n, ranks, batch) == n
    assert ((seen >= 0) & (seen < n)).all()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 500), ranks=st.integers(1, 40), batch=st.integers(1, 9))
def test_pad_covers_every_sample(n, ranks, batch):
    plans = all_ranks(n, ranks, batch, remainder="pad")
    seen = np.concatenate([p.reshape(-1) for p in plans])
    assert set(seen.tolist()) == set(range(n))
    assert len({p.shape for p in plans}) == 1
    assert dropped_per_epoch(n, ranks, batch, "pad") == 0
    assert seen.size - padded_per_epoch(n, ranks, batch, "pad") == n


def test_order_changes_per_epoch_and_is_reproducible():
    a = sampler.epoch_order(1000, 0, 1, True)
    b = sampler.epoch_order(1000, 1, 1, True)
    assert not np.array_equal(a, b)
    assert np.array_equal(a, sampler.epoch_order(1000, 0, 1, True))
    assert np.array_equal(np.sort(a), np.arange(1000))
    assert np.array_equal(sampler.epoch_order(10, 3, 1, False), np.arange(10))


@pytest.mark.parametrize("ranks", [1024, 65536])
def test_a_million_samples_at_scale(ranks):
    n, batch = 1_000_000, 4
    steps = sampler.steps_per_epoch(n, ranks, batch)
    order = sampler.epoch_order(n, 0, 3, True)
    # every rank's share is a disjoint slice of one permutation: check a spread of ranks
    taken = np.zeros(n, dtype=bool)
    for r in list(range(0, ranks, max(1, ranks // 64))) + [ranks - 1]:
        p = sampler.rank_samples(n, ranks, r, batch, 0, 3, True)
        assert p.shape == (steps, batch)
        assert np.array_equal(p.reshape(-1), order[r * steps * batch:(r + 1) * steps * batch])
        assert not taken[p.reshape(-1)].any()
        taken[p.reshape(-1)] = True
    assert dropped_per_epoch(n, ranks, batch) == n - steps * batch * ranks


@pytest.mark.parametrize("ranks", [1024, 65536])
def test_a_million_files_shuffled_by_file_at_scale(ranks):
    """A million files of 2 samples, files shuffled (each file's samples together): one
    permutation of the files, and every rank's share a disjoint slice of it with the same
    number of steps."""
    import tracemalloc

    files, spf, batch = 1_000_000, 2, 2
    n = files * spf
    order = sampler.epoch_order(n, 1, 9, False, samples_per_file=spf, file_shuffle=True)
    assert np.array_equal(np.sort(order), np.arange(n))
    assert np.array_equal(order[1::2], order[0::2] + 1)        # a file's samples in order
    assert not np.array_equal(order, np.arange(n))
    steps = sampler.steps_per_epoch(n, ranks, batch)
    taken = np.zeros(n, dtype=bool)
    for r in list(range(0, ranks, max(1, ranks // 32))) + [ranks - 1]:
        tracemalloc.start()
        p = sampler.rank_samples(n, ranks, r, batch, 1, 9, False, samples_per_file=spf,
                                 file_shuffle=True)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak <= 4 * 8 * n                                # a few arrays of the order
        assert p.shape == (steps, batch)
        assert np.array_equal(p.reshape(-1), order[r * steps * batch:(r + 1) * steps * batch])
        assert not taken[p.reshape(-1)].any()
        taken[p.reshape(-1)] = True
    assert dropped_per_epoch(n, ranks, batch) == n - steps * batch * ranks


def test_memory_share_and_replicated():
    shares = [sampler.memory_share(10, 3, r, "shared") for r in range(3)]
    assert np.array_equal(np.concatenate(shares), np.arange(10))
    assert np.array_equal(sampler.memory_share(10, 3, 2, "replicated"), np.arange(10))
    plans = [sampler.rank_samples(10, 3, r, 2, 0, 1, True, read_type="memory") for r in range(3)]
    assert all(p.shape == (1, 2) for p in plans)
    for r, p in enumerate(plans):
        assert set(p.reshape(-1).tolist()) <= set(shares[r].tolist())
    rep = sampler.rank_samples(10, 3, 1, 3, 0, 1, True, layout="replicated")
    assert rep.shape == (3, 3) and np.unique(rep).size == 9


def test_file_shuffle_keeps_samples_of_a_file_together():
    order = sampler.epoch_order(40, 0, 5, False, samples_per_file=4, file_shuffle=True)
    assert sorted(order.tolist()) == list(range(40))
    blocks = order.reshape(10, 4)
    assert (np.diff(blocks, axis=1) == 1).all()            # in order within a file
    assert (blocks[:, 0] % 4 == 0).all()
    assert not np.array_equal(blocks[:, 0], np.arange(0, 40, 4))   # files permuted
    other = sampler.epoch_order(40, 1, 5, False, samples_per_file=4, file_shuffle=True)
    assert not np.array_equal(order, other)


def test_plan_memory_per_rank_does_not_grow_with_ranks():
    """A rank's plan costs one permutation of the samples (8 bytes each) at most, whatever the
    rank count: measured with tracemalloc for a million samples."""
    import tracemalloc

    n = 1_000_000
    peaks = {}
    for ranks in (1024, 65536):
        tracemalloc.start()
        sampler.rank_samples(n, ranks, ranks - 1, 2, 3, 7, True)
        peaks[ranks] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks[65536] <= 3 * 8 * n
    assert abs(peaks[65536] - peaks[1024]) <= 0.1 * peaks[1024]


def test_round_robin_sharding_interleaves_ranks():
    """reader.sharding=round_robin: rank r takes samples r, r+R, ... of the order: every
    sample once, the ranks' samples interleaved (IOR's segments)."""
    plans = [sampler.rank_samples(16, 2, r, 2, 0, 1, False, sharding="round_robin")
             for r in range(2)]
    assert plans[0].reshape(-1).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert plans[1].reshape(-1).tolist() == [1, 3, 5, 7, 9, 11, 13, 15]
    shuffled = [sampler.rank_samples(20, 3, r, 2, 1, 7, True, sharding="round_robin")
                for r in range(3)]
    got = np.concatenate([p.reshape(-1) for p in shuffled])
    assert len(set(got.tolist())) == len(got) == 18      # 3 steps of 2 per rank, no repeats


def test_block_cyclic_sharding_deals_runs_of_samples():
    """reader.sharding_block k: rank r takes the r-th, (r+R)-th, ... runs of k samples of the
    order (IOR's segments of blocks of k transfers): every sample once an epoch, each rank's
    in whole runs; k must divide a rank's samples."""
    plans = [sampler.rank_samples(40, 5, r, 1, 0, 1, False, sharding="round_robin",
                                  sharding_block=4).reshape(-1) for r in range(5)]
    assert plans[1].tolist() == [4, 5, 6, 7, 24, 25, 26, 27]
    assert sorted(np.concatenate(plans).tolist()) == list(range(40))
    shuffled = [sampler.rank_samples(48, 3, r, 4, 2, 7, True, sharding="round_robin",
                                     sharding_block=2).reshape(-1) for r in range(3)]
    got = np.concatenate(shuffled)
    assert sorted(got.tolist()) == list(range(48))
    order = sampler.epoch_order(48, 2, 7, True)
    assert shuffled[2][:4].tolist() == order[[4, 5, 10, 11]].tolist()
    with pytest.raises(ValueError, match="block of 3"):
        sampler.rank_samples(40, 5, 0, 2, 0, 1, False, sharding="round_robin",
                             sharding_block=3)


def test_rank_scope_shuffles_each_ranks_own_share():
    """reader.shuffle_scope=rank: a rank keeps the share it would read in order (its block,
    the same every epoch) and reads it in an order of its own, new each epoch (IOR's -z)."""
    def plan(r, epoch):
        return sampler.rank_samples(64, 2, r, 4, epoch, 7, True,
                                    shuffle_scope="rank").reshape(-1)
    for r in range(2):
        block = list(range(32 * r, 32 * (r + 1)))
        first, second = plan(r, 0), plan(r, 1)
        assert sorted(first.tolist()) == sorted(second.tolist()) == block
        assert first.tolist() != block and first.tolist() != second.tolist()
    assert plan(0, 0).tolist() == plan(0, 0).tolist()
    unshuffled = sampler.rank_samples(64, 2, 1, 4, 0, 7, False, shuffle_scope="rank")
    assert unshuffled.reshape(-1).tolist() == list(range(32, 64))


@pytest.mark.parametrize("scope", ["global", "rank"])
def test_a_shuffle_of_blocks_keeps_each_blocks_samples_in_order(scope):
    """reader.shuffle_block k: the runs of k consecutive samples are shuffled, each run's
    samples in order (a loader reading a batch as one slice ds[i:i + k] at shuffled i):
    every sample once an epoch, a new order each epoch, each step's k samples consecutive
    and starting at a multiple of k; k 1 is the shuffle of samples."""
    def plans(epoch, block):
        return [sampler.rank_samples(256, 4, r, 16, epoch, 7, True, shuffle_scope=scope,
                                     shuffle_block=block) for r in range(4)]
    for epoch in (0, 1):
        got = plans(epoch, 16)
        flat = np.concatenate([p.reshape(-1) for p in got])
        assert sorted(flat.tolist()) == list(range(256))
        for p in got:
            assert (np.diff(p, axis=1) == 1).all() and (p[:, 0] % 16 == 0).all()
        if scope == "rank":         # each rank keeps its own quarter
            assert [(p.min(), p.max()) for p in got] == [(64 * r, 64 * r + 63)
                                                          for r in range(4)]
    starts = [np.concatenate([p[:, 0] for p in plans(e, 16)]).tolist() for e in (0, 1)]
    assert starts[0] != starts[1] and starts[0] != sorted(starts[0])
    samples = [sampler.rank_samples(256, 4, r, 16, 0, 7, True, shuffle_scope=scope)
               for r in range(4)]
    assert all(np.array_equal(a, b) for a, b in zip(plans(0, 1), samples))
    # a block that does not divide the samples: the last run shorter, every sample once
    odd = sampler.epoch_order(50, 0, 3, True, shuffle_block=16)
    assert sorted(odd.tolist()) == list(range(50))


@pytest.mark.parametrize("ranks,window,windows", [(4, 32, 8), (3, 12, 5), (1, 8, 4)])
def test_a_shuffle_within_windows(ranks, window, windows):
    """reader.shuffle_window: every sample once an epoch; a rank's samples window by window in
    order, the same positions in the same (shuffled) order in each; each window dealt whole
    to the ranks; another epoch, another draw."""
    n = window * windows
    seen = []
    lists = []
    for r in range(ranks):
        plan = sampler.rank_samples(n, ranks, r, 1, 0, 7, True, shuffle_window=window).ravel()
        assert len(plan) == n // ranks
        parts = plan.reshape(windows, -1)
        assert (parts // window == np.arange(windows)[:, None]).all()
        inside = parts % window
        assert (inside == inside[0]).all()
        lists.append(inside[0])
        seen += plan.tolist()
    assert sorted(seen) == list(range(n))
    assert any((np.diff(x) < 0).any() for x in lists)           # shuffled, not ascending
    other = sampler.rank_samples(n, ranks, 0, 1, 1, 7, True, shuffle_window=window).ravel()
    assert not np.array_equal(other.reshape(windows, -1)[0] % window, lists[0])
