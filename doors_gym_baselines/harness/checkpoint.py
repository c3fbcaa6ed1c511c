"""A run's training state on disk, so that a run killed part way goes on from its last segment.

A resumable arm (the fully jitted one) writes its state to ``config.run.checkpoint`` at the end of a segment
(once a minute at most) and, started again with the same config, reads it back and trains on from there: the
same program on the same state, so the resumed run learns what the run would have learned uninterrupted. The file is written whole
and then renamed over the last one (a kill while writing leaves the previous one), and removed when the run
ends. It is a pickle (NumPy arrays and the run's own records): read only checkpoints your runs wrote.
Orbax would also save the arrays; a run's state is a few MB of arrays beside Python records of its curve,
which one pickle keeps together without another dependency.
"""

from __future__ import annotations

import os
import pathlib
import pickle
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

FORMAT = 1
"""The layout of a checkpoint's contents; a file of another is not read (the run starts afresh)."""
CHECKPOINT_SUFFIX = ".ckpt"
"""The suffix of checkpoint files that ``compare`` and ``ladder`` put beside their runs' cache files."""


class Checkpoint:
    """The checkpoint file of one run, tied to ``fingerprint`` (what decides the run's outcome and its layout):
    :meth:`load` returns only a state written for the same fingerprint, as ``matches(saved_fingerprint)`` tells
    (equality by default)."""

    def __init__(
        self, path: str | os.PathLike, fingerprint: Any, matches: Callable[[Any], bool] | None = None
    ) -> None:
        self.path = pathlib.Path(path)
        self.fingerprint = fingerprint
        self.matches = matches or (lambda saved: saved == fingerprint)
        self.unwritable = False

    def load(self) -> dict[str, Any] | None:
        """The state saved for this fingerprint, or None (no file, or one that is another run's or unreadable:
        said on stderr, and the run starts afresh and writes over it)."""
        if not self.path.exists():
            return None
        try:
            with self.path.open("rb") as handle:
                saved = pickle.load(handle)  # noqa: S301  # a file this package wrote for the user's own run
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError) as error:
            print(f"checkpoint {self.path} cannot be read ({error!r}): starting afresh", file=sys.stderr, flush=True)
            return None
        if not isinstance(saved, dict) or saved.get("format") != FORMAT or not self.matches(saved.get("fingerprint")):
            print(
                f"checkpoint {self.path} holds another run (another config, layout or format): starting afresh",
                file=sys.stderr,
                flush=True,
            )
            return None
        return saved["state"]

    def save(self, state: dict[str, Any]) -> None:
        """Writes ``state`` (made of NumPy arrays and picklable records) in place of the last one, atomically. A
        folder this process cannot write (a driver's path that a worker on another host lacks) is said on stderr
        once, and the run goes on without saving."""
        if self.unwritable:
            return
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as handle:
                pickle.dump({"format": FORMAT, "fingerprint": self.fingerprint, "state": state}, handle, protocol=5)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, self.path)
        except OSError as error:
            self.unwritable = True
            print(f"checkpoint {self.path} cannot be written ({error!r}): the run goes on without saving",
                  file=sys.stderr, flush=True)  # fmt: skip

    def remove(self) -> None:
        """Deletes the file (the run it resumes has ended)."""
        self.path.unlink(missing_ok=True)


# JAX is imported where it is used: ``compare`` reads this module's suffix, and naming the arms imports no framework.


def is_key(leaf: Any) -> bool:
    """Whether a leaf is an array of typed JAX PRNG keys (saved as their raw data)."""
    import jax

    return jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key)


def tree_to_host(tree: Any) -> list[np.ndarray]:
    """The leaves of a pytree of JAX arrays as NumPy arrays (a typed key array as its key data)."""
    import jax

    return [np.asarray(jax.random.key_data(leaf) if is_key(leaf) else leaf) for leaf in jax.tree.leaves(tree)]


def tree_from_host(saved: list[np.ndarray], like: Any) -> Any:
    """``like``'s pytree with :func:`tree_to_host`'s ``saved`` leaves, each placed as ``like``'s leaf is (its
    sharding) and typed as it is (keys wrapped with its implementation).

    Raises:
        ValueError: when ``saved`` does not fit ``like`` (another number of leaves, or a shape or dtype apart).
    """
    import jax

    leaves, treedef = jax.tree.flatten(like)
    if len(saved) != len(leaves):
        raise ValueError(f"a saved state of {len(saved)} arrays does not fit a runner of {len(leaves)}")
    restored = []
    for index, (value, leaf) in enumerate(zip(saved, leaves)):
        if is_key(leaf):
            value = jax.random.wrap_key_data(value, impl=jax.random.key_impl(leaf))
        if value.shape != leaf.shape or value.dtype != leaf.dtype:
            raise ValueError(
                f"saved array {index} is {value.dtype}{list(value.shape)}: expected {leaf.dtype}{list(leaf.shape)}"
            )
        restored.append(jax.device_put(value, leaf.sharding))
    return jax.tree.unflatten(treedef, restored)
