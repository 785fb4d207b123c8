"""What a checkpoint holds: its size, each rank's share and the bytes themselves. Pure
functions, no I/O, no MPI (the writers and readers are in checkpoint.writer, the bytes in
checkpoint.content).

Rank layout
-----------
A job of ``world = TP * PP * DP`` ranks is laid out with tensor parallelism fastest, then
pipeline stages, then data-parallel replicas (the order the DLIO benchmark and Megatron-style
launchers use, so a tensor-parallel group sits on one node)::

    rank = t + TP * (p + PP * d)        t = rank % TP
                                        p = (rank // TP) % PP
                                        d = rank // (TP * PP)

The model-parallel ranks of replica 0 (``d == 0``) are therefore ranks ``0 .. TP*PP-1``.

Two ways to size a checkpoint
-----------------------------
``FlatCheckpoint``: a model of ``model_bytes`` plus optimizer state of
``round(model_bytes * optimizer_multiplier)`` bytes, split as evenly as bytes allow over the
writers chosen by a policy (``"rank0"``, ``"all"``, ``"model_parallel"``). This is how the DLIO
benchmark sizes CNN checkpoints (unet3d, bert: the model only, rank 0 writes).

``TransformerCheckpoint``: from a decoder-only (Llama-style) transformer's dimensions, a
parallel layout and a ZeRO stage. See its docstring for the formula.

Content (dlio_mpi.checkpoint.content)
-------------------------------------
Byte x of writer w's share in checkpoint i is ``tile(i, w)[x % 1 MiB]`` (seeded random bytes),
except that every 4 KiB page p of the share starts with 16 stamp bytes: p and ``i << 32 | w``
as little-endian uint64. It depends on the position in the share only, not on the file layout,
so every format holds the same bytes, any read verifies, and no two pages are alike.
"""
from dataclasses import dataclass

GIB = 1 << 30
TILE, PAGE, STAMP = 1 << 20, 4096, 16
WRITER_POLICIES = ("rank0", "all", "model_parallel", "strided")


def split(total, parts, i):
    """Part i of total divided over parts as evenly as integers allow (the first total % parts
    parts get one more); the parts sum to total exactly."""
    if parts <= 0 or not 0 <= i < parts:
        raise ValueError(f"part {i} of {parts}")
    return total // parts + (1 if i < total % parts else 0)


def _positive(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")


@dataclass(frozen=True)
class Layout:
    """Tensor-, pipeline- and data-parallel degrees; see the module docstring for the rank
    order (TP fastest, then PP, then DP)."""
    tp: int = 1
    pp: int = 1
    dp: int = 1

    def __post_init__(self):
        for k in ("tp", "pp", "dp"):
            _positive(k, getattr(self, k))

    @property
    def world(self):
        return self.tp * self.pp * self.dp

    @property
    def model_parallel(self):
        """Ranks in one data-parallel replica: TP * PP."""
        return self.tp * self.pp

    def coords(self, rank):
        """(t, p, d): the rank's tensor-parallel index, pipeline stage and DP replica."""
        if not 0 <= rank < self.world:
            raise ValueError(f"rank {rank} outside a layout of {self.world} ranks "
                             f"(TP {self.tp} x PP {self.pp} x DP {self.dp})")
        return rank % self.tp, (rank // self.tp) % self.pp, rank // (self.tp * self.pp)

    def rank(self, t, p, d):
        return t + self.tp * (p + self.pp * d)

    @classmethod
    def for_world(cls, world, tp=1, pp=1):
        """The layout with the given TP and PP whose DP fills world ranks."""
        if world % (tp * pp):
            raise ValueError(f"{world} ranks are not a multiple of TP {tp} x PP {pp}")
        return cls(tp, pp, world // (tp * pp))


def writer_ranks(policy, layout, stride=1, first=0):
    """The ranks that write under a policy: "rank0" -> [0]; "all" -> every rank;
    "model_parallel" -> the ranks of data-parallel replica 0, i.e. 0 .. TP*PP-1; "strided" ->
    every stride-th rank from rank first (one rank a node of stride ranks, the first rank of
    each group of stride; a stride of the job's size: rank first alone)."""
    if policy == "rank0":
        return range(1)
    if policy == "all":
        return range(layout.world)
    if policy == "model_parallel":
        return range(layout.model_parallel)
    if policy == "strided":
        _positive("the writers' stride", stride)
        if not isinstance(first, int) or not 0 <= first < layout.world:
            raise ValueError(f"the first writer, rank {first!r}, is not one of the "
                             f"{layout.world} ranks")
        return range(first, layout.world, stride)
    raise ValueError(f"unknown writer policy {policy!r}: use one of {', '.join(WRITER_POLICIES)}")


def is_writer(policy, layout, rank, stride=1, first=0):
    layout.coords(rank)   # range check
    return rank in writer_ranks(policy, layout, stride, first)


class _Sizes:
    """Shared by the two size models: rank_bytes(rank) and total_bytes are defined by each."""
    layout: Layout

    @property
    def world(self):
        """Ranks of the job that writes it."""
        return self.layout.world

    def shares(self):
        """Bytes of every rank, in rank order (O(world): for tests and small jobs)."""
        return [self.rank_bytes(r) for r in range(self.world)]

    def writers(self):
        """Ranks with a non-empty share."""
        return [r for r in range(self.world) if self.rank_bytes(r) > 0]

    def offset(self, rank):
        """Where the rank's share starts in a shared file that holds the shares in rank order."""
        return sum(self.rank_bytes(r) for r in range(rank))


@dataclass(frozen=True)
class FlatCheckpoint(_Sizes):
    """total = model_bytes + round(model_bytes * optimizer_multiplier), split over the writers
    of ``writers`` (a policy of WRITER_POLICIES) in rank order with split(). With
    ``optimizer_writers_policy`` the optimizer state is split over those writers instead and
    the model over ``writers`` alone: data-parallel training that shards its optimizer state
    over every rank while the first replica alone saves the weights (ZeRO stage 1).
    writer_stride, writer_first: the stride and first rank of the "strided" policy (either
    part's)."""
    model_bytes: int
    optimizer_multiplier: float = 0.0
    writers_policy: str = "rank0"
    layout: Layout = Layout()
    optimizer_writers_policy: str = ""
    writer_stride: int = 1
    writer_first: int = 0

    def __post_init__(self):
        if not isinstance(self.model_bytes, int) or self.model_bytes < 0:
            raise ValueError(f"model_bytes must be a non-negative integer, "
                             f"not {self.model_bytes!r}")
        if self.optimizer_multiplier < 0:
            raise ValueError(f"optimizer_multiplier must be >= 0, not {self.optimizer_multiplier}")
        writer_ranks(self.writers_policy, self.layout, self.writer_stride,
                     self.writer_first)   # validates the policy
        if self.optimizer_writers_policy:
            writer_ranks(self.optimizer_writers_policy, self.layout, self.writer_stride,
                         self.writer_first)

    @property
    def optimizer_bytes(self):
        return round(self.model_bytes * self.optimizer_multiplier)

    @property
    def total_bytes(self):
        return self.model_bytes + self.optimizer_bytes

    def _share(self, total, policy, rank):
        w = writer_ranks(policy, self.layout, self.writer_stride, self.writer_first)
        return split(total, len(w), w.index(rank)) if rank in w else 0

    def rank_parts(self, rank):
        """(model bytes, optimizer bytes) the rank writes; without optimizer_writers_policy
        the rank's share of the whole is counted as model bytes."""
        self.layout.coords(rank)
        if not self.optimizer_writers_policy:
            return self._share(self.total_bytes, self.writers_policy, rank), 0
        return (self._share(self.model_bytes, self.writers_policy, rank),
                self._share(self.optimizer_bytes, self.optimizer_writers_policy, rank))

    def rank_bytes(self, rank):
        return sum(self.rank_parts(rank))


@dataclass(frozen=True)
class Transformer:
    """A decoder-only transformer in the Llama style: RMSNorm, grouped-query attention, gated
    (SwiGLU) MLP, no biases.

    Parameters (head_dim = hidden // heads, kv_dim = head_dim * kv_heads)::

        per layer   attention  hidden * (hidden + 2 * kv_dim)    Wq, Wk, Wv
                               + hidden * hidden                 Wo
                    mlp        3 * hidden * ffn                  gate, up, down
                    norms      2 * hidden                        (replicated over TP)
        once        embedding  vocab * hidden
                    lm head    vocab * hidden (0 when tied and PP == 1)
                    final norm hidden                            (replicated over TP)

    Wq and Wo are counted as hidden x hidden, as the DLIO benchmark counts them, also when
    heads * head_dim != hidden (MLPerf Storage's 1T model: 25872 / 192 = 134.75)."""
    hidden: int
    layers: int
    vocab: int
    ffn: int
    heads: int
    kv_heads: int
    tied_embeddings: bool = False

    def __post_init__(self):
        for k in ("hidden", "layers", "vocab", "ffn", "heads", "kv_heads"):
            _positive(k, getattr(self, k))
        if self.kv_heads > self.heads:
            raise ValueError(f"kv_heads {self.kv_heads} > heads {self.heads}")

    @property
    def kv_dim(self):
        return (self.hidden // self.heads) * self.kv_heads

    @property
    def layer_matrix_params(self):
        h = self.hidden
        return h * (h + 2 * self.kv_dim) + h * h + 3 * h * self.ffn

    @property
    def layer_norm_params(self):
        return 2 * self.hidden

    def params(self):
        """Total parameters of the model (each counted once)."""
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return (self.vocab * self.hidden + head + self.hidden
                + self.layers * (self.layer_matrix_params + self.layer_norm_params))


def stage_layers(layers, pp, p):
    """(first layer, number of layers) of pipeline stage p: layers // pp each, the first
    layers % pp stages one more."""
    base, extra = divmod(layers, pp)
    return p * base + min(p, extra), base + (1 if p < extra else 0)


@dataclass(frozen=True)
class TransformerCheckpoint(_Sizes):
    """Bytes of a training checkpoint of a transformer under TP x PP x DP and ZeRO.

    Parameters held by model-parallel rank (t, p), n(t, p):
      stage p holds its layers (stage_layers); stage 0 also the embedding; the last stage the
      lm head (also when tied, if PP > 1: the last stage keeps a copy, as Megatron does) and
      the final norm. The stage's matrix parameters are divided over the TP ranks with split();
      norm weights are replicated on every TP rank (and so saved TP times).

    What each rank (t, p, d) writes, W = weight_bytes (2: bf16/fp16 weights),
    O = optimizer_bytes (12: fp32 Adam = master weights + 2 moments; gradients are not
    checkpointed), s(x) = split(x, DP, d):
      ZeRO 0     d == 0: (W + O) * n        d > 0: nothing   (one replica saves everything)
      ZeRO 1, 2  weights W * n on d == 0 only; optimizer O * s(n) on every rank
      ZeRO 3     weights W * s(n) and optimizer O * s(n) on every rank

    In every stage the total is the same: (W + O) * sum over (t, p) of n(t, p)
    = (W + O) * (params + (TP - 1) * replicated norm parameters)."""
    model: Transformer
    layout: Layout = Layout()
    zero_stage: int = 0
    weight_bytes: int = 2
    optimizer_bytes: int = 12

    def __post_init__(self):
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, not {self.zero_stage!r}")
        if self.weight_bytes < 0 or self.optimizer_bytes < 0:
            raise ValueError("weight_bytes and optimizer_bytes must be >= 0")
        if self.layout.pp > self.model.layers:
            raise ValueError(f"{self.layout.pp} pipeline stages for {self.model.layers} layers")

    def mp_params(self, t, p):
        """n(t, p): parameters held by tensor rank t of pipeline stage p."""
        m, lay = self.model, self.layout
        _, n_layers = stage_layers(m.layers, lay.pp, p)
        matrices = n_layers * m.layer_matrix_params
        norms = n_layers * m.layer_norm_params
        if p == 0:
            matrices += m.vocab * m.hidden
        if p == lay.pp - 1:
            if not m.tied_embeddings or lay.pp > 1:
                matrices += m.vocab * m.hidden
            norms += m.hidden
        return split(matrices, lay.tp, t) + norms

    def rank_parts(self, rank):
        """(weight bytes, optimizer bytes) the rank writes."""
        t, p, d = self.layout.coords(rank)
        n, dp = self.mp_params(t, p), self.layout.dp
        W, O = self.weight_bytes, self.optimizer_bytes
        if self.zero_stage == 0:
            return (W * n, O * n) if d == 0 else (0, 0)
        opt = O * split(n, dp, d)
        if self.zero_stage < 3:
            return (W * n if d == 0 else 0), opt
        return W * split(n, dp, d), opt

    def rank_bytes(self, rank):
        w, o = self.rank_parts(rank)
        return w + o

    @property
    def total_bytes(self):
        lay = self.layout
        held = sum(self.mp_params(t, p) for p in range(lay.pp) for t in range(lay.tp))
        return (self.weight_bytes + self.optimizer_bytes) * held


@dataclass(frozen=True)
class SubsetCheckpoint(_Sizes):
    """The shares of the first ``ranks`` ranks of a whole checkpoint (``full``): a job of that
    many ranks, on one host, plays ranks 0 .. ranks-1 of the whole layout and writes their
    shares only, a fraction ranks / (TP x PP x DP) of the ranks (MLPerf Storage's ``subset``
    mode for node-local storage)."""
    full: _Sizes
    ranks: int

    def __post_init__(self):
        _positive("ranks", self.ranks)
        if self.ranks > self.full.layout.world:
            lay = self.full.layout
            raise ValueError(f"a subset of {self.ranks} ranks of a layout of {lay.world} "
                             f"(TP {lay.tp} x PP {lay.pp} x DP {lay.dp})")

    @property
    def layout(self):
        return self.full.layout

    @property
    def world(self):
        return self.ranks

    def rank_parts(self, rank):
        if not 0 <= rank < self.ranks:
            raise ValueError(f"rank {rank} outside a subset of {self.ranks} ranks")
        return self.full.rank_parts(rank)

    def rank_bytes(self, rank):
        return sum(self.rank_parts(rank))

    @property
    def total_bytes(self):
        return sum(self.full.rank_bytes(r) for r in range(self.ranks))


# MLPerf Storage v2 checkpointing models (Submission_guidelines.md, Table 2): dimensions,
# TP x PP x DP and ZeRO stage. Note the 70B row gives 128 attention heads where Meta's
# Llama 3 70B has 64 (head dim 128); we keep the benchmark's value so that the sizes match
# (with 64 heads the 70B checkpoint is 919.9 GiB instead of 911.2 GiB).
LLAMA3 = {
    "llama3_8b": (Transformer(4096, 32, 128256, 14336, 32, 8), Layout(1, 1, 8), 3),
    "llama3_70b": (Transformer(8192, 80, 128256, 28672, 128, 8), Layout(8, 1, 8), 3),
    "llama3_405b": (Transformer(16384, 126, 128256, 53248, 128, 8), Layout(8, 32, 2), 1),
    "llama3_1t": (Transformer(25872, 128, 128256, 98304, 192, 32), Layout(8, 64, 2), 1),
}

# The checkpoint sizes MLPerf Storage publishes for them, in GiB ("105 GB", "912 GB",
# "5.29 TB", "18 TB": its GB are 2**30 bytes, its TB 1000 of those).
MLPERF_STORAGE_GIB = {"llama3_8b": 105, "llama3_70b": 912, "llama3_405b": 5290,
                      "llama3_1t": 18000}

# Whole-model checkpoints written by rank 0 (the DLIO benchmark's workload files).
FLAT = {"bert": 4_034_713_312, "unet3d": 499_153_191}

PRESETS = tuple(LLAMA3) + tuple(FLAT)


def preset(name, layout=None, zero_stage=None):
    """A named checkpoint size: llama3_8b, llama3_70b, llama3_405b, llama3_1t (their MLPerf
    Storage layout and ZeRO stage unless given) or bert, unet3d (model only, rank 0 writes;
    layout only sets the world size)."""
    if name in LLAMA3:
        model, lay, zero = LLAMA3[name]
        return TransformerCheckpoint(model, layout or lay,
                                     zero if zero_stage is None else zero_stage)
    if name in FLAT:
        return FlatCheckpoint(FLAT[name], 0.0, "rank0", layout or Layout())
    raise ValueError(f"unknown checkpoint preset {name!r}: use one of {', '.join(PRESETS)}")
