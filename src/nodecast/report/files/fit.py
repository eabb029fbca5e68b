"""``nodecast fit-kernels --json``: the leave-one-GPU-out error tables, what the fit saw, where it was written."""

from __future__ import annotations

from typing import Any

from nodecast.fit.workflow import KernelFit
from nodecast.report.files import document


@document.register(KernelFit)
def _(fit: KernelFit, **_options: Any) -> dict[str, Any]:
    return {"command": "fit-kernels", **fit.to_dict()}
