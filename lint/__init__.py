"""Checks of the code's shape that `make lint` runs beside ruff, mypy and deptry."""
