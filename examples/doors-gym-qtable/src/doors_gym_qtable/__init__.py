"""Tabular Q-learning on the Doors gridworld in pure JAX: an example agent from outside ``doors-gym``.

- :class:`QHyperparameters`: the hyperparameters, validated; :class:`QConfig`, them and the budget;
- :func:`make_train`: a pure ``train(key)``, one ``lax.scan``; ``jax.jit(jax.vmap(train))(keys)`` trains
  many agents at once (:func:`make_parts` gives its pieces, for host loops);
- :func:`greedy_evaluation`: greedy figures of a table over every start/goal pair;
- :func:`td_update`, :func:`table_rows`: the update and the table's indexing.
"""

from doors_gym_qtable.qlearning import (
    Evaluation,
    Metrics,
    QConfig,
    QHyperparameters,
    Runner,
    TrainOutput,
    TrainParts,
    greedy_evaluation,
    make_parts,
    make_train,
    table_rows,
    td_update,
)

__version__ = "0.1.0"

__all__ = [
    "Evaluation",
    "Metrics",
    "QConfig",
    "QHyperparameters",
    "Runner",
    "TrainOutput",
    "TrainParts",
    "greedy_evaluation",
    "make_parts",
    "make_train",
    "table_rows",
    "td_update",
]
