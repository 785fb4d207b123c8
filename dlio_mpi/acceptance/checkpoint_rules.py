"""MLPerf Storage's rules for checkpointing, as figures: the llama3 models and their TP x PP x
DP, the process counts a CLOSED or OPEN result may use in each mode, the checkpoints written
and read, and the one parameter a CLOSED submission may change."""
from dataclasses import dataclass

from dlio_mpi.acceptance.rules import AcceptanceError
from dlio_mpi.checkpoint.size import LLAMA3

MODES = ("default", "subset")
# checkpoints written, then read back, in a CLOSED result
CHECKPOINTS = 10
# subset mode: the processes of the one host (mlpstorage's LLM_SUBSET_PROCS)
SUBSET_PROCESSES = 8
# every host runs at least this many processes (the guidelines' --ppn, "minimal 4")
MIN_PROCESSES_PER_HOST = 4
# the parameters a CLOSED checkpointing submission may change (Table 3)
CLOSED_PARAMETERS = frozenset({"checkpoint.checkpoint_folder"})


@dataclass(frozen=True)
class Model:
    name: str
    tp: int
    pp: int
    dp: int
    zero_stage: int

    @property
    def model_parallel(self):
        return self.tp * self.pp

    @property
    def processes(self):
        """TP x PP x DP: the process count of a CLOSED default-mode result."""
        return self.tp * self.pp * self.dp

    def parallelism(self):
        return f"TP {self.tp} x PP {self.pp} x DP {self.dp}"


MODELS = {name: Model(name, lay.tp, lay.pp, lay.dp, zero)
          for name, (_, lay, zero) in LLAMA3.items()}


def model(name):
    """The model by this project's name (llama3_8b) or mlpstorage's (llama3-8b)."""
    key = name.replace("-", "_")
    try:
        return MODELS[key]
    except KeyError:
        raise AcceptanceError(
            f"model {name!r}: MLPerf Storage's checkpointing rules define "
            f"{', '.join(MODELS)}") from None


def check_fit(m, mode, processes, hosts):
    """AcceptanceError when the job cannot run the model in mode: default, a multiple of
    TP x PP processes; subset, every process on one host and no more than the model's
    TP x PP x DP."""
    if mode not in MODES:
        raise AcceptanceError(f"--mode {mode!r}: use one of {', '.join(MODES)}")
    if mode == "default" and processes % m.model_parallel:
        raise AcceptanceError(
            f"{processes} processes do not fit {m.name}'s parallelism ({m.parallelism()}): "
            f"default mode runs a multiple of TP x PP = {m.model_parallel} processes "
            f"({m.processes} for a CLOSED result)")
    if mode == "subset":
        if hosts != 1:
            raise AcceptanceError(
                f"subset mode runs on one host; these {processes} processes are on {hosts} "
                "hosts")
        if processes > m.processes:
            raise AcceptanceError(
                f"{processes} processes do not fit {m.name}'s parallelism ({m.parallelism()}): "
                f"subset mode plays at most its {m.processes} processes")


def closed_processes(m, mode):
    return m.processes if mode == "default" else SUBSET_PROCESSES

