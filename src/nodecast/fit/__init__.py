"""Fitting models from measurements: the learned kernel model from cross-GPU corpora and users' op tables."""
