"""Refit the step-time model's constants to the published runs and write llmmath/data/calibration.json.

    python3 scripts/calibrate.py     # (with the project's .venv) about a minute on 2 cores

Run it after changing llmmath/data/measured_runs.json or the step-time model; tests/test_steptime.py
fails while the stored table is not the fit of the current rows.
"""

from llmmath.calibration import _write

if __name__ == "__main__":
    _write()
