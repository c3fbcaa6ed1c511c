"""The pictures below the rules: ``doors_gym.pixels`` draws grids without importing ``doors_gym.core``."""

import ast
import pathlib

import numpy as np
import pytest

from doors_gym import core, pixels
from doors_gym.core import AGENT, EMPTY, GOAL, WALL, DoorsParams

PACKAGE = pathlib.Path(core.__file__).parent


def imported_modules(path: pathlib.Path) -> set[str]:
    """The modules a file imports by absolute ``import`` and ``from ... import``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("module", ["codes", "pixels"])
def test_the_modules_below_core_do_not_import_it(module):
    imported = imported_modules(PACKAGE / f"{module}.py")
    assert not {name for name in imported if name.startswith("doors_gym.core")}
    assert {name for name in imported if name.startswith("doors_gym.")} <= {
        "doors_gym.codes.AGENT",
        "doors_gym.codes.EMPTY",
        "doors_gym.codes.GOAL",
        "doors_gym.codes.NUM_CELL_TYPES",
        "doors_gym.codes.WALL",
    }


def test_the_rgb_observation_is_the_image_of_the_grid():
    params = DoorsParams(grid_size=(3, 2), n_doors=1, obs_mode="rgb", cell_pixels=2, colors={GOAL: (1, 2, 3)})
    cells = np.array([[GOAL, EMPTY], [EMPTY, WALL], [AGENT, EMPTY]], dtype=core.OBS_DTYPE)
    image = core.encode_grid(params, cells.reshape(-1))
    np.testing.assert_array_equal(image, pixels.rgb_image(cells, params.colors, 2))
    assert image.shape == (6, 4, 3) and image.dtype == pixels.RGB_DTYPE
    assert tuple(image[0, 0]) == (1, 2, 3) and tuple(image[4, 0]) == pixels.DEFAULT_COLORS[AGENT]
