"""Missing extras and headless machines: one line saying what to install or do; quiet windows.

Each case runs in a fresh interpreter where the optional module is blocked
(``sys.modules[name] = None`` makes ``import name`` fail as if it were not
installed) or the display variables are unset.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from stacks import needs


def run_python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=env
    )


def headless_env() -> dict[str, str]:
    """This environment without a display and without SDL drivers (no sound either)."""
    drop = {"DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "SDL_AUDIODRIVER"}
    return {key: value for key, value in os.environ.items() if key not in drop}


BLOCKED_FEATURES = [
    ("jax", "import gymnasium as gym, doors_gym; gym.make('DoorsJax-v0')", "jax"),
    ("jax", "import gymnasium as gym, doors_gym; gym.make_vec('DoorsJax-v0', 2)", "jax"),
    ("pygame", "import gymnasium as gym, doors_gym; gym.make('Doors-v0', render_mode='human').reset()", "render"),
    (
        "cv2",
        "import numpy as np; from doors_gym.rendering import write_video; "
        "write_video([np.zeros((4, 4, 3), np.uint8)], 'x.gif')",
        "render",
    ),
]


@pytest.mark.parametrize(("module", "code", "extra"), BLOCKED_FEATURES)
def test_a_missing_extra_names_the_extra_to_install(module, code, extra, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.modules[{module!r}] = None\n{code}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("doors_gym.extras.MissingExtra: ")
    assert f'pip install "doors-gym[{extra}]"' in last_line
    assert "ModuleNotFoundError" not in result.stderr and "classic" not in result.stderr


@pytest.mark.parametrize(
    ("module", "argv", "extra"),
    [
        ("pygame", ["play"], "render"),
        ("cv2", ["render", "--out", "x.gif"], "render"),
        ("jax", ["render", "--env", "DoorsJax-v0", "--out", "x.gif"], "jax"),
    ],
)
def test_the_command_line_says_it_in_one_line(module, argv, extra, tmp_path):
    code = f"import sys; sys.modules[{module!r}] = None\nfrom doors_gym.cli import main\nsys.exit(main({argv!r}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"doors-gym {argv[0]}: ")
    assert f'pip install "doors-gym[{extra}]"' in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("block_pygame", [False, True])
@pytest.mark.parametrize("env_id", ["Doors-v0", "DoorsJax-v0"])
def test_a_human_env_builds_headless_and_reads_its_spaces(env_id, block_pygame):
    """Gymnasium's convention (CartPole's too): making the env needs neither a display nor pygame, so a script
    that builds a human env only to read its spaces (Tianshou's examples do) runs on a headless machine."""
    if env_id == "DoorsJax-v0":
        needs("jax")
    block = "import sys; sys.modules['pygame'] = None\n" if block_pygame else ""
    code = f"""import gymnasium as gym, doors_gym
env = gym.make({env_id!r}, render_mode="human")
print(env.render_mode, env.observation_space.shape, env.action_space.n)
env.close()
"""
    result = run_python(block + code, env=headless_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout == "human (225,) 5\n"


def test_play_without_a_display_exits_with_one_line():
    needs("pygame")
    result = run_python("import sys; from doors_gym.cli import main; sys.exit(main(['play']))", env=headless_env())
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "no display was found" in result.stderr
    # The render() message's way out, word for word.
    assert result.stderr.split(" opens a window, but ")[1] == (
        "no display was found ($DISPLAY and $WAYLAND_DISPLAY are unset): use render_mode='rgb_array' (frames) or "
        "'ansi' (text), or `doors-gym render --out episode.gif` for a video; set SDL_VIDEODRIVER=dummy to draw "
        "nowhere\n"
    )
    assert result.stdout == ""


def test_human_rendering_prints_no_audio_or_banner_noise():
    """Only pygame's display starts: no mixer, so no ALSA errors on a machine without sound, and no banner."""
    needs("pygame")
    env = {**headless_env(), "SDL_VIDEODRIVER": "dummy"}
    result = run_python(
        """
        import gymnasium as gym, doors_gym, pygame
        env = gym.make("Doors-v0", render_mode="human")
        env.reset(seed=0)
        env.step(1)
        assert pygame.display.get_init()
        assert pygame.mixer.get_init() is None
        env.close()
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
