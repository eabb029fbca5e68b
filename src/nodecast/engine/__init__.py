"""The engine both clients share: the discrete-event kernel, the fluid network and its compiled port,
the platform (memory nodes, links, routes), and the replay of an OpGraph with per-op durations.
"""
