"""The sweep report: its data (data.py), plots (plots.py) and rendering to markdown and HTML
(render.py). Every sentence is computed from the results; nothing is written by hand."""

from __future__ import annotations

from .content import SERVING_FOLDER, ReportData, points_of, report_data
from .render import write_report

__all__ = ["SERVING_FOLDER", "ReportData", "points_of", "report_data", "write_report"]
