"""Costs on the target node: the model-chain options, the per-op projection of a trace, and the kernel
models a task-graph simulation runs on. Every duration comes from the model registry (``nodecast.models``).
"""
