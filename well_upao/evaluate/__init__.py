"""Evaluation: metrics under both VRMSE definitions, classical baselines, tables and figures."""
