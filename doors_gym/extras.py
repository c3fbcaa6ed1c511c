"""Optional stacks: a missing one is named with the extra that installs it, in one line.

``import doors_gym`` needs only Gymnasium and NumPy. Everything else comes with
an extra of the distribution; using a feature without it raises
:class:`MissingExtra` (an ``ImportError``) whose message says what to install,
e.g. ``render_mode="human" needs pygame: pip install "doors-gym[render]"``.
What needs Gymnasium 1.x (the package allows 0.29) says so with :class:`GymnasiumTooOld`.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

EXTRAS = {
    "pygame": "render",
    "cv2": "render",
    "moviepy": "video",
    "jax": "jax",
    "torch": "torch",
    "flax": "baselines",
    "optax": "baselines",
    "optuna": "baselines",
    "mlflow": "baselines",
    "tqdm": "baselines",
    "plotly": "baselines",
    "matplotlib": "baselines",
    "yaml": "zoo",
    "rl_zoo3": "zoo",
    "stable_baselines3": "sb3",
    "sbx": "sbx",
    "rejax": "rejax",
    "distributed": "dask",
    "dask": "dask",
}
"""The extra of ``doors-gym`` that installs each optional top-level module."""
DISTRIBUTION_NAMES = {
    "cv2": "opencv-python-headless",
    "pygame": "pygame-ce",
    "yaml": "pyyaml",
    "stable_baselines3": "stable-baselines3",
    "sbx": "sbx-rl",
}


class MissingExtra(ImportError):
    """An optional stack is not installed: the message names the feature, the package and the extra."""

    def __init__(self, feature: str, module: str) -> None:
        extra = EXTRAS.get(module, "all")
        package = DISTRIBUTION_NAMES.get(module, module)
        super().__init__(f'{feature} needs {package}: pip install "doors-gym[{extra}]"', name=module)
        self.extra = extra


def require(module: str, feature: str) -> ModuleType:
    """Imports ``module``; :class:`MissingExtra` naming ``feature`` and the extra if it is not installed."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = (error.name or module).split(".")[0]
        if missing != module.split(".")[0] and missing not in EXTRAS:
            raise
        raise MissingExtra(feature, missing) from None


def import_pygame(feature: str) -> ModuleType:
    """pygame without its support banner on stdout."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    return require("pygame", feature)


def has_display() -> tuple[bool, str]:
    """Whether a window can be shown here, and why not.

    An explicit ``SDL_VIDEODRIVER`` (``dummy`` or ``offscreen`` in tests and
    headless jobs) is taken as the user's choice. On Linux and the BSDs a
    window needs an X11 or Wayland display; macOS and Windows always have one.
    """
    if os.environ.get("SDL_VIDEODRIVER"):
        return True, ""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")) and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return False, "no display was found ($DISPLAY and $WAYLAND_DISPLAY are unset)"
    return True, ""


class GymnasiumTooOld(ImportError):
    """A feature of Gymnasium 1.x was used with Gymnasium 0.29 (``pip install doors-gym`` allows both)."""


def require_gymnasium_1(feature: str) -> None:
    """:class:`GymnasiumTooOld`, in one line naming ``feature`` and the installed version, on Gymnasium < 1.0."""
    import gymnasium

    if int(gymnasium.__version__.split(".")[0]) < 1:
        raise GymnasiumTooOld(
            f"{feature} needs gymnasium>=1.0, and this is gymnasium {gymnasium.__version__}: "
            "pip install 'gymnasium>=1.0' (Doors-v0 itself, with gymnasium.vector.SyncVectorEnv, works on 0.29)"
        )


class NoDisplay(RuntimeError):
    """A window was asked for where none can be shown."""


WAYS_OUT = (
    "use render_mode='rgb_array' (frames) or 'ansi' (text), or `doors-gym render --out episode.gif` for a video"
)
"""What to use instead of a window, said wherever none can be shown."""


def require_display(feature: str) -> None:
    """:class:`NoDisplay` naming ``feature`` and the alternatives unless a window can be shown."""
    available, reason = has_display()
    if not available:
        raise NoDisplay(f"{feature} opens a window, but {reason}: {WAYS_OUT}; set SDL_VIDEODRIVER=dummy to draw nowhere")
