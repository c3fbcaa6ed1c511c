"""``python -m doors_gym_baselines.tuning``: the same as ``doors-gym tune``."""

import sys

from .command import main

sys.exit(main())
