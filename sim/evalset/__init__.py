"""Evaluation sets: the scenarios and episodes a submission is scored on, and the commitment that pins them.

An evaluation set is a TOML file (the format is documented in ``hidden_seeds/README.md``)::

    format = "layersched-evalset"
    version = 1
    name = "sample"

    [catalogs.hidden-a]             # optional: catalogs other than the built-in ones
    kind = "synthetic"              # or "file" (with file = "catalogs/x.json", relative to this file)
    key = "<64 hex digits>"         # secret; or seed = 7 for a public synthetic catalog
    n_images = 80

    [[scenario]]
    name = "lab-300"
    weight = 1.0
    catalog = "lab"                 # a built-in name or a key of [catalogs]
    n_tasks = 300
    episodes = [{ seed = 0 }, { id = "h1", split = "private", key = "<hex>" }]

The **commitment** is the SHA-256 of the set's canonical form (``canonical_json`` of ``EvalSet.canonical()``):
every key, seed, parameter and the content hash of every built-in or file catalog. Organisers publish it
before the challenge and the file after it; ``verify_evalset`` lets anyone check that nothing changed in between.

A *template* (``template = true``) has the same layout but asks for keys instead of holding them:
``generate = {public = 5, private = 20}`` in a scenario and ``key = "generate"`` in a synthetic catalog.
``new_evalset`` turns it into a real set with fresh keys, written where git ignores it.

A set names its track (``track = "layers-v1"``; absent means ``layers-v1``, and only another track is part of
the canonical form, so every commitment made before tracks existed still holds). What a ``[[scenario]]`` table says
beyond ``name``, ``weight`` and ``episodes``, and top-level tables such as ``[catalogs]``, are the track's: it
parses, checks, commits to and writes them (``layersched.sim.tracks.interface.ScenarioSchema``; the lab's are in
``layersched.sim.tracks.layers_v1.schema``). Nothing here knows a track by name.

The package is cut by idea, and re-exports the public names so callers keep importing from
``layersched.sim.evalset``: ``model`` (the validated set, its canonical form and commitment), ``scenarios`` (a
``[[scenario]]`` table's shared part), ``parse`` (loading and verifying a file), ``builtin`` (the sets shipped in
the package), ``writing`` (dumping a set, filling a template) and ``runs`` (in-process runs through the track and
the baselines' cached records). The value readers, shared with the tracks' schemas, are
``layersched.sim.tracks.values``.
"""

from layersched.sim.evalset.builtin import BUILTIN_SETS, SAMPLE_PATH
from layersched.sim.evalset.model import FORMAT, FORMAT_VERSION, SPLITS, EvalJob, EvalScenario, EvalSet, iter_keys
from layersched.sim.evalset.parse import evalset_file, load_evalset, parse_evalset, verify_evalset
from layersched.sim.evalset.runs import (
    EpisodeRecord,
    baseline_bundle_id,
    baseline_scores,
    evaluate_policy,
    paired_scenarios,
    score_baselines,
)
from layersched.sim.evalset.writing import KEY_BYTES, dump_evalset, new_evalset
from layersched.sim.tracks.values import GENERATE

__all__ = [
    "BUILTIN_SETS",
    "FORMAT",
    "FORMAT_VERSION",
    "GENERATE",
    "KEY_BYTES",
    "SAMPLE_PATH",
    "SPLITS",
    "EpisodeRecord",
    "EvalJob",
    "EvalScenario",
    "EvalSet",
    "baseline_bundle_id",
    "baseline_scores",
    "dump_evalset",
    "evalset_file",
    "evaluate_policy",
    "iter_keys",
    "load_evalset",
    "new_evalset",
    "paired_scenarios",
    "parse_evalset",
    "score_baselines",
    "verify_evalset",
]
