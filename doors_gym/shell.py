"""What the Gymnasium shells of both implementations share: rendering, the window, closing and pickling.

``Doors-v0`` / ``DoorsJax-v0`` single envs mix in :class:`SingleEnvShell`, the two
vector envs :class:`VectorEnvShell`; each shell only says how to read its
current grid.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded

from doors_gym import core, pixels, rendering


class Picklable:
    """Pickling for shells whose jitted functions or windows do not pickle."""

    _transient: tuple[str, ...] = ()
    """Attributes dropped by ``__getstate__`` and rebuilt by :meth:`_restore`."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._transient:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._restore()

    def _restore(self) -> None:
        """Rebuilds the transient attributes after unpickling."""


class SingleEnvShell(Picklable):
    """Render modes, the pygame window, ``close`` and pickling of a single Doors env.

    The env sets ``params`` (whose ``colors`` and ``cell_pixels`` draw the
    frames) and implements :meth:`_grid`; a window is never pickled.
    """

    env_id = "Doors-v0"
    _window: rendering.HumanWindow | None = None

    def _check_render_mode(self, render_mode: str | None) -> None:
        """Sets ``render_mode`` after checking its name; ``human``'s pygame and display are checked by ``render``.

        No window is open yet: ``_window`` is set on the instance, where a step reads it faster than the class's.
        """
        check_render_mode(render_mode, tuple(self.metadata["render_modes"]))
        self.render_mode = render_mode
        self._window = None

    def _grid(self) -> np.ndarray:
        """The current ``(H, W)`` grid; ``ResetNeeded`` before the first reset."""
        raise NotImplementedError

    def render(self) -> np.ndarray | str | None:
        """An RGB frame (``rgb_array``), a text grid (``ansi``) or a window update (``human``).

        As in Gymnasium's own envs, an env with ``render_mode="human"`` builds,
        resets and steps anywhere; the first ``render``, which ``reset`` calls
        in that mode, opens the window, or without a display draws offscreen
        and warns once (a ``UserWarning``) that nothing will be shown.

        Raises:
            doors_gym.extras.MissingExtra: ``human`` without pygame (the ``render`` extra).
            doors_gym.extras.NoDisplay: ``human`` where pygame can open neither a window nor its offscreen
                surface, naming the ways out.
        """
        if self.render_mode is None:
            gym.logger.warn(
                "You are calling render method without specifying any render mode. "
                f'You can specify the render_mode at initialization, e.g. gym.make("{self.env_id}", '
                'render_mode="rgb_array")'
            )
            return None
        grid = self._grid()
        if self.render_mode == "ansi":
            return rendering.grid_to_ansi(grid)
        frame = pixels.rgb_image(grid, self.params.colors, self.params.cell_pixels)
        if self.render_mode == "rgb_array":
            return frame
        if self._window is None:
            self._window = rendering.HumanWindow(self.env_id, self.metadata["render_fps"])
        if not self._window.show(frame):
            self._window = None
        return None

    def close(self) -> None:
        """Closes the pygame window if one is open; safe to call twice."""
        if self._window is not None:
            self._window.close()
            self._window = None

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_window"] = None
        return state


class VectorEnvShell(Picklable):
    """``render`` of a Doors vector env: one frame or text grid per env, as ``SyncVectorEnv`` returns them."""

    def _check_render_mode(self, render_mode: str | None) -> None:
        check_render_mode(render_mode, tuple(self.metadata["render_modes"]))
        self.render_mode = render_mode

    def _grids(self) -> np.ndarray:
        """The current ``(num_envs, H, W)`` grids; ``ResetNeeded`` before the first reset."""
        raise NotImplementedError

    def render(self) -> tuple[Any, ...] | None:
        """A tuple with one frame (``rgb_array``) or text grid (``ansi``) per env."""
        if self.render_mode is None:
            gym.logger.warn("You are calling render method without specifying any render mode.")
            return None
        grids = self._grids()
        if self.render_mode == "ansi":
            return tuple(rendering.grid_to_ansi(grid) for grid in grids)
        return tuple(pixels.rgb_image(grids, self.params.colors, self.params.cell_pixels))


def check_render_mode(render_mode: str | None, allowed: tuple[str, ...]) -> None:
    """``ValueError`` naming the mode and the allowed ones unless ``render_mode`` is None or in ``allowed``.

    Only the name: pygame and a display are needed when a window first opens
    (:class:`doors_gym.rendering.HumanWindow`), not to build the env.
    """
    core.validate_render_mode(render_mode, allowed)


def require_reset(has_reset: bool, what: str = "env.render()") -> None:
    """``ResetNeeded`` naming ``what`` unless the env has been reset."""
    if not has_reset:
        raise ResetNeeded(f"Cannot call {what} before calling env.reset()")
