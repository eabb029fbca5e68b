"""Run contention scenarios in SimGrid and print completion times (the test oracle).

Run with Debian's interpreter, which imports ``simgrid`` (python3-simgrid 3.32):

    /usr/bin/python3 tests/sim/simgrid_oracle.py scenario.json

The JSON holds ``links`` ([{"bw": bytes/s, "lat": s}]), ``hosts`` (names),
``routes`` ([{"src", "dst", "links": [link index...]}]) and ``flows``
([{"name", "src", "dst", "size": bytes (int), "start": s, "sleep": s,
"rate": bytes/s (optional)}]). Each flow is one actor on its source host that
sleeps until ``start + sleep`` and then sends ``size`` bytes with
``Comm.sendto`` (or, with a ``rate``, a mailbox comm capped by
``Comm.set_rate``, which SimGrid 3.32 accepts only on a comm made by
``Mailbox.put_init``; a receiver actor waits on the destination from time 0);
the time its send returns is printed as JSON ``{"name": completion time (s)}``. Several independent
scenarios can share one platform as long as their hosts and links are
disjoint. This file deliberately imports nothing from nodecast.
"""

import json
import os
import sys
import tempfile

import simgrid
from simgrid import Actor, Comm, Engine, Host, Mailbox, this_actor

CONFIG = [
    "--cfg=network/model:CM02",
    "--cfg=network/latency-factor:1",
    "--cfg=network/bandwidth-factor:1",
    "--cfg=network/weight-S:0",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/TCP-gamma:0",
    "--cfg=maxmin/precision:1e-9",
    "--cfg=surf/precision:1e-12",
    "--log=root.thres:critical",
]


def platform_xml(spec):
    lines = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        ' <zone id="z" routing="Full">',
    ]
    for name in spec["hosts"]:
        lines.append(f'  <host id="{name}" speed="1f"/>')
    for i, link in enumerate(spec["links"]):
        lines.append(f'  <link id="l{i}" bandwidth="{link["bw"]!r}Bps" latency="{link["lat"]!r}s"/>')
    for route in spec["routes"]:
        lines.append(f'  <route src="{route["src"]}" dst="{route["dst"]}" symmetrical="NO">')
        for link in route["links"]:
            lines.append(f'   <link_ctn id="l{link}"/>')
        lines.append("  </route>")
    lines += [" </zone>", "</platform>"]
    return "\n".join(lines) + "\n"


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    engine = Engine(["oracle", *CONFIG])
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as xml:
        xml.write(platform_xml(spec))
    try:
        engine.load_platform(xml.name)
    finally:
        os.unlink(xml.name)
    done = {}

    def sender(name, src, dst, size, when, rate):
        this_actor.sleep_until(when)
        if rate is None:
            Comm.sendto(Host.by_name(src), Host.by_name(dst), size)
        else:
            comm = Mailbox.by_name(name).put_init(name, size)
            comm.set_rate(rate)
            comm.wait()
        done[name] = Engine.clock

    def receiver(name):
        Mailbox.by_name(name).get()

    for flow in spec["flows"]:
        when = flow["start"] + flow.get("sleep", 0.0)
        Actor.create(flow["name"], Host.by_name(flow["src"]), sender, flow["name"], flow["src"], flow["dst"], int(flow["size"]), when,
                     flow.get("rate"))
        if flow.get("rate") is not None:
            Actor.create(flow["name"] + "-recv", Host.by_name(flow["dst"]), receiver, flow["name"])
    engine.run()
    json.dump({"simgrid": simgrid.simgrid_version if hasattr(simgrid, "simgrid_version") else None, "done": done}, sys.stdout)


if __name__ == "__main__":
    main()
