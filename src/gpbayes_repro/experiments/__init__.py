"""Experiment-level functions called by the workflow scripts (one per rule)."""
