"""The pictures below the rules: ``doors_gym.pixels`` draws grids without importing ``doors_gym.core``."""

import ast
import pathlib

import numpy as np
import pytest

from doors_gym import core, pixels
from doors_gym.core import AGENT, EMPTY, GOAL, WALL, DoorsParams

PACKAGE = pathlib.Path(core.__file__).parent


def package_imports(path: pathlib.Path) -> set[str]:
    """The ``doors_gym`` modules a file imports (``import``, ``from ... import`` and ``from doors_gym import m``)."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "doors_gym":
            modules.update(f"doors_gym.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return {name for name in modules if name.split(".")[0] == "doors_gym"}


@pytest.mark.parametrize("module, allowed", [("codes", set()), ("pixels", {"doors_gym.codes"})])
def test_the_modules_below_core_do_not_import_it(module, allowed):
    assert package_imports(PACKAGE / f"{module}.py") == allowed
    assert "doors_gym.pixels" in package_imports(PACKAGE / "core.py")  # core is above pixels, not beside it


def test_the_rgb_observation_is_the_image_of_the_grid():
    params = DoorsParams(grid_size=(3, 2), n_doors=1, obs_mode="rgb", cell_pixels=2, colors={GOAL: (1, 2, 3)})
    cells = np.array([[GOAL, EMPTY], [EMPTY, WALL], [AGENT, EMPTY]], dtype=core.OBS_DTYPE)
    image = core.encode_grid(params, cells.reshape(-1))
    np.testing.assert_array_equal(image, pixels.rgb_image(cells, params.colors, 2))
    assert image.shape == (6, 4, 3) and image.dtype == pixels.RGB_DTYPE
    assert tuple(image[0, 0]) == (1, 2, 3) and tuple(image[4, 0]) == pixels.DEFAULT_COLORS[AGENT]
