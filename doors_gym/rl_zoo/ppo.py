"""``--conf-file doors_gym.rl_zoo.ppo``: RL Zoo reads this module's ``hyperparams`` (``ppo.yml`` beside it)."""

from doors_gym.rl_zoo import load

hyperparams = load("ppo")
