"""The libraries users pick, as doors-gym arms: Stable-Baselines3's DQN (``sb3-dqn``), SBX's DQN (``sbx-dqn``)
and rejax's DQN and PQN (``rejax-dqn``, ``rejax-pqn``).

Each arm goes through doors-gym's public arm API (:mod:`doors_gym_baselines.api`) as any outside package does,
declared through the entry-point group ``doors_gym.arms``; its library is imported only when it trains or
loads a model, and a missing one is named with its extra (``pip install "doors-gym[sb3]"``, ``[sbx]``,
``[rejax]``).
"""
