"""The one way a test asks for an optional stack: ``needs("jax")`` instead of ``pytest.importorskip``.

Where the stack is missing the test (or, called at module level, the whole file) is skipped with a reason
naming the extra that installs it; with ``DOORS_GYM_REQUIRE_ALL=1`` in the environment (CI's full install
sets it) the same call fails instead, so a broken install cannot drop tests silently. ``tests/conftest.py``
puts this folder on ``sys.path`` and prints the setting in pytest's header.

A stack installed at another era than a test was written for (gymnax 0.0.x against 1.x) is a choice, not a
missing install: ``needs("gymnax", major=0)`` skips there in both settings, naming the installed version.
"""

from __future__ import annotations

import importlib
import os
from importlib import metadata
from types import ModuleType

import pytest

REQUIRE_ALL_VARIABLE = "DOORS_GYM_REQUIRE_ALL"
"""Set to ``1`` to turn a missing optional stack into a failure."""

EXTRAS = {
    "jax": "jax",
    "array_api_compat": "jax",
    "pygame": "render",
    "cv2": "render",
    "moviepy": "video",
    "torch": "torch",
    "flax": "baselines",
    "optax": "baselines",
    "mlflow": "baselines",
    "optuna": "baselines",
    "matplotlib": "baselines",
    "scipy": "baselines",
    "yaml": "baselines",
    "doors_gym_baselines": "baselines",
}
"""Top-level module -> the doors-gym extra that installs it; anything else comes with ``test``."""


def require_all() -> bool:
    """Whether missing optional stacks fail (``DOORS_GYM_REQUIRE_ALL=1``) rather than skip."""
    return os.environ.get(REQUIRE_ALL_VARIABLE, "") == "1"


def needs(module: str, major: int | None = None) -> ModuleType:
    """Imports ``module`` for a test, or skips it (fails under ``DOORS_GYM_REQUIRE_ALL=1``) when it is missing.

    Args:
        module: a dotted module name (``"jax"``, ``"scipy.stats"``, ``"gymnax.wrappers"``).
        major: the major version of ``module``'s distribution the test was written for; another one
            installed skips the test in every setting (another CI venv runs it).

    Returns:
        The imported module.
    """
    top = module.split(".")[0]
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        extra = EXTRAS.get(top, "test")
        reason = f"{module} is not installed ({error}): pip install 'doors-gym[{extra}]'"
        if require_all():
            pytest.fail(f"{reason}; {REQUIRE_ALL_VARIABLE}=1 requires every optional stack", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    if major is not None:
        version = metadata.version(top)
        if int(version.split(".")[0]) != major:
            reason = f"written for {top} {major}.x; this venv has {top} {version} (.ci/run runs it in a venv of its own)"
            pytest.skip(reason, allow_module_level=True)
    return imported
