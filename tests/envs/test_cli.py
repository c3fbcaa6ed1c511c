"""The ``doors-gym`` command line, run in-process through ``doors_gym.cli.main``."""

import math
import re
import subprocess
import sys

import pytest
from stacks import needs

from doors_gym import cli, core, rendering
from doors_gym.levels import LEVEL_NAMES, LEVELS


def test_render_oracle_episodes_to_mp4(tmp_path, capsys):
    out = tmp_path / "videos" / "x.mp4"
    assert cli.main(["render", "--policy", "oracle", "--episodes", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.exists()
    frame_count = rendering.read_video_frame_count(out)
    assert frame_count > 10
    assert printed.count("reached the goal") >= 2
    assert "episode 0:" in printed and "episode 1:" in printed
    assert f"wrote {frame_count} frames of 2 episode(s)" in printed
    assert "(2/2 reached the goal)" in printed


def test_render_to_gif_with_a_custom_layout(tmp_path, capsys):
    out = tmp_path / "x.gif"
    argv = [
        "render",
        "--grid-size",
        "5",
        "7",
        "--n-doors",
        "2",
        "--cell-pixels",
        "4",
        "--max-episode-steps",
        "9",
        "--policy",
        "random",
        "--seed",
        "3",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    frame_count = rendering.read_video_frame_count(out)
    # One frame per reset plus one per step; at most 9 steps.
    assert 2 <= frame_count <= 10
    assert f"wrote {frame_count} frames of 1 episode(s)" in printed


def test_render_with_the_jax_env(tmp_path, capsys):
    needs("jax")
    out = tmp_path / "jax.mp4"
    argv = ["render", "--env", "DoorsJax-v0", "--policy", "random", "--max-episode-steps", "8", "--out", str(out)]
    assert cli.main(argv) == 0
    assert out.exists()
    assert rendering.read_video_frame_count(out) >= 2
    assert "episode 0:" in capsys.readouterr().out


def test_oracle_prints_the_spec_figure(capsys):
    assert cli.main(["oracle"]) == 0
    printed = capsys.readouterr().out
    assert "0.776" in printed
    assert "success 1.000" in printed
    assert "longest path 28 steps" in printed
    assert "[0, 5, 10]" in printed


def test_oracle_on_another_layout(capsys):
    assert cli.main(["oracle", "--grid-size", "9", "21", "--n-doors", "4"]) == 0
    printed = capsys.readouterr().out
    assert "(9, 21)" in printed and "[0, 5, 10, 15]" in printed
    assert "success 1.000" in printed


def test_oracle_at_the_study_level_prints_the_spec_figures(capsys):
    assert cli.main(["oracle", "--level", "study"]) == 0
    printed = capsys.readouterr().out
    assert "Doors-v0, DoorsJax-v0" in printed
    assert "mean per-step reward 0.776" in printed
    assert "longest path 28 steps" in printed
    assert "rolling reward >= 0.750" in printed  # SPEC: 0.75 on Doors-v0


def test_render_the_oracle_at_a_random_level_reaches_every_goal(tmp_path, capsys):
    out = tmp_path / "x.gif"
    argv = ["render", "--level", "3Walls", "--policy", "oracle", "--episodes", "2", "--cell-pixels", "2", "--out", str(out)]
    assert cli.main(argv) == 0
    assert "(2/2 reached the goal)" in capsys.readouterr().out


def oracle_estimate(printed: str) -> tuple[float, float, float, float]:
    """``(estimate, low, high, exact)`` from the oracle command's lines on a random-door level."""
    estimate, low, high = re.search(r"reward ([0-9.]+) \(95 % CI ([0-9.]+) to ([0-9.]+)\)", printed).groups()
    exact = re.search(r"exact over all \d+ layouts: mean per-step reward ([0-9.]+)", printed).group(1)
    return float(estimate), float(low), float(high), float(exact)


def test_oracle_on_a_random_level_estimates_with_an_interval_and_is_reproducible(capsys):
    argv = ["oracle", "--level", "Random", "--layouts", "300", "--seed", "2"]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out
    assert "300 layouts drawn with seed 2" in first
    assert f"exact over all {math.comb(15, 3)} layouts" in first
    estimate, low, high, exact = oracle_estimate(first)
    assert low < estimate < high and low <= exact <= high
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == first
    assert cli.main(["oracle", "--level", "Random", "--layouts", "300", "--seed", "3"]) == 0
    assert oracle_estimate(capsys.readouterr().out)[0] != estimate


def test_oracle_table_of_every_level(capsys):
    assert cli.main(["oracle", "--level", "all", "--layouts", "20"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| level |") and "95 % CI" in lines[0]
    rows = lines[2:]
    assert [row.split("|")[1].strip() for row in rows] == list(LEVEL_NAMES)
    for row, level in zip(rows, LEVELS):
        assert f"`{level.env_id}`" in row and f"`{level.jax_env_id}`" in row
        assert f"| {level.max_episode_steps} |" in row
    assert "1 (exact, all pairs)" in rows[0] and "20 drawn, seed 0" in rows[-1]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["oracle", "--n-doors", "0"], "--n-doors"),
        (["oracle", "--level", "99x99"], "--level"),
        (["oracle", "--level", "study", "--grid-size", "9", "9"], "--grid-size"),
        (["oracle", "--level", "Random", "--layouts", "1"], "--layouts"),
        (["oracle", "--layouts", "0"], "--layouts"),
        (["render", "--n-doors", "0", "--out", "{tmp}/x.mp4"], "--n-doors"),
        (["oracle", "--grid-size", "2", "15"], "--grid-size"),
        (["render", "--grid-size", "2", "15", "--out", "{tmp}/x.mp4"], "--grid-size"),
        (["oracle", "--door-cols", "3", "3"], "--door-cols"),
        (["render", "--out", "{tmp}/x.avi"], "--out"),
        (["render", "--episodes", "0", "--out", "{tmp}/x.mp4"], "--episodes"),
        (["render", "--fps", "0", "--out", "{tmp}/x.mp4"], "--fps"),
        (["oracle", "--max-episode-steps", "0"], "--max-episode-steps"),
        (["oracle", "--grid-size", "abc", "15"], "--grid-size"),
        (["render", "--policy", "clever", "--out", "{tmp}/x.mp4"], "--policy"),
        (["render", "--env", "Doors-v9", "--out", "{tmp}/x.mp4"], "--env"),
        (["render"], "--out"),
    ],
)
def test_bad_flags_exit_with_code_2_naming_the_flag(tmp_path, capsys, argv, flag):
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert flag in error
    assert "usage:" in error
    assert not list(tmp_path.iterdir()), "nothing is written on a bad command line"


def test_missing_command_exits_with_code_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["play", "--help"], ["render", "--help"], ["oracle", "--help"]])
def test_help_exits_0_and_prints_usage(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("usage: doors-gym")
    assert "--help" in printed
    if argv[0] != "--help":
        assert "--grid-size" in printed and "--n-doors" in printed


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    import doors_gym

    assert doors_gym.__version__ in capsys.readouterr().out


def test_python_dash_m_help_in_a_subprocess():
    result = subprocess.run([sys.executable, "-m", "doors_gym", "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: doors-gym")
    for command in ("play", "render", "oracle"):
        assert command in result.stdout


def test_keys_to_action_maps_arrows_wasd_and_space():
    pygame = needs("pygame")
    mapping = cli.keys_to_action()
    expected = {
        (pygame.K_RIGHT,): core.RIGHT,
        (pygame.K_d,): core.RIGHT,
        (pygame.K_DOWN,): core.DOWN,
        (pygame.K_s,): core.DOWN,
        (pygame.K_LEFT,): core.LEFT,
        (pygame.K_a,): core.LEFT,
        (pygame.K_UP,): core.UP,
        (pygame.K_w,): core.UP,
        (pygame.K_SPACE,): core.STAY,
    }
    assert mapping == expected
    assert (core.STAY, core.RIGHT, core.DOWN, core.LEFT, core.UP) == (0, 1, 2, 3, 4)
    assert sorted(set(mapping.values())) == [0, 1, 2, 3, 4]


def test_play_steps_on_key_presses_and_quits_on_window_close(monkeypatch, capsys):
    pygame = needs("pygame")
    import gymnasium as gym

    actions_taken = []

    class RecordActions(gym.Wrapper):
        def step(self, action):
            actions_taken.append(int(action))
            return super().step(action)

    make_env = cli._make_env
    monkeypatch.setattr(cli, "_make_env", lambda *args, **kwargs: RecordActions(make_env(*args, **kwargs)))
    script = [
        [pygame.event.Event(pygame.KEYDOWN, key=pygame.K_UP)],
        [pygame.event.Event(pygame.KEYUP, key=pygame.K_UP)],
        [pygame.event.Event(pygame.KEYDOWN, key=ord("d"))],
        [pygame.event.Event(pygame.KEYUP, key=ord("d"))],
        [pygame.event.Event(pygame.QUIT)],
    ]
    monkeypatch.setattr(
        pygame.event, "get", lambda *args, **kwargs: script.pop(0) if script else [pygame.event.Event(pygame.QUIT)]
    )
    assert cli.main(["play", "--cell-pixels", "4"]) == 0
    assert actions_taken[:2] == [core.UP, core.RIGHT]
    assert not script
    assert "arrows or WASD" in capsys.readouterr().out


@pytest.mark.parametrize("env", ["Doors-v0", "DoorsJax-v0"])
def test_render_a_level_by_name_at_its_time_limit_and_cell_size(tmp_path, capsys, env):
    if env == "DoorsJax-v0":
        needs("jax")
    out = tmp_path / "level.gif"
    argv = ["render", "--level", "31x31", "--env", env, "--policy", "random", "--out", str(out), "--seed", "1"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "in 248 steps, truncated" in printed or "reached the goal" in printed
    assert rendering.read_video_frame_count(out) > 1
    import cv2

    ok, animation = cv2.imreadanimation(str(out))
    assert ok and animation.frames[0].shape[:2] == (620, 620)  # 20 pixels a cell: the 24 of render, within 640


def test_render_with_walls_and_random_doors_flags(tmp_path, capsys):
    out = tmp_path / "walls.gif"
    argv = ["render", "--grid-size", "9", "9", "--n-walls", "2", "--doors", "random", "--n-doors", "1"]
    assert cli.main([*argv, "--policy", "random", "--out", str(out), "--max-episode-steps", "5"]) == 0
    assert "in 5 steps" in capsys.readouterr().out


LEVEL_FLAG_ERRORS = [
    (["--level", "huge"], "argument --level: invalid choice: 'huge'"),
    (["--doors", "shuffled"], "argument --doors: invalid choice: 'shuffled'"),
    (["--n-walls", "8"], "--n-walls 8 is too many for --grid-size (15, 15)"),
    (["--doors", "random", "--door-cols", "1", "2"], "--door-cols [1, 2] contradicts --doors 'random'"),
    (["--level", "3Walls", "--n-walls", "2"], "--level '3Walls' sets the layout: --n-walls 2 cannot be given"),
    (["--level", "Random", "--grid-size", "9", "9"], "--level 'Random' sets the layout: --grid-size (9, 9)"),
    (["--grid-size", "91", "91"], "--grid-size (91, 91) is out of range: H * W = 8281 cells"),
]


@pytest.mark.parametrize(("flags", "message"), LEVEL_FLAG_ERRORS, ids=[" ".join(f) for f, _ in LEVEL_FLAG_ERRORS])
def test_bad_level_flags_exit_with_code_2_naming_the_flag(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as caught:
        cli.main(["render", *flags, "--out", str(tmp_path / "x.gif")])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_every_command_that_builds_an_env_defaults_to_the_layouts_time_limit_and_a_fitting_cell_size():
    parser = cli.build_parser()
    commands = next(action for action in parser._actions if action.dest == "command").choices
    render = commands["render"].parse_args(["--out", "x.gif"])
    assert render.max_episode_steps is None and render.level is None
    assert render.cell_pixels is None and render.largest_cell_pixels == 24
    assert commands["oracle"].get_default("max_episode_steps") is None  # the layout's own, as play and render
    for name in (name for name in commands if name not in ("play", "render", "oracle")):  # the plugged-in ones
        # a plugged-in command may name a level of its own (compare's default is the study's)
        assert commands[name].get_default("level") in (None, "study")
        if any(action.dest == "max_episode_steps" for action in commands[name]._actions):
            assert commands[name].get_default("max_episode_steps") is None, name  # the layout's or the level's
        if any(action.dest == "cell_pixels" for action in commands[name]._actions):
            assert commands[name].get_default("cell_pixels") is None, name  # one that fits the grid
    # The layout flags a plug-in is handed keep the env's own default: play's and render's changes stay theirs.
    assert cli.layout_parser().get_default("max_episode_steps") == core.DEFAULT_MAX_EPISODE_STEPS