"""Machine names as people type them on the command line: ``H100``, ``h100 sxm``, ``A100 80GB``, ``MI300X``, ``h100x8``.

``--to`` and ``--from`` take a catalogue node, a machine file or a spec
string ``GPU[xN][@HOST]`` whose GPU is a data-sheet key or a device name as a
profiler writes it (``nodecast.machines.names``). People type shorter and
looser forms; this module maps them onto those canonical names, or says which
canonical names they could mean:

1. a catalogue node or a sheet key in any case (``H200-Node``, ``H100-SXM5-80GB``);
2. words: the typed text is split into words (letters and digits; ``80 GB``
   is one word, ``80gb``), brand words (``NVIDIA``, ``GeForce``, ``Tesla``,
   ``AMD``) are dropped, and a data sheet matches when every typed word starts
   one of the words of its key, product name or device names (``H100 SXM``
   matches ``h100-sxm5-80gb``; ``H100`` matches both H100 sheets);
3. a trailing ``xN`` is a GPU count and ``@HOST`` a host key, as in spec strings;
4. ``node``/``server`` among the words restricts the match to catalogue
   nodes (``h200 node`` is ``h200-node``).

One sheet matched is the answer (composed as ``KEY[xN][@HOST]``); two or
more are an error listing every sheet and catalogue node the words match,
so the user picks one; none returns None and the caller says what is known.
Nothing is matched by edit distance: a guess between two GPUs would give
one of them a forecast made for the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from nodecast.errors import InputError
from nodecast.machines.device_names import BRAND_WORDS
from nodecast.machines.parts import GpuSheet

#: Largest GPU count a spec string may ask for (a full NVL72 rack is 72). Defined here, where typed counts are read,
#: and used by ``nodecast.machines.compose``, which reads spec strings and builds on this module.
MAX_SPEC_GPUS = 72
#: Words that ask for a catalogue node (a whole machine) rather than a GPU composed with the default host.
NODE_WORDS = frozenset({"node", "nodes", "server", "system"})
_WORD = re.compile(r"[a-z0-9]+")
#: ``80 GB``, ``141 G`` -> one word, as sheets write it (``80gb``).
_SIZE = re.compile(r"(?<![a-z0-9])([0-9]+)\s*(gb|g)(?![a-z0-9])")
#: A trailing GPU count: ``h100x8``, ``H100 x 8``, ``A100*4``, ``h100×8``.
_COUNT = re.compile(r"^(?P<gpu>.*?[^\sx×*])\s*[x×*]\s*(?P<count>[0-9]+)$", re.IGNORECASE)


def typed_words(text: str) -> list[str]:
    """``'NVIDIA H100 80 GB'`` -> ``['h100', '80gb']``: lower case, sizes joined, brand words dropped."""
    words = _WORD.findall(_SIZE.sub(r"\1gb", text.lower()))
    return [w for w in words if w not in BRAND_WORDS]


def _sheet_words(sheet: GpuSheet) -> set[str]:
    words: set[str] = set()
    for name in (sheet.key, sheet.name, *sheet.device_names):
        words.update(typed_words(name))
    return words


def _matches(wanted: Sequence[str], words: Iterable[str]) -> bool:
    """Every wanted word starts one of ``words`` (``sxm`` starts ``sxm5``, ``h100`` is ``h100``)."""
    words = tuple(words)
    return bool(wanted) and all(any(w.startswith(t) for w in words) for t in wanted)


def _case_insensitive(text: str, names: Iterable[str]) -> str | None:
    lowered = text.strip().lower()
    hits = [n for n in names if n.lower() == lowered]
    return hits[0] if len(hits) == 1 else None


def resolve_typed_name(text: str, nodes: Sequence[str], sheets: Sequence[GpuSheet],
                       hosts: Sequence[str] = ()) -> str | None:
    """The canonical machine name ``text`` stands for (a catalogue node, or a spec ``KEY[xN][@HOST]``); None if none.

    ``nodes`` are the catalogue node names, ``sheets`` the loadable data
    sheets, ``hosts`` the host keys (for ``@HOST`` typed in another case).
    Raises InputError when the words match two or more sheets (or nodes),
    listing them all.
    """
    node = _case_insensitive(text, nodes)
    if node is not None:
        return node
    gpu_text, at, host_text = text.partition("@")
    host = ""
    if at:
        host = _case_insensitive(host_text, hosts) or host_text.strip()
    suffix = f"@{host}" if at else ""
    keys = [s.key for s in sheets]
    key = _case_insensitive(gpu_text, keys)
    if key is not None:
        return key + suffix
    words = typed_words(gpu_text)
    if NODE_WORDS & set(words) and not at:
        wanted = [w for w in words if w not in NODE_WORDS]
        hits = [n for n in nodes if _matches(wanted, typed_words(n))]
        if len(hits) > 1:
            raise _ambiguous(text, [], hits)
        return hits[0] if hits else None
    found = _sheets_for(words, sheets)
    count = ""
    if not found:
        m = _COUNT.match(gpu_text.strip())
        if m is None:
            return None
        if not 1 <= int(m.group("count")) <= MAX_SPEC_GPUS:
            return None  # not a count the caller could compose; its own error names the text
        count = f"x{int(m.group('count'))}"
        gpu_text = m.group("gpu")
        key = _case_insensitive(gpu_text, keys)
        words = typed_words(gpu_text)
        found = [s for s in sheets if s.key == key] if key is not None else _sheets_for(words, sheets)
    if len(found) > 1:
        raise _ambiguous(text, [s.key for s in found], [n for n in nodes if _matches(words, typed_words(n))])
    return f"{found[0].key}{count}{suffix}" if found else None


def _sheets_for(words: Sequence[str], sheets: Sequence[GpuSheet]) -> list[GpuSheet]:
    """Sheets whose words the typed words start, or whose key or a name the typed words, run together, start
    (``h100sxm`` starts ``h100sxm580gb``)."""
    joined = "".join(words)

    def runs_together(sheet: GpuSheet) -> bool:
        return bool(joined) and any("".join(typed_words(n)).startswith(joined)
                                    for n in (sheet.key, sheet.name, *sheet.device_names))

    return [s for s in sheets if _matches(words, _sheet_words(s)) or runs_together(s)]


def _ambiguous(text: str, keys: Sequence[str], nodes: Sequence[str]) -> InputError:
    parts = []
    if keys:
        parts.append(f"GPUs {', '.join(sorted(keys))}")
    if nodes:
        parts.append(f"nodes {', '.join(sorted(nodes))}")
    return InputError(f"{text!r} could mean {'; '.join(parts)}", key="machine",
                      hint="Name one of them (a GPU alone is composed with the default host: GPU[xN][@HOST])")
