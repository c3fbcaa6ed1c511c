"""``python -m doors_gym_baselines``: the baselines' ``doors-gym`` commands (train, enjoy, tune, compare)."""

import sys

from .cli import main

sys.exit(main())
