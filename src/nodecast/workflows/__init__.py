"""Workflows: forecast, replay, evaluate, kernels, simulate sweeps and references, characterize, convert.
Each returns one result object that ``nodecast.report`` renders; the CLI only parses and prints.
"""
