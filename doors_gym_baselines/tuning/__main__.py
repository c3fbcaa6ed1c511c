"""``python -m doors_gym_baselines.tuning``: the same as ``doors-gym tune``."""

import sys

from ..cli import main

sys.exit(main(["tune", *sys.argv[1:]]))
