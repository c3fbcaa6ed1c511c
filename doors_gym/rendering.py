"""Showing and saving the grid: text, a pygame window and video files.

Shared by every env in the package; the RGB frames themselves are drawn by
:mod:`doors_gym.pixels`. Only NumPy is imported here; pygame and OpenCV are
imported by the functions that need them (the ``render`` extra), and their
absence is reported with the extra to install.
"""

from __future__ import annotations

import pathlib
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from doors_gym.codes import AGENT, EMPTY, GOAL, NUM_CELL_TYPES, WALL
from doors_gym.extras import WAYS_OUT, NoDisplay, has_display, import_pygame, require
from doors_gym.pixels import DEFAULT_CELL_PIXELS

__all__ = [
    "ANSI_CHARS",
    "DEFAULT_CELL_PIXELS",
    "HumanWindow",
    "RENDER_MODES",
    "VIDEO_SUFFIXES",
    "grid_to_ansi",
    "read_video_frame_count",
    "write_video",
]

ANSI_CHARS = {EMPTY: ".", AGENT: "A", WALL: "#", GOAL: "G"}
RENDER_MODES = ("human", "rgb_array", "ansi")
VIDEO_SUFFIXES = (".mp4", ".gif")


def grid_to_ansi(grid: np.ndarray) -> str:
    """``(H, W)`` cell codes to text: one line per row, ``.`` empty, ``#`` wall, ``A`` agent, ``G`` goal."""
    chars = np.array([ANSI_CHARS[code] for code in range(NUM_CELL_TYPES)])
    return "\n".join("".join(row) for row in chars[np.asarray(grid)])


class HumanWindow:
    """A pygame window showing RGB frames at a fixed frame rate.

    It opens on the first :meth:`show`, pumps the event queue on every frame
    (so the OS never flags it as frozen) and closes on :meth:`close` or when
    the user closes it. Only pygame's display is initialised: ``pygame.init()``
    would start the mixer too, and print audio-driver errors on machines
    without sound. Without a display it behaves as Gymnasium's own envs do
    (CartPole's ``human`` mode): pygame draws offscreen, the frame rate still
    holds, and opening warns once that nothing will be shown.
    """

    def __init__(self, title: str, fps: int) -> None:
        self.title = title
        self.fps = fps
        self._screen: Any = None
        self._clock: Any = None

    @property
    def is_open(self) -> bool:
        """Whether the window is currently open."""
        return self._screen is not None

    def show(self, frame: np.ndarray, poll: bool = True) -> bool:
        """Draws one ``(height, width, 3)`` uint8 frame; returns False if the user closed the window.

        With ``poll=False`` the events are left for the caller's :meth:`poll`.
        """
        pygame = import_pygame("render_mode='human'")
        if self._screen is None:
            self._open(pygame, frame.shape[1], frame.shape[0])
        elif poll and self.poll() is None:
            return False
        surface = pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2)))
        self._screen.blit(surface, (0, 0))
        pygame.display.flip()
        self._clock.tick(self.fps)
        return True

    def _open(self, pygame: Any, width: int, height: int) -> None:
        """Opens the window, or pygame's offscreen surface where no display exists (with a warning)."""
        available, reason = has_display()
        try:
            pygame.display.init()  # without a display, pygame falls back to its offscreen driver
        except pygame.error as error:
            raise NoDisplay(f"render_mode='human' opens a window, but {reason or error}: {WAYS_OUT}") from None
        if not available:
            warnings.warn(
                f"render_mode='human' shows nothing: {reason}, so pygame draws offscreen; {WAYS_OUT}",
                UserWarning,
                stacklevel=5,
            )
        pygame.display.set_caption(self.title)
        self._screen = pygame.display.set_mode((width, height))
        self._clock = pygame.time.Clock()

    def poll(self) -> list[Any] | None:
        """The pygame events since the last poll; None (and the window closed) if the user closed it."""
        import pygame

        events = pygame.event.get()
        if any(event.type == pygame.QUIT for event in events):
            self.close()
            return None
        return events

    def close(self) -> None:
        """Closes the window; safe to call more than once."""
        if self._screen is not None:
            import pygame

            pygame.display.quit()
            self._screen = None
            self._clock = None


def write_video(frames: Iterable[np.ndarray], path: str | pathlib.Path, fps: int = 8) -> pathlib.Path:
    """Writes RGB uint8 frames to an ``.mp4`` (MPEG-4 Part 2) or an animated ``.gif`` with OpenCV.

    Args:
        frames: ``(height, width, 3)`` uint8 RGB images of one size.
        path: the output file; its suffix picks the format.
        fps: frames per second, ``>= 1``.

    Returns:
        The path written.

    Raises:
        ValueError: for an unknown suffix, no frames, frames of different sizes
            or a bad ``fps``.
    """
    cv2 = require("cv2", "writing videos")
    path = pathlib.Path(path)
    suffix = path.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ValueError(f"video path {str(path)!r} has suffix {suffix!r}: expected one of {list(VIDEO_SUFFIXES)}")
    if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or fps < 1:
        raise ValueError(f"fps={fps!r} is invalid: expected an integer >= 1")
    bgr_frames = [cv2.cvtColor(np.ascontiguousarray(frame, dtype=np.uint8), cv2.COLOR_RGB2BGR) for frame in frames]
    if not bgr_frames:
        raise ValueError("no frames to write")
    shape = bgr_frames[0].shape
    if any(frame.shape != shape for frame in bgr_frames):
        raise ValueError(f"frames differ in size: expected every frame to be {shape}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gif":
        animation = cv2.Animation()
        animation.frames = bgr_frames
        animation.durations = [max(1, round(1000 / fps))] * len(bgr_frames)
        animation.loop_count = 0
        if not cv2.imwriteanimation(str(path), animation):
            raise OSError(f"OpenCV could not write {str(path)!r}")
    else:
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (shape[1], shape[0]))
        if not writer.isOpened():
            raise OSError(f"OpenCV could not open {str(path)!r} for writing")
        try:
            for frame in bgr_frames:
                writer.write(frame)
        finally:
            writer.release()
    return path


def read_video_frame_count(path: str | pathlib.Path) -> int:
    """Counts the frames of a video written by :func:`write_video` (for checks and tests)."""
    cv2 = require("cv2", "reading videos")

    path = pathlib.Path(path)
    if path.suffix.lower() == ".gif":
        ok, animation = cv2.imreadanimation(str(path))
        return len(animation.frames) if ok else 0
    capture = cv2.VideoCapture(str(path))
    count = 0
    try:
        while capture.read()[0]:
            count += 1
    finally:
        capture.release()
    return count
