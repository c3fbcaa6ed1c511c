"""A tuning study's summary: the Optuna plots and the best trial on its MLflow parent run, and a summary folder
(``summary.md``, ``summary.json``, the history and importance plots)."""

from __future__ import annotations

import math
import pathlib
import warnings
from typing import Any

import numpy as np

from ..tracking import retry_creation_race

STUDY_PLOTS = ("optimization_history", "param_importances", "contour")
SUMMARY_PLOTS = ("optimization_history", "param_importances")
"""The plots of a summary folder."""


def complete_trials(study: Any) -> list[Any]:
    """The study's complete trials."""
    import optuna

    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def param_importances(study: Any, complete: list[Any]) -> dict[str, float]:
    """Optuna's parameter importances, most important first; empty before two complete trials, or when Optuna
    cannot tell them apart."""
    import optuna

    if len(complete) < 2:
        return {}
    try:
        return dict(optuna.importance.get_param_importances(study))
    except (RuntimeError, ValueError):
        return {}


def matplotlib_figure(study: Any, name: str, **kwargs: Any) -> Any:
    """Optuna's matplotlib plot ``plot_<name>`` of the study, as its figure."""
    import optuna.visualization.matplotlib as matplotlib_plots

    axes = getattr(matplotlib_plots, f"plot_{name}")(study, **kwargs)
    return np.asarray(axes).flat[0].figure


def log_study_plots(study: Any) -> list[str]:
    """Logs the Optuna plots (HTML and PNG), best params and value on the active (parent) run.

    Returns the artifact paths written. A plot that cannot be drawn yet (too
    few complete trials) is replaced by a ``.txt`` artifact saying why.
    """
    import optuna

    complete = complete_trials(study)
    finished = study.get_trials(
        deepcopy=False, states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    )
    written = []
    if complete:
        written += log_best_trial(study, len(finished))
    importances = param_importances(study, complete)
    contour_params = list(importances)[:3] if len(importances) >= 2 else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in STUDY_PLOTS:
            written += log_study_plot(study, name, contour_params)
    return written


def log_best_trial(study: Any, finished: int) -> list[str]:
    """Logs the best trial on the active run: its value and the finished trials as metrics, its params and run
    as ``best.*`` tags, everything in ``best_params.json``; returns the artifact paths written."""
    import mlflow

    best = study.best_trial
    tags = {f"best.{key}": str(value) for key, value in best.params.items()}
    tags.update({"best.trial": str(best.number), "best.mlflow_run_id": best.user_attrs.get("mlflow_run_id", "")})

    def summarise() -> None:
        mlflow.log_metrics({"best_value": best.value, "finished_trials": float(finished)}, step=len(study.trials))
        mlflow.set_tags(tags)

    # Workers share the parent run: two that set a new tag at once collide in the store (a UNIQUE
    # constraint); the loser's second try finds the tag and updates it.
    retry_creation_race(summarise)
    mlflow.log_dict(
        {"trial": best.number, "value": best.value, "params": best.params, "user_attrs": best.user_attrs},
        "best_params.json",
    )
    return ["best_params.json"]


def log_study_plot(study: Any, name: str, contour_params: list[str] | None) -> list[str]:
    """Logs one of :data:`STUDY_PLOTS` on the active run, as HTML (plotly) and PNG, or a ``.txt`` saying why it
    cannot be drawn yet; returns the artifact paths written."""
    import matplotlib.pyplot as plt  # Optuna's plots draw with pyplot, on whichever backend it picks
    import mlflow
    import optuna.visualization as plotly_plots

    kwargs = {"params": contour_params} if name == "contour" and contour_params else {}
    try:
        if name == "contour" and not contour_params:
            raise ValueError("a contour needs two complete trials and two varying params")
        figure = getattr(plotly_plots, f"plot_{name}")(study, **kwargs)
        mlflow.log_text(figure.to_html(include_plotlyjs=True, full_html=True), f"plots/{name}.html")
        mpl_figure = matplotlib_figure(study, name, **kwargs)
        if name == "contour":  # Optuna places the colour bar itself; tight_layout would cover the plots
            mpl_figure.set_size_inches(13, 11)
        else:
            mpl_figure.set_size_inches(11, 6)
            mpl_figure.tight_layout()
        mlflow.log_figure(mpl_figure, f"plots/{name}.png")
        plt.close(mpl_figure)
        return [f"plots/{name}.html", f"plots/{name}.png"]
    except (ValueError, RuntimeError, ZeroDivisionError) as error:
        mlflow.log_text(f"{name} not drawn: {error}\n", f"plots/{name}.txt")
        return [f"plots/{name}.txt"]


def write_study_summary(study: Any, folder: str | pathlib.Path) -> dict[str, pathlib.Path]:
    """Writes a study's summary under ``folder``: ``summary.md`` and ``summary.json`` (the best trial, the
    counts by state, the parameter importances) and the history and importance plots (PNG); returns the paths."""
    import json

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    complete = complete_trials(study)
    importances = param_importances(study, complete)
    best = study.best_trial if complete else None
    summary = study_summary(study, best, importances)
    paths = {"json": folder / "summary.json", "markdown": folder / "summary.md"}
    paths["json"].write_text(json.dumps(summary, indent=1, default=str) + "\n")
    lines = [
        f"# Study `{study.study_name}`",
        "",
        f"Objective: {summary['objective']} ({summary['direction']}); trials: "
        + ", ".join(f"{count} {state.lower()}" for state, count in summary["trials"].items())
        + ".",
        "",
    ]
    if best is not None:
        lines += best_trial_lines(best, importances)
    if summary["confirmed"]:
        lines += confirmed_lines(summary["confirmed"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in SUMMARY_PLOTS:
            if not complete or (name == "param_importances" and not importances):
                continue
            paths[name] = save_summary_plot(study, name, folder)
            lines.append(f"![{name}]({name}.png)")
    paths["markdown"].write_text("\n".join(lines) + "\n")
    return paths


def study_summary(study: Any, best: Any, importances: dict[str, float]) -> dict[str, Any]:
    """The content of ``summary.json``: the study, its counts by state, its best trial, the parameter
    importances, and its confirmed trials, best mean score first."""
    states = [trial.state.name for trial in study.trials]
    return {
        "study": study.study_name,
        "arm": study.user_attrs.get("arm"),
        "objective": study.user_attrs["objective"],
        "direction": study.direction.name.lower(),
        "trials": {
            state: states.count(state) for state in ("COMPLETE", "PRUNED", "FAIL", "RUNNING") if state in states
        },
        "best": (
            None
            if best is None
            else {"trial": best.number, "value": best.value, "params": best.params, "user_attrs": best.user_attrs}
        ),
        "importances": {name: round(value, 4) for name, value in importances.items()},
        "confirmed": sorted(
            (value for key, value in study.user_attrs.items() if key.startswith("confirm.")),
            key=lambda found: float(np.mean(found["scores"])) * (-1 if study.direction.name == "MAXIMIZE" else 1),
        ),
    }


def best_trial_lines(best: Any, importances: dict[str, float]) -> list[str]:
    """The best trial in ``summary.md``: its score, seed and times, and its params by importance."""
    attrs = best.user_attrs
    return [
        f"Best trial {best.number}: score {best.value:.3f} (seed {attrs.get('seed', '?')}, "
        f"{attrs.get('seconds_to_solved') or '-'} s to solved, {attrs.get('wall_seconds', '-')} s wall).",
        "",
        "| parameter | best value | importance |",
        "|---|---:|---:|",
        *(
            (
                f"| {name} | {value:.4g} | {importances.get(name, math.nan):.3f} |"
                if isinstance(value, float)
                else f"| {name} | {value} | {importances.get(name, math.nan):.3f} |"
            )
            for name, value in sorted(best.params.items(), key=lambda item: -importances.get(item[0], 0.0))
        ),
        "",
    ]


def confirmed_lines(confirmed: list[dict[str, Any]]) -> list[str]:
    """The confirmed trials in ``summary.md``: their seeds, scores and mean, best first."""
    return [
        "The best trials re-trained on more tuning seeds (the preset is the first row: the best mean score):",
        "",
        "| trial | seeds | scores | mean |",
        "|---:|---|---|---:|",
        *(
            f"| {found['trial']} | {', '.join(map(str, found['seeds']))} "
            f"| {', '.join(f'{score:.1f}' for score in found['scores'])} | {np.mean(found['scores']):.1f} |"
            for found in confirmed
        ),
        "",
    ]


def save_summary_plot(study: Any, name: str, folder: pathlib.Path) -> pathlib.Path:
    """Saves Optuna's matplotlib plot ``name`` of the study as ``<folder>/<name>.png``; returns its path."""
    import matplotlib.pyplot as plt  # Optuna's plots draw with pyplot, on whichever backend it picks

    figure = matplotlib_figure(study, name)
    figure.set_size_inches(10, 5.5)
    figure.tight_layout()
    path = folder / f"{name}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
