"""dataset.seed: the generated content's seed apart from train.seed, so that runs with another
shuffle seed read the same dataset; unset (-1), the content follows train.seed as before."""
from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen


def manifest(*overrides):
    return datagen.manifest_for(config.load(("workload=default",) + overrides))


def test_content_seed_fixed_while_train_seed_changes():
    assert manifest("dataset.seed=10", "train.seed=1") == manifest("dataset.seed=10",
                                                                   "train.seed=2")
    assert manifest("dataset.seed=10")["seed"] == 10


def test_unset_follows_train_seed():
    assert manifest("train.seed=1")["seed"] == 1
    assert manifest("train.seed=1") != manifest("train.seed=2")
