"""The engine both clients share: the discrete-event kernel, the fluid network and its compiled port,
the platform (memory nodes, links, routes), and the replay of an OpGraph with per-op durations.

Modules (one concern each):

``events``            the discrete-event kernel (``Environment``)
``network``           the fluid network: flows share links max-min (the reference, checked against SimGrid)
``network_compiled``  its compiled port for bounded max-min flows (numba), used by the replay's event loop
``links``             the one link-time rule: a copy's time alone on a route, and a machine's links and routes
``platform``          ``Platform``: memory nodes, links, routes, StarPU's bus calibration, what-ifs
``replay``            the single pass of an OpGraph (per-op durations, dependency order)
``copy_routes``       which copies of a graph cross which links of a platform (``copy_links``)
``gpu_units``         the copy engines and kernel slots an op may wait for
``event_replay``      the replay when copies share links or wait for units: which path, and the event path
``compiled``          the event path's loop compiled (numba)
``metrics``           whole-program times of a schedule: end to end, GPU-busy per device, the critical path
"""
