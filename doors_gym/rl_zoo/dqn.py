"""``--conf-file doors_gym.rl_zoo.dqn``: RL Zoo reads this module's ``hyperparams`` (``dqn.yml`` beside it)."""

from doors_gym.rl_zoo import load

hyperparams = load("dqn")
