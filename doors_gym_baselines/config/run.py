"""The run settings every training shares, whatever its arm: what to run and how (the task: env and layout; the
budget, the seeds, the evaluation cadence; and the machinery: vectorization, device, progress, caches).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from doors_gym import core
from doors_gym.core import DoorsParams

from .fields import check_at_least, check_choices, field, field_names

ENV_IDS = ("Doors-v0", "DoorsJax-v0")
"""The arms' backends, by the study level's ids; a run at another level steps that backend's id of its level
(:func:`~.layouts.level_env_id`)."""
DOOR_MODES = core.DOOR_MODES
VECTORIZATIONS = ("native", "sync", "async")
RUN_FIELDS_OFF_THE_OUTCOME = ("quiet", "jax_cache", "checkpoint")
"""Run settings that change how a run shows, compiles or saves itself, never what it learns (out of
:meth:`~.training.Config.outcome_key`)."""


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What to run and how: the task, the budget, the seeds, the evaluation, and the machinery."""

    env_id: str = field("Doors-v0", "the env the arm steps (set from the arm)", choices=ENV_IDS, cli=False)
    grid_size: tuple[int, int] = field(core.DEFAULT_GRID_SIZE, "grid height and width", layout=True)
    n_doors: int | None = field(None, "number of doors, 1..W (default: 3)", layout=True)
    door_cols: tuple[int, ...] | None = field(None, "explicit door columns in [0, W)", layout=True)
    max_episode_steps: int = field(core.DEFAULT_MAX_EPISODE_STEPS, "time limit per episode", layout=True)
    n_walls: int = field(core.DEFAULT_N_WALLS, "number of walls (a level's layout)", layout=True)
    doors: str = field("fixed", "fixed doors, or drawn per episode (a level's layout)", layout=True, choices=DOOR_MODES)
    total_steps: int = field(300_000, "env steps of training, summed over the vector envs")
    seed: int = field(1, "seed of the run (networks, env starts, exploration, replay sampling)")
    num_seeds: int = field(1, "seeds from --seed trained together in one run (arms that train seeds in one vmap)")
    eval_every: int = field(50_000, "env steps between greedy evaluations (0: only at the end)")
    rolling_episodes: int = field(2000, "training episodes in the rolling reward (the study's 2000)")
    stop_when_solved: bool = field(
        False,
        "end training once solved (greedy success >= 99 %, rolling reward >= 0.75) at every evaluation "
        "of the last --hold-out-steps env steps",
    )
    hold_out_steps: int = field(
        0, "env steps a run must stay solved, at every evaluation, to count as solved (0: solved at one evaluation)"
    )
    devices: int | None = field(
        None, "devices the seeds of one run spread over (default: one per core, or GPU, up to the seeds)"
    )
    profile: bool = field(True, "time the phases of the fully jitted arm apart after training (a few seconds)")
    vectorization: str = field(
        "native", "Doors-v0 vector env: native NumPy, or Gymnasium's sync or async", choices=VECTORIZATIONS
    )
    device: str = field("cpu", "torch device of the torch arms (cpu, cuda, cuda:1, ...)")
    torch_threads: int | None = field(
        None, "torch's intra-op threads during a torch arm's run, put back after (default: 1 on a CPU)"
    )
    jax_cache: str | None = field(
        None,
        "folder of JAX's persistent compilation cache: a later run loads the JAX arms' compiled programs "
        "instead of compiling them again (default: $DOORS_GYM_JAX_CACHE, else off)",
    )
    quiet: bool = field(False, "no progress: no bar at a terminal, no lines in a log")
    checkpoint: str | None = field(
        None,
        "file a resumable arm (flax-scan) saves its training state to at a segment's end, once a minute at "
        "most; a run started again with the same config goes on from it, and it is removed at the end",
    )

    def __post_init__(self) -> None:
        check_choices(self)
        for name in ("total_steps", "num_seeds", "rolling_episodes", "max_episode_steps"):
            check_at_least(name, getattr(self, name), 1)
        check_at_least("seed", self.seed, 0)
        for name in ("devices", "torch_threads"):
            if getattr(self, name) is not None:
                check_at_least(name, getattr(self, name), 1)
        check_at_least("eval_every", self.eval_every, 0)
        check_at_least("hold_out_steps", self.hold_out_steps, 0)
        self.params  # validates the layout

    @property
    def env_keywords(self) -> dict[str, Any]:
        """The layout keywords of ``gym.make`` / ``gym.make_vec`` for this layout (``n_walls`` and ``doors`` only
        off ``Doors-v0``'s one wall of fixed doors, so its call is the study's own)."""
        keywords: dict[str, Any] = {
            "grid_size": tuple(self.grid_size),
            "n_doors": self.n_doors,
            "door_cols": self.door_cols,
            "max_episode_steps": self.max_episode_steps,
        }
        if self.n_walls != core.DEFAULT_N_WALLS or self.doors != "fixed":
            keywords.update(n_walls=self.n_walls, doors=self.doors)
        return keywords

    @property
    def params(self) -> DoorsParams:
        """The env layout and time limit."""
        return DoorsParams(
            grid_size=tuple(self.grid_size),
            n_doors=self.n_doors,
            door_cols=None if self.door_cols is None else tuple(self.door_cols),
            max_episode_steps=self.max_episode_steps,
            n_walls=self.n_walls,
            doors=self.doors,
        )


RUN_NAMES = field_names(RunSettings)
"""The run settings' names (no arm's hyperparameter may take one)."""
LAYOUT_NAMES = tuple(spec.name for spec in dataclasses.fields(RunSettings) if spec.metadata.get("layout"))
"""The run settings of the layout and its time limit (the layout and level flags set them)."""
