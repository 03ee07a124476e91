"""The policy's view of a ``ClusterEnv``: scratch space that every decision starts from as the true state.

The sandbox hands a policy a replica of the environment (``env``), which the policy may change as it likes: a
lookahead that places a task to see what happens, a policy that zeroes a node's ``slots`` or rebinds ``env.nodes``.
None of that may change what it sees at its next decision. ``TrueView`` keeps the authoritative replica (``truth``,
never handed out) and the ``view`` the policy gets; the view is built of *watched* containers (lists, dicts, nodes
and the environment itself) whose every write sets the view's dirty flag. After each decision the keeper places the
task on both if the view is clean (the two then stay equal), or rebuilds the view from the truth if the policy wrote
to it. Checking costs one attribute read per decision, whatever the size of the state; reads of the view run as
fast as ever (the observe C kernel aside: it only takes exact lists, so the view takes observe()'s Python loop,
which is what the sandbox image runs anyway).

What the flag does not see, and so does not repair: writes that bypass the containers' own methods
(``list.__setitem__(env.nodes[0].slots, 0, 0.0)``, ``object.__setattr__``, ctypes), changes to classes
(``ClusterEnv.estimate = ...``: that is changing the code, not the view), and the lazily filled plan cache
(``env._plans``, ``env._stale``), which observe() and estimate() fill as they read. Copies a policy makes
(``copy.deepcopy(env)``, ``list(node.slots)``) are its own: writing to them never makes the view dirty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from layersched.sim.tracks.layers_v1.env import ClusterEnv, Node
from layersched.sim.tracks.layers_v1.workload import Task

if TYPE_CHECKING:
    import numpy as np


class _Flag:
    """Whether anything wrote to one view since the keeper last brought it in line with the truth."""

    __slots__ = ("dirty",)

    def __init__(self) -> None:
        self.dirty = False


def _mark(watched: Any) -> None:
    # A copy being built has no flag yet (unpickling fills a container before its slots). A try costs nothing
    # when it does not raise; contextlib.suppress would cost a call on every write.
    try:  # noqa: SIM105
        watched._flag.dirty = True
    except AttributeError:
        pass


def _marking(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of a watched container, setting the container's flag before it runs."""

    def marked(self: Any, *args: Any, **kwargs: Any) -> Any:
        _mark(self)
        return method(self, *args, **kwargs)

    marked.__name__ = method.__name__
    marked.__doc__ = method.__doc__
    return marked


class WatchedList(list[Any]):
    """A list of the view: reads as a list does, every in-place change marks the view dirty."""

    __slots__ = ("_flag",)
    _flag: _Flag

    # The writes place() makes on every decision, spelt out: they cost half of what the generic wrapper does.
    def __setitem__(self, index: Any, value: Any) -> None:
        _mark(self)
        list.__setitem__(self, index, value)

    def append(self, value: Any) -> None:
        _mark(self)
        list.append(self, value)


class WatchedDict(dict[Any, Any]):
    """A dict of the view: reads as a dict does, every in-place change marks the view dirty."""

    __slots__ = ("_flag",)
    _flag: _Flag

    def __setitem__(self, key: Any, value: Any) -> None:
        _mark(self)
        dict.__setitem__(self, key, value)


_LIST_WRITES = [
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
]
_DICT_WRITES = ["__setitem__", "__delitem__", "__ior__", "pop", "popitem", "clear", "update", "setdefault"]
for _name in _LIST_WRITES:
    if _name not in WatchedList.__dict__:
        setattr(WatchedList, _name, _marking(getattr(list, _name)))
for _name in _DICT_WRITES:
    if _name not in WatchedDict.__dict__:
        setattr(WatchedDict, _name, _marking(getattr(dict, _name)))


class _WatchedAttributes:
    """Setting or deleting any attribute marks the view dirty."""

    __slots__ = ("_flag",)
    _flag: _Flag

    def __setattr__(self, name: str, value: Any) -> None:
        _mark(self)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        _mark(self)
        super().__delattr__(name)


class WatchedNode(_WatchedAttributes, Node):
    """A node of the view: a ``Node`` whose attribute writes mark the view dirty."""

    __slots__ = ()


class WatchedEnv(_WatchedAttributes, ClusterEnv):
    """The environment a policy gets: a ``ClusterEnv`` whose attribute writes mark it dirty."""

    __slots__ = ()


def _wlist(items: Any, flag: _Flag) -> WatchedList:
    out = WatchedList(items)
    out._flag = flag
    return out


def _wdict(items: Any, flag: _Flag) -> WatchedDict:
    out = WatchedDict(items)
    out._flag = flag
    return out


def _frozen_masks(fits: list[list[bool]]) -> list[np.ndarray[Any, Any]]:
    """Each row of ``fits`` as a read-only bool array over an immutable bytes buffer: neither the array nor its base
    can be made writeable again."""
    # numpy imported here, not with the module: the track's package imports this module, and the lab's table, which
    # imports the package, never needs numpy (tests/sim/layers/test_lean_episode.py).
    import numpy

    frozen = []
    for row in fits:
        mask = numpy.array(row)
        frozen.append(numpy.frombuffer(mask.tobytes(), dtype=mask.dtype).reshape(mask.shape))
    return frozen


def watched_copy(truth: ClusterEnv) -> WatchedEnv:
    """A view equal to ``truth`` sharing no mutable object with it; its plan cache starts empty (plans are a pure
    function of the nodes' layers, so the answers are the same)."""
    flag = _Flag()
    view = WatchedEnv.__new__(WatchedEnv)
    object.__setattr__(view, "_flag", flag)
    t = truth.__dict__
    nodes = []
    for node in truth.nodes:
        copy = WatchedNode.__new__(WatchedNode)
        object.__setattr__(copy, "_flag", flag)
        copy.__dict__.update(
            node.__dict__,
            slots=_wlist(node.slots, flag),
            layers=_wdict(node.layers, flag),
            in_use=_wdict(node.in_use, flag),
        )
        nodes.append(copy)
    state = [_wlist(s, flag) for s in truth._state]
    n_nodes = truth.n_nodes
    view.__dict__.update(
        t,
        images=_wlist(
            (
                _wdict({**image, "layers": _wlist((_wdict(la, flag) for la in image["layers"]), flag)}, flag)
                for image in truth.images
            ),
            flag,
        ),
        size=_wdict(truth.size, flag),
        image_mb=_wlist(truth.image_mb, flag),
        _image_layers=_wlist(truth._image_layers, flag),
        _image_digests=_wlist(truth._image_digests, flag),
        _images_with_layer=_wdict(truth._images_with_layer, flag),
        nodes=_wlist(nodes, flag),
        tasks=_wlist(truth.tasks, flag),  # Task is frozen: shared
        completion=_wlist(truth.completion, flag),
        _state=_wlist(state, flag),
        _used=_wlist(truth._used, flag),
        _layer_mb=_wlist((_wdict(mb, flag) for mb in truth._layer_mb), flag),
        _plans=[[None] * n_nodes for _ in truth.image_mb],
        _stale=[list(range(n_nodes)) for _ in truth.image_mb],
        _held_mb=[[0.0] * n_nodes for _ in truth.image_mb],  # filled beside each plan, which starts empty too
        _fits=_wlist((_wlist(row, flag) for row in truth._fits), flag),
        _feasible_nodes=_wlist((_wlist(f, flag) for f in truth._feasible_nodes), flag),
        # Built now, not by the first mask() call: that call's assignment would mark the view written.
        _masks=_wlist(_frozen_masks(truth._fits), flag),
    )
    return view


class TrueView:
    """The authoritative replica and the policy's view of it, kept equal at every decision.

    Per decision: ``arrive(task, step)``, hand ``view`` to the policy, then ``place(task, n)`` with the action the
    trusted side applies. While the policy leaves its view alone, the view *is* the true state and is the only one
    updated (a clean policy pays no second placement); the truth lags behind and catches up on the placements it
    missed only when a written view has to be rebuilt from it. ``resyncs`` counts those rebuilds.
    """

    def __init__(self, truth: ClusterEnv) -> None:
        self.truth = truth
        self.view = watched_copy(truth)
        self.resyncs = 0
        self._missed: list[tuple[Task, int]] = []  # placements the truth has not applied yet, in order

    def arrive(self, task: Task, step: int) -> None:
        """The next task is the current one, in the truth and in the view."""
        truth = self.truth
        truth.tasks.append(task)
        truth.k = step
        view = self.view
        if view._flag.dirty:  # written to since the last place (only a thread of the policy can): start from the truth
            self.resync()
            return
        view.tasks.append(task)
        view.k = step
        view._flag.dirty = False

    def place(self, task: Task, n: int) -> None:
        """Apply the trusted side's action: to the view if the policy left it untouched, else rebuild the view."""
        self._missed.append((task, n))
        self.truth.k += 1
        view = self.view
        if view._flag.dirty:
            self.resync()
            return
        try:
            ClusterEnv.place(view, task, n)
            view.k += 1
        except Exception:  # only a write the flag did not see can break a clean view's update
            self.resync()
            return
        view._flag.dirty = False

    def resync(self) -> None:
        """Bring the truth up to date and replace the view by a fresh copy of it (rebinding ``env.nodes`` and the
        like is repaired too)."""
        truth = self.truth
        for task, n in self._missed:
            ClusterEnv.place(truth, task, n)
        self._missed.clear()
        self.view = watched_copy(truth)
        self.resyncs += 1
