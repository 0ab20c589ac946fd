"""Trace replay (`vipu simulate`): traces read into jobs, replayed in virtual time by the live controller's scheduler
and driver, and the figures reported per policy."""
