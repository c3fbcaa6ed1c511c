"""The options of ``doors-gym tune``: one worker's study, its storage and its tracking (:class:`TuneOptions`)."""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re
from typing import ClassVar

from doors_gym.levels import LEVEL_NAMES, STUDY

from ..arms import ARMS, get_arm
from ..config import check_at_least, field
from ..config.options import TrackingOptions
from ..experiments.executors import DASK, EXECUTORS, LOCAL, ExecutorOptions
from .objective import TUNING_SEEDS
from .scores import DEFAULT_OBJECTIVE, OBJECTIVES, PENALTY_SECONDS
from .study import DEFAULT_STORAGE, GRACE_PERIOD, HEARTBEAT_INTERVAL

DEFAULT_EXPERIMENT = "doors-gym-tune"
DEFAULT_TRIALS_PER_PROGRAM = 8
"""Trials per program of an arm that trains seeds together: the fastest 40-trial study on the 2-core CPU
(``benchmarks/results/tuning/programs.md``)."""
STUDY_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclasses.dataclass(frozen=True)
class TuneOptions(TrackingOptions):
    """Settings of one tuning worker: the study, its storage and its tracking (the ``doors-gym tune`` flags).

    The trials' own run settings (budget, evaluation cadence, seed, layout) are a
    :class:`~doors_gym_baselines.config.RunSettings`; ``--seed`` also seeds the sampler.
    """

    EXPERIMENT: ClassVar[str] = DEFAULT_EXPERIMENT
    arm: str = field("flax-scan", "which arm to tune", choices=tuple(ARMS), cli=False)
    level: str = field(STUDY, "the level the trials train at (the layout flags' --level)", cli=False)
    objective: str = field(
        DEFAULT_OBJECTIVE,
        "what the study optimises: seconds to a solved agent (minimised) or the area under the greedy learning curve",
        choices=tuple(OBJECTIVES),
    )
    n_trials: int = field(40, "finished (complete or pruned) trials the study should end with")
    timeout: float | None = field(None, "stop starting trials after this many seconds")
    worker: int = field(0, "this worker's index when several share a study (keeps their samplers apart)")
    workers: int | None = field(
        None,
        "local: worker processes this command starts on the study (default 1), each with its share of the cores and "
        "an index of its own from --worker on, a worker that dies replaced; dask: the local cluster's worker processes "
        "(default: one per core)",
    )
    executor: str = field(
        LOCAL,
        "where the trials train: local (in this command's processes) or dask (each program of trials a task on a Dask "
        "cluster, asked and logged by this command; the dask extra)",
        choices=EXECUTORS,
    )
    address: str | None = field(
        None, "dask: the address of a running scheduler (tcp://HOST:8786) instead of a local cluster"
    )
    report: bool = field(
        True, "plots, confirmation, preset and summary after the trials (off in the workers --workers starts)", cli=False
    )
    storage: str = field(
        DEFAULT_STORAGE, "Optuna RDB storage, any SQLAlchemy URL (PostgreSQL for workers on many hosts)"
    )
    study_name: str | None = field(None, "the study (default: dqn-<arm>-<objective>, -<level> after it at a level)")
    tuning_seeds: int = field(TUNING_SEEDS, "trial n trains seed --seed + n % tuning_seeds (the tuning seeds in turn)")
    penalty_seconds: float = field(
        PENALTY_SECONDS, "time-to-solved: an unsolved trial scores its wall seconds plus 1 to 2 times this"
    )
    start_from: str | None = field(
        None,
        "a preset (name or file): a new study tries its hyperparameters first (a known-good point) and takes the "
        "settings its space does not search from it ('': none, the arm's defaults; default: quick, or a plug-in "
        "arm's own tuned preset)",
    )
    trials_per_program: int | None = field(
        None,
        f"trials trained together as the lanes of one compiled program (default: {DEFAULT_TRIALS_PER_PROGRAM} for "
        "an arm that trains seeds together in one jitted program, 1 for the others)",
    )
    gather_lanes: bool = field(
        True, "with --trials-per-program > 1: move the live lanes into a smaller program when that saves time"
    )
    confirm_top: int = field(
        0, "re-train the best N complete trials on --confirm-seeds more tuning seeds; the preset is the best on average"
    )
    confirm_seeds: int = field(3, "tuning seeds each confirmed trial trains besides its own")
    preset_out: str | None = field(None, "write the best trial as a preset file here (YAML; see compare --preset)")
    summary_out: str | None = field(
        None, "write the study's summary to this folder: best trial, importances, history and importance plots"
    )
    models: bool = field(True, "log each trial's trained model to MLflow")
    verbose: bool = field(True, "print each finished trial: its score and hyperparameters")
    heartbeat_interval: int = field(HEARTBEAT_INTERVAL, "seconds between a running trial's heartbeats")
    grace_period: int = field(
        GRACE_PERIOD, "seconds without a heartbeat after which a running trial counts as failed (its worker died)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        get_arm(self.arm)
        if self.level not in LEVEL_NAMES:
            raise ValueError(f"level={self.level!r} is unknown: expected one of {list(LEVEL_NAMES)}")
        for name in ("n_trials", "heartbeat_interval", "grace_period", "tuning_seeds"):
            check_at_least(name, getattr(self, name), 1)
        if self.trials_per_program is not None:
            check_at_least("trials_per_program", self.trials_per_program, 1)
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r} is not supported: expected one of {list(OBJECTIVES)}")
        penalty = self.penalty_seconds
        if isinstance(penalty, bool) or not (
            isinstance(penalty, (int, float)) and math.isfinite(penalty) and penalty >= 0
        ):
            raise ValueError(f"penalty_seconds={penalty!r} is out of range: expected a finite number >= 0")
        check_at_least("worker", self.worker, 0)
        if self.workers is not None:
            check_at_least("workers", self.workers, 1)
        # the rules compare and ladder apply (--address needs dask, not with --workers, a tcp:// address)
        ExecutorOptions(self.executor, self.workers if self.executor == DASK else None, self.address)
        start = self.resolved_start_from
        if start and start not in self.start_names and not pathlib.Path(start).is_file():
            raise ValueError(f"start_from={start!r} is neither one of {list(self.start_names)} nor a file")
        check_at_least("confirm_top", self.confirm_top, 0)
        check_at_least("confirm_seeds", self.confirm_seeds, 1)
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout={self.timeout!r} is out of range: expected a number of seconds > 0")
        if not STUDY_NAME_PATTERN.match(self.resolved_study_name):
            raise ValueError(
                f"study_name={self.resolved_study_name!r} is invalid: "
                "expected 1-128 letters, digits, '_', '.', ':', '-'"
            )

    @property
    def processes(self) -> int:
        """The worker processes this command starts on the study with ``executor='local'`` (``workers``, else 1)."""
        return self.workers or 1

    @property
    def lanes(self) -> int:
        """Trials per program: ``trials_per_program``, else the default for the arm (:data:`DEFAULT_TRIALS_PER_PROGRAM`
        where it trains seeds together in one jitted program, 1 elsewhere)."""
        if self.trials_per_program is not None:
            return self.trials_per_program
        arm = get_arm(self.arm)
        return DEFAULT_TRIALS_PER_PROGRAM if arm.seeds_in_one_run and arm.steps_pure_functions else 1

    @property
    def start_names(self) -> tuple[str, ...]:
        """The preset names a study of this arm can start from: a plug-in's own, and the built-in ones where the arm
        takes DQN's hyperparameters."""
        from ..config import Hyperparameters
        from ..presets import NAMES, hyperparameters_of, own_presets

        own = tuple(own_presets(self.arm))
        return (*own, *NAMES) if hyperparameters_of(self.arm) is Hyperparameters else own

    @property
    def resolved_start_from(self) -> str:
        """The preset the study starts from (``""``: none): ``start_from``, else ``quick`` where the arm takes DQN's
        hyperparameters, else the arm's own ``tuned`` preset if it has one (the built-in presets are DQN's
        settings, which a plug-in's own dataclass does not take). At another level a DQN arm starts from the level's
        shared preset; a plug-in from its ``tuned`` one (its ``shared`` reads the ``cells``, blind to drawn doors)."""
        from ..config import Hyperparameters
        from ..presets import hyperparameters_of

        if self.start_from is not None:
            return self.start_from
        names = self.start_names
        if self.level != STUDY and "shared" in names and hyperparameters_of(self.arm) is Hyperparameters:
            return "shared"  # the level's shared preset (presets.preset_at)
        return "quick" if "quick" in names else ("tuned" if "tuned" in names else "")

    @property
    def resolved_study_name(self) -> str:
        if self.study_name:
            return self.study_name
        return f"dqn-{self.arm}-{self.objective}" + ("" if self.level == STUDY else f"-{self.level}")
