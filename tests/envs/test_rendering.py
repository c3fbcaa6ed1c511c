"""Every render mode of ``Doors-v0`` and the video helpers of ``doors_gym.rendering``."""

import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

from doors_gym import rendering
from doors_gym.envs.doors import DoorsEnv
from doors_gym.pixels import DEFAULT_COLORS, grid_to_rgb, make_palette

HEIGHT = WIDTH = 15
WALL_ROW = 7
DOORS = (0, 5, 10)
AGENT_POS, GOAL_POS = (12, 3), (2, 9)


def _cell(frame: np.ndarray, row: int, col: int, pixels: int) -> np.ndarray:
    return frame[row * pixels : (row + 1) * pixels, col * pixels : (col + 1) * pixels]


def _dominant(color: np.ndarray) -> int:
    """Index of the strongest channel, asserting it is clearly stronger than the others."""
    channel = int(np.argmax(color))
    others = np.delete(color.astype(int), channel)
    assert color[channel] > others.max() + 50, color
    return channel


@pytest.mark.parametrize("pixels", [1, 8, 16])
def test_rgb_frames_have_the_grid_shape_and_default_colours(pixels):
    env = gym.make("Doors-v0", render_mode="rgb_array", cell_pixels=pixels)
    env.reset(seed=0, options={"agent_pos": AGENT_POS, "goal_pos": GOAL_POS})
    frame = env.render()
    assert frame.dtype == np.uint8
    assert frame.shape == (HEIGHT * pixels, WIDTH * pixels, 3)

    for row in range(HEIGHT):
        for col in range(WIDTH):
            cell = _cell(frame, row, col, pixels)
            assert np.all(cell == cell[0, 0]), "a cell is one flat colour"
            color = cell[0, 0]
            if (row, col) == AGENT_POS:
                assert _dominant(color) == 2  # blue
            elif (row, col) == GOAL_POS:
                assert _dominant(color) == 0  # red
            elif row == WALL_ROW and col not in DOORS:
                assert _dominant(color) == 1  # green
            else:
                assert color.tolist() == [0, 0, 0]


def test_rgb_frame_follows_the_agent():
    env = DoorsEnv(render_mode="rgb_array", cell_pixels=4)
    env.reset(seed=0, options={"agent_pos": AGENT_POS, "goal_pos": GOAL_POS})
    env.step(1)  # right
    frame = env.render()
    new_agent = (AGENT_POS[0], AGENT_POS[1] + 1)
    assert _dominant(_cell(frame, *new_agent, 4)[0, 0]) == 2
    assert _cell(frame, *AGENT_POS, 4).max() == 0


def test_custom_colours_are_used():
    env = DoorsEnv(render_mode="rgb_array", cell_pixels=2, colors={3: (255, 255, 0)})
    env.reset(seed=0, options={"agent_pos": AGENT_POS, "goal_pos": GOAL_POS})
    frame = env.render()
    assert np.all(_cell(frame, *GOAL_POS, 2) == (255, 255, 0))
    # The other colours keep their defaults.
    np.testing.assert_array_equal(_cell(frame, *AGENT_POS, 2)[0, 0], DEFAULT_COLORS[1])
    np.testing.assert_array_equal(_cell(frame, WALL_ROW, 1, 2)[0, 0], DEFAULT_COLORS[2])


def test_rendering_returns_a_fresh_frame():
    env = DoorsEnv(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    frame[:] = 7
    assert not np.array_equal(env.render(), frame)


def test_ansi_text_shows_the_grid():
    env = gym.make("Doors-v0", render_mode="ansi")
    env.reset(seed=0, options={"agent_pos": AGENT_POS, "goal_pos": GOAL_POS})
    text = env.render()
    lines = text.split("\n")
    assert len(lines) == HEIGHT
    assert all(len(line) == WIDTH for line in lines)
    assert text.count("A") == 1 and lines[AGENT_POS[0]][AGENT_POS[1]] == "A"
    assert text.count("G") == 1 and lines[GOAL_POS[0]][GOAL_POS[1]] == "G"
    for col in range(WIDTH):
        assert lines[WALL_ROW][col] == ("." if col in DOORS else "#")
    assert text.count("#") == WIDTH - len(DOORS)
    assert set(text) <= set(".#AG\n")


def test_ansi_text_after_termination_has_no_goal():
    env = DoorsEnv(render_mode="ansi")
    env.reset(options={"agent_pos": (1, 9), "goal_pos": (0, 9)})
    _, _, terminated, _, _ = env.step(4)
    assert terminated
    text = env.render()
    assert "G" not in text
    assert text.split("\n")[0][9] == "A"


def test_human_mode_renders_through_reset_and_step_and_closes_twice():
    pygame = needs("pygame")
    env = gym.make("Doors-v0", render_mode="human", cell_pixels=4)
    env.reset(seed=0)
    assert pygame.display.get_init()
    surface = pygame.display.get_surface()
    assert surface is not None
    assert surface.get_size() == (WIDTH * 4, HEIGHT * 4)
    for action in (4, 4):
        result = env.step(action)
        assert len(result) == 5
    assert env.render() is None
    env.close()
    assert not pygame.display.get_init()
    env.close()
    assert not pygame.display.get_init()


def test_human_window_shows_the_frame():
    pygame = needs("pygame")
    env = DoorsEnv(render_mode="human", cell_pixels=2)
    try:
        env.reset(seed=0, options={"agent_pos": AGENT_POS, "goal_pos": GOAL_POS})
        screen = pygame.surfarray.array3d(pygame.display.get_surface())  # (width, height, 3)
        assert tuple(screen[AGENT_POS[1] * 2, AGENT_POS[0] * 2]) == DEFAULT_COLORS[1]
        assert tuple(screen[GOAL_POS[1] * 2, GOAL_POS[0] * 2]) == DEFAULT_COLORS[3]
    finally:
        env.close()


HEADLESS_HUMAN_EPISODE = """
import warnings
import gymnasium as gym, doors_gym
warnings.simplefilter("always")  # every warning, not Python's once per place: the env itself warns once
env = gym.make({env_id!r}, render_mode="human")
obs, info = env.reset(seed=0)
steps = 0
for action in (4, 4, 1):
    env.step(action)
    steps += 1
print(env.render(), steps)
env.close()
"""


def run_headless(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with no display and no SDL driver chosen (no sound either)."""
    drop = {"DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"}
    env = {key: value for key, value in os.environ.items() if key not in drop}
    env["SDL_AUDIODRIVER"] = "dummy"
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=env
    )


def test_cartpole_builds_resets_and_steps_in_human_mode_without_a_display():
    """What Gymnasium's own env does headless, the behaviour the next test holds ours to."""
    needs("pygame")
    result = run_headless(HEADLESS_HUMAN_EPISODE.format(env_id="CartPole-v1").replace("(4, 4, 1)", "(0, 1, 0)"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "None 3\n"


@pytest.mark.parametrize("env_id", ["Doors-v0", "DoorsJax-v0"])
def test_human_mode_without_a_display_builds_resets_steps_and_warns_once(env_id):
    needs("pygame")
    if env_id == "DoorsJax-v0":
        needs("jax")
    result = run_headless(HEADLESS_HUMAN_EPISODE.format(env_id=env_id))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "None 3\n"
    warning = "UserWarning: render_mode='human' shows nothing: no display was found"
    assert result.stderr.count(warning) == 1, result.stderr
    for way_out in ("render_mode='rgb_array'", "'ansi'", "doors-gym render --out"):
        assert way_out in result.stderr


def test_rgb_array_rendering_never_opens_a_window():
    pygame = needs("pygame")
    env = gym.make("Doors-v0", render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(3):
        env.step(0)
        env.render()
    assert env.unwrapped._window is None
    assert not pygame.display.get_init() or pygame.display.get_surface() is None
    env.close()


def test_record_video_writes_an_mp4(tmp_path):
    needs("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make("Doors-v0", render_mode="rgb_array"),
        video_folder=str(tmp_path / "videos"),
        episode_trigger=lambda episode: True,
    )
    env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
    env.close()
    videos = list((tmp_path / "videos").glob("*.mp4"))
    assert videos
    assert all(video.stat().st_size > 0 for video in videos)


def _frames(count: int, height: int = 30, width: int = 45) -> list[np.ndarray]:
    frames = []
    for index in range(count):
        frame = np.zeros((height, width, 3), dtype=np.uint8)
        frame[:, : (index + 1) * width // count] = (200, 40 * (index % 5), 100)
        frames.append(frame)
    return frames


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
@pytest.mark.parametrize("count", [1, 12])
def test_write_video_writes_every_frame(tmp_path, suffix, count):
    frames = _frames(count)
    path = rendering.write_video(frames, tmp_path / "nested" / f"video{suffix}", fps=8)
    assert path.exists() and path.stat().st_size > 0
    assert path.suffix == suffix
    assert rendering.read_video_frame_count(path) == count


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_write_video_keeps_repeated_frames(tmp_path, suffix):
    """Episodes repeat frames (stay actions, wall bumps): each must still count."""
    frames = _frames(3)
    frames = [frames[0]] * 4 + [frames[1]] * 3 + [frames[2]]
    path = rendering.write_video(frames, tmp_path / f"repeated{suffix}")
    assert rendering.read_video_frame_count(path) == len(frames)


def test_write_video_accepts_env_frames(tmp_path):
    env = DoorsEnv(render_mode="rgb_array", cell_pixels=3)
    env.reset(seed=0)
    frames = [env.render()]
    for action in (4, 4, 1, 3):
        env.step(action)
        frames.append(env.render())
    for suffix in (".mp4", ".gif"):
        path = rendering.write_video(frames, tmp_path / f"episode{suffix}", fps=4)
        assert rendering.read_video_frame_count(path) == len(frames)


@pytest.mark.parametrize(
    ("frames", "name", "fps", "message"),
    [
        (_frames(3), "video.avi", 8, r"\.avi"),
        ([], "video.mp4", 8, "no frames"),
        (_frames(2) + _frames(1, height=20), "video.mp4", 8, "size"),
        (_frames(2) + _frames(1, width=44), "video.gif", 8, "size"),
        (_frames(3), "video.mp4", 0, "fps=0"),
        (_frames(3), "video.gif", 2.5, "fps=2.5"),
        (_frames(3), "video.mp4", True, "fps=True"),
    ],
    ids=["avi", "empty", "mismatched-height", "mismatched-width", "fps-0", "fps-float", "fps-bool"],
)
def test_write_video_rejects_bad_input(tmp_path, frames, name, fps, message):
    with pytest.raises(ValueError, match=message):
        rendering.write_video(frames, tmp_path / name, fps=fps)
    assert not (tmp_path / name).exists()


def test_grid_helpers_on_a_hand_built_grid():
    grid = np.array([[0, 1], [2, 3]], dtype=np.int8)
    assert rendering.grid_to_ansi(grid) == ".A\n#G"
    palette = make_palette()
    image = grid_to_rgb(grid, palette, 3)
    assert image.shape == (6, 6, 3) and image.dtype == np.uint8
    for (row, col), code in np.ndenumerate(grid):
        assert np.all(image[row * 3 : row * 3 + 3, col * 3 : col * 3 + 3] == DEFAULT_COLORS[int(code)])
