"""The learners: one file per algorithm and framework, each exposing its arm records and ``train``.

- :mod:`.dqn_torch`: DQN in PyTorch over the shared host loop (``torch-numpy``, ``torch-jax``);
  :mod:`.dqn_torch_compile`: the same with ``torch.compile`` on the update and greedy acting (``torch-compile``);
- :mod:`.dqn_flax`: DQN in Flax over the shared host loop (``flax-numpy``, ``flax-jax``), and the JAX learning step;
- :mod:`.dqn_flax_scan`: the fully jitted arm (``flax-scan``): env, acting, replay and updates in one ``lax.scan``,
  driven segment by segment by :mod:`.scan_driver`, its lanes (:mod:`.scan_lanes`) and its phase profile
  (:mod:`.scan_profile`);
- :mod:`.cells`: the networks' input, the agent's and the goal's cells of an observation.
"""
