"""``python -m doors_gym``: the ``doors-gym`` command line."""

import sys

from doors_gym.cli import main

sys.exit(main())
