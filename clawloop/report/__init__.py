"""The loop's report: collect (figures from runs/), plots, ablations, render (templates).

`clawloop.report.build.write_report` puts them together with the trajectory viewer.
"""
