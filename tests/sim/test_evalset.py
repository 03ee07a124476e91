"""Evaluation-set files: parsing, validation messages, commitments, templates and the baseline cache."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from layersched.sim import evalset as evalset_module
from layersched.sim.errors import EvalSetError
from layersched.sim.evalset import (
    EvalSet,
    dump_evalset,
    evaluate_policy,
    iter_keys,
    load_evalset,
    new_evalset,
    parse_evalset,
    score_baselines,
    verify_evalset,
)
from layersched.sim.evalset import runs as evalset_runs
from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.scenario import CloudNode
from layersched.sim.version import SIM_VERSION

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "hidden_seeds" / "sample.toml"
CHALLENGE = REPO / "hidden_seeds" / "challenge-example.toml"
# The sample set's commitment is published in hidden_seeds/README.md: if this changes, the canonical form or a
# built-in catalog changed, and every published commitment would stop verifying.
SAMPLE_COMMITMENT = "4eea9854e880b370ee76f9e2a453bfcc817417738adc157f89ebe8010e85f01d"

KEY_A = "00112233445566778899aabbccddeeff"
KEY_B = "ffeeddccbbaa99887766554433221100"

MINIMAL = """
format = "layersched-evalset"
version = 1
name = "t"

[[scenario]]
name = "s"
n_tasks = 20
episodes = [{ seed = 0 }]
"""


def write(tmp_path: Path, text: str, name: str = "set.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def with_scenario(extra: str, episodes: str = "[{ seed = 0 }]", header: str = "") -> str:
    return (
        'format = "layersched-evalset"\nversion = 1\nname = "t"\n'
        + header
        + f'\n[[scenario]]\nname = "s"\nn_tasks = 20\n{extra}\nepisodes = {episodes}\n'
    )


# ------------------------------------------------------------------------------------------------ the sample


def test_sample_set_loads() -> None:
    es = load_evalset(SAMPLE)
    assert [sc.name for sc in es.scenarios] == ["lab-300", "official-5n"]
    assert [len(sc.episodes) for sc in es.scenarios] == [3, 3]
    assert es.scenario("official-5n").scenario.catalog.name == "official-2023-01"
    assert es.scenario("official-5n").scenario.n_nodes == 5
    assert not es.hidden
    assert [(j.scenario_name, j.episode.id) for j in es.jobs("private")] == [
        ("lab-300", "seed2"),
        ("official-5n", "seed2"),
    ]
    assert len(es.jobs()) == 6
    assert len(es.jobs("public")) == 4


def test_sample_commitment_is_stable() -> None:
    assert load_evalset(SAMPLE).commitment == SAMPLE_COMMITMENT
    assert verify_evalset(SAMPLE, SAMPLE_COMMITMENT)
    assert verify_evalset(SAMPLE, "  " + SAMPLE_COMMITMENT.upper() + "\n")
    assert not verify_evalset(SAMPLE, "0" * 64)


def test_verify_rejects_a_malformed_commitment() -> None:
    with pytest.raises(EvalSetError) as exc:
        verify_evalset(SAMPLE, "abc")
    assert str(exc.value) == "a commitment is 64 hex digits (SHA-256), got 'abc'"


def test_jobs_rejects_unknown_split() -> None:
    with pytest.raises(EvalSetError) as exc:
        split: Any = "secret"
        load_evalset(SAMPLE).jobs(split)
    assert str(exc.value) == "split must be 'public' or 'private', got 'secret'"


def test_dump_round_trips_to_the_same_commitment(tmp_path: Path) -> None:
    es = load_evalset(SAMPLE)
    again = load_evalset(write(tmp_path, dump_evalset(es)))
    assert again.commitment == es.commitment
    assert again.canonical() == es.canonical()


# ------------------------------------------------------------------------------------------------ commitment


def test_commitment_ignores_formatting(tmp_path: Path) -> None:
    plain = load_evalset(write(tmp_path, with_scenario("n_nodes = 10\narrival_rate = 0.3"), "a.toml"))
    spelled = with_scenario(
        "# the same set, spelled differently\narrival_rate = 3e-1\nn_nodes = 10\nweight = 1\n"
        "cycles_g = [20, 80]\nnodes = { storage_gb = [5, 15] }",
        episodes='[{ split = "public", id = "seed0", seed = 0 }]',
    )
    assert load_evalset(write(tmp_path, spelled, "b.toml")).commitment == plain.commitment


@pytest.mark.parametrize(
    "change",
    [
        "arrival_rate = 0.31",
        "n_nodes = 11",
        "weight = 2.0",
        "cloud = true",
        "zipf_s = 0.9",
        'catalog = "official-2023-01"',
    ],
    ids=["rate", "nodes", "weight", "cloud", "zipf", "catalog"],
)
def test_commitment_changes_with_any_parameter(tmp_path: Path, change: str) -> None:
    base = load_evalset(write(tmp_path, MINIMAL, "a.toml")).commitment
    assert load_evalset(write(tmp_path, with_scenario(change), "b.toml")).commitment != base


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("[{ seed = 0 }]", "[{ seed = 1 }]"),
        ("[{ seed = 0 }]", '[{ seed = 0, split = "private" }]'),
        (f'[{{ id = "h", key = "{KEY_A}" }}]', f'[{{ id = "h", key = "{KEY_B}" }}]'),
        (f'[{{ id = "h", key = "{KEY_A}" }}]', f'[{{ id = "g", key = "{KEY_A}" }}]'),
    ],
    ids=["seed", "split", "key", "episode-id"],
)
def test_commitment_changes_with_any_episode(tmp_path: Path, before: str, after: str) -> None:
    a = load_evalset(write(tmp_path, with_scenario("", episodes=before), "a.toml"))
    b = load_evalset(write(tmp_path, with_scenario("", episodes=after), "b.toml"))
    assert a.commitment != b.commitment


def test_public_view_holds_no_key(tmp_path: Path) -> None:
    header = f'\n[catalogs.hid]\nkind = "synthetic"\nkey = "{KEY_B}"\nn_images = 12\n'
    text = with_scenario(
        'catalog = "hid"',
        episodes=f'[{{ seed = 3 }}, {{ id = "h", split = "private", key = "{KEY_A}" }}]',
        header=header,
    )
    es = load_evalset(write(tmp_path, text))
    assert es.hidden
    view = json.dumps(es.public_view())
    for key in iter_keys(es):
        assert key.hex() not in view
        assert key.hex() in json.dumps(es.canonical())
        assert key.hex() not in repr(es)
    assert es.public_view()["commitment"] == es.commitment
    episodes = es.public_view()["scenarios"][0]["episodes"]
    assert episodes == [
        {"id": "seed3", "split": "public", "seed": 3},
        {"id": "h", "split": "private", "hidden": True},
    ]
    assert es.public_view()["catalogs"]["hid"]["hidden"] is True


# ------------------------------------------------------------------------------------------------ catalogs


def test_synthetic_catalog_seed_zero_is_the_lab_catalog(tmp_path: Path) -> None:
    header = '\n[catalogs.regen]\nkind = "synthetic"\nseed = 0\n'
    es = load_evalset(write(tmp_path, with_scenario('catalog = "regen"', header=header)))
    assert es.scenarios[0].scenario.catalog.content_hash == load_catalog("lab").content_hash


def test_hidden_catalog_depends_on_its_key_and_structure(tmp_path: Path) -> None:
    def catalog_hash(key: str, extra: str = "") -> str:
        header = f'\n[catalogs.hid]\nkind = "synthetic"\nkey = "{key}"\n{extra}\n'
        path = write(tmp_path, with_scenario('catalog = "hid"', header=header))
        digest: str = load_evalset(path).scenarios[0].scenario.catalog.content_hash
        return digest

    assert catalog_hash(KEY_A) == catalog_hash(KEY_A)
    assert catalog_hash(KEY_A) != catalog_hash(KEY_B)
    assert catalog_hash(KEY_A) != load_catalog("lab").content_hash
    header = f'\n[catalogs.hid]\nkind = "synthetic"\nkey = "{KEY_A}"\nn_images = 7\napp_layers = [2, 2]\n'
    catalog = (
        load_evalset(write(tmp_path, with_scenario('catalog = "hid"', header=header))).scenarios[0].scenario.catalog
    )
    assert len(catalog.images) == 7


def test_file_catalog_is_relative_to_the_set_and_pinned(tmp_path: Path) -> None:
    (tmp_path / "cats").mkdir()
    shutil.copy(
        REPO / "sim" / "tracks" / "layers_v1" / "data" / "repoinfo_official_2023-01.json",
        tmp_path / "cats" / "official.json",
    )
    digest = load_catalog("official-2023-01").content_hash
    header = f'\n[catalogs.mine]\nkind = "file"\nfile = "cats/official.json"\nsha256 = "{digest}"\n'
    es = load_evalset(write(tmp_path, with_scenario('catalog = "mine"', header=header)))
    catalog = es.scenarios[0].scenario.catalog
    assert (catalog.name, catalog.content_hash) == ("mine", digest)
    assert es.canonical()["catalogs"] == {"mine": {"kind": "file", "sha256": digest}}
    # Moving the set and its catalog together keeps the commitment.
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "cats", moved / "cats")
    shutil.copy(tmp_path / "set.toml", moved / "set.toml")
    assert load_evalset(moved / "set.toml").commitment == es.commitment


def test_cloud_node_options(tmp_path: Path) -> None:
    on = load_evalset(write(tmp_path, with_scenario("cloud = true"), "a.toml"))
    assert on.scenarios[0].scenario.cloud == CloudNode()
    custom = load_evalset(write(tmp_path, with_scenario("cloud = { bandwidth_mbps = 50, freq_ghz = 3 }"), "b.toml"))
    assert custom.scenarios[0].scenario.cloud == CloudNode(50.0, 3.0)
    off = load_evalset(write(tmp_path, with_scenario("cloud = false"), "c.toml"))
    assert off.scenarios[0].scenario.cloud is None
    assert off.commitment == load_evalset(write(tmp_path, MINIMAL, "d.toml")).commitment


# ------------------------------------------------------------------------------------------------ errors

CASES = [
    (
        "top-unknown",
        'nmae = "x"\n' + MINIMAL,
        "top level: unknown key 'nmae' (allowed: catalogs, description, format, name, scenario, template, track, "
        "version)",
    ),
    ("format", MINIMAL.replace('"layersched-evalset"', '"other"'), "format must be 'layersched-evalset', got 'other'"),
    ("version", MINIMAL.replace("version = 1", "version = 2"), "version must be 1, got 2"),
    (
        "set-name",
        MINIMAL.replace('name = "t"', 'name = "a b"'),
        "evaluation set name must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, got 'a b'",
    ),
    (
        "no-scenario",
        'format = "layersched-evalset"\nversion = 1\nname = "t"\n',
        "an evaluation set needs at least one [[scenario]] table",
    ),
    (
        "scenario-unknown",
        with_scenario("n_node = 3"),
        "scenario 's': unknown key 'n_node' (allowed: arrival_rate, "
        "catalog, cloud, cycles_g, episodes, n_nodes, n_tasks, name, nodes, slots, weight, zipf_s)",
    ),
    ("weight", with_scenario("weight = -1"), "scenario 's': weight must be a positive finite number, got -1.0"),
    ("weight-type", with_scenario('weight = "1"'), "scenario 's': weight must be a finite number, got '1'"),
    ("n_nodes", with_scenario("n_nodes = 0"), "scenario 's': n_nodes must be an integer >= 1, got 0"),
    (
        "n_tasks-float",
        with_scenario("n_tasks = 2.5").replace("n_tasks = 20\n", ""),
        "scenario 's': n_tasks must be an integer >= 1, got 2.5",
    ),
    ("rate", with_scenario("arrival_rate = 0"), "scenario 's': arrival_rate must be a positive finite number, got 0.0"),
    ("pair", with_scenario("cycles_g = [1]"), "scenario 's': cycles_g must be a pair [lo, hi], got [1]"),
    (
        "range",
        with_scenario("nodes = { freq_ghz = [2, 1] }"),
        "scenario 's': nodes.freq_ghz must be a range 0 < lo <= hi, got (2.0, 1.0)",
    ),
    (
        "nodes-unknown",
        with_scenario("nodes = { cpu = [1, 2] }"),
        "scenario 's': nodes: unknown key 'cpu' (allowed: bandwidth_mbps, freq_ghz, storage_gb)",
    ),
    ("cloud", with_scenario('cloud = "yes"'), "scenario 's': cloud must be true, false or a table, got 'yes'"),
    (
        "storage",
        with_scenario("nodes = { storage_gb = [0.5, 1.0] }"),
        "scenario 's': image 'img09' of catalog 'lab' needs 1434.0 MB but no node can hold more than 1024 MB "
        "(nodes.storage_gb=(0.5, 1.0))",
    ),
    (
        "unknown-catalog",
        with_scenario('catalog = "nope"'),
        "scenario 's': unknown catalog 'nope'; use a built-in name "
        "(hub-top70-2023-07, lab, official-2023-01) or define it under [catalogs]",
    ),
    (
        "builtin-shadow",
        with_scenario("", header='\n[catalogs.lab]\nkind = "synthetic"\nseed = 1\n'),
        "catalog 'lab': this name is built in; choose another name",
    ),
    (
        "catalog-kind",
        with_scenario("", header='\n[catalogs.c]\nkind = "registry"\n'),
        "catalog 'c': kind must be 'file' or 'synthetic', got 'registry'",
    ),
    (
        "catalog-missing-file",
        with_scenario('catalog = "c"', header='\n[catalogs.c]\nkind = "file"\nfile = "no.json"\n'),
        "scenario 's': catalog 'c': file 'no.json' not found next to the set",
    ),
    (
        "catalog-seed-and-key",
        with_scenario("", header=f'\n[catalogs.c]\nkind = "synthetic"\nseed = 1\nkey = "{KEY_A}"\n'),
        "catalog 'c': give exactly one of 'key' (hidden) and 'seed' (public)",
    ),
    (
        "structure",
        with_scenario("", header='\n[catalogs.c]\nkind = "synthetic"\nseed = 1\nn_images = 0\n'),
        "catalog 'c': n_images must be an integer >= 1, got 0",
    ),
    (
        "structure-range",
        with_scenario("", header='\n[catalogs.c]\nkind = "synthetic"\nseed = 1\napp_mb = [5, 1]\n'),
        "catalog 'c': synthetic catalog: app_mb must be a range 0 <= lo <= hi, got (5.0, 1.0)",
    ),
    (
        "no-episodes",
        with_scenario("", episodes="[]"),
        "scenario 's': 'episodes' must be a non-empty list of {id, split, seed|key} tables",
    ),
    (
        "seed-and-key",
        with_scenario("", episodes=f'[{{ id = "x", seed = 1, key = "{KEY_A}" }}]'),
        "scenario 's' episode #0: give exactly one of 'key' (hidden) and 'seed' (public)",
    ),
    (
        "negative-seed",
        with_scenario("", episodes="[{ seed = -1 }]"),
        "scenario 's' episode #0: seed must be an integer >= 0, got -1",
    ),
    (
        "short-key",
        with_scenario("", episodes='[{ id = "x", key = "abcd" }]'),
        "scenario 's' episode #0: key must be at least 32 hex digits (128 bits), got 4",
    ),
    (
        "non-hex-key",
        with_scenario("", episodes='[{ id = "x", key = "not-hex-at-all!!" }]'),
        "scenario 's' episode #0: key must be lowercase hex digits, got a str of length 16",
    ),
    (
        "generate-key",
        with_scenario("", episodes='[{ id = "x", key = "generate" }]'),
        "scenario 's' episode #0: key = 'generate' is only allowed in a template",
    ),
    (
        "keyed-no-id",
        with_scenario("", episodes=f'[{{ key = "{KEY_A}" }}]'),
        "scenario 's' episode #0: a keyed episode needs an 'id'",
    ),
    (
        "split",
        with_scenario("", episodes='[{ seed = 1, split = "hidden" }]'),
        "scenario 's' episode #0: split must be 'public' or 'private', got 'hidden'",
    ),
    (
        "episode-unknown",
        with_scenario("", episodes="[{ seed = 1, weight = 2 }]"),
        "scenario 's' episode #0: unknown key 'weight' (allowed: id, key, seed, split)",
    ),
    (
        "dup-seed",
        with_scenario("", episodes='[{ seed = 1 }, { id = "again", seed = 1 }]'),
        "scenario 's' episode 'again': seed 1 is used twice in this scenario",
    ),
    (
        "dup-id",
        with_scenario("", episodes='[{ seed = 1 }, { id = "seed1", seed = 2 }]'),
        "scenario 's': episode id 'seed1' appears twice",
    ),
    (
        "dup-key",
        with_scenario("", episodes=f'[{{ id = "a", key = "{KEY_A}" }}, {{ id = "b", key = "{KEY_A}" }}]'),
        "scenario 's' episode 'b': key is already used by scenario 's' episode 'a'",
    ),
    (
        "dup-scenario",
        MINIMAL + '\n[[scenario]]\nname = "s"\nepisodes = [{ seed = 0 }]\n',
        "scenario name 's' appears twice",
    ),
]


@pytest.mark.parametrize(("text", "message"), [(t, m) for _, t, m in CASES], ids=[c[0] for c in CASES])
def test_validation_errors_name_the_value(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: {message}"


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError) as exc:
        load_evalset(tmp_path / "missing.toml")
    assert str(exc.value) == f"cannot read evaluation set {tmp_path / 'missing.toml'}: No such file or directory"
    path = write(tmp_path, "name = ")
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value).startswith(f"{path}: not valid TOML (")


def test_pinned_file_catalog_must_match(tmp_path: Path) -> None:
    shutil.copy(REPO / "sim" / "tracks" / "layers_v1" / "data" / "lab_seed0.json", tmp_path / "c.json")
    header = f'\n[catalogs.c]\nkind = "file"\nfile = "c.json"\nsha256 = "{"0" * 64}"\n'
    path = write(tmp_path, with_scenario('catalog = "c"', header=header))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == (
        f"{path}: scenario 's': catalog 'c': 'c.json' has content hash {load_catalog('lab').content_hash}, "
        f"but the set pins sha256 = {'0' * 64}"
    )


def test_bad_catalog_file_is_reported_with_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps([{"name": "x", "layers": []}]))
    path = write(tmp_path, with_scenario('catalog = "c"', header='\n[catalogs.c]\nkind = "file"\nfile = "c.json"\n'))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: scenario 's': catalog 'c.json': image 'x' has no layers"


def test_parse_evalset_builds_without_a_file() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the backport pyproject.toml installs on 3.10
        import tomli as tomllib

    es = parse_evalset(tomllib.loads(MINIMAL), base_dir=Path("."))
    assert isinstance(es, EvalSet)
    assert es.weights == {"s": 1.0}


# ------------------------------------------------------------------------------------------------ templates


def test_templates_cannot_be_loaded_as_sets() -> None:
    with pytest.raises(EvalSetError) as exc:
        load_evalset(CHALLENGE)
    assert str(exc.value) == (
        f"{CHALLENGE}: this is a template without keys; create a real set with "
        f"`layersched admin evalset new --from {CHALLENGE} --out hidden_seeds/private/NAME.toml`"
    )


def test_new_evalset_from_the_challenge_template(tmp_path: Path) -> None:
    out = tmp_path / "private" / "real.toml"
    es = new_evalset(CHALLENGE, out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert load_evalset(out).commitment == es.commitment
    assert verify_evalset(out, es.commitment)
    assert [sc.name for sc in es.scenarios] == [
        "lab-10n",
        "lab-5n-cloud",
        "lab-20n-r05",
        "hidden-10n-r05",
        "hub-10n-r05",
    ]
    assert all(len(sc.episodes) == 30 for sc in es.scenarios)
    assert len(es.jobs("public")) == 5 * 6
    keys = list(iter_keys(es))
    assert len(keys) == 5 * 30 + 1  # one per episode and one for the hidden catalog
    assert len(set(keys)) == len(keys)
    assert all(len(k) == 32 for k in keys)
    assert es.hidden
    assert es.scenario("lab-5n-cloud").scenario.cloud == CloudNode()
    # Fresh keys every time: a second set from the same template has another commitment.
    assert new_evalset(CHALLENGE, tmp_path / "private" / "other.toml").commitment != es.commitment


def test_new_evalset_never_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "real.toml"
    new_evalset(CHALLENGE, out)
    before = out.read_bytes()
    with pytest.raises(EvalSetError) as exc:
        new_evalset(CHALLENGE, out)
    assert str(exc.value) == f"{out} already exists; refusing to overwrite an evaluation set"
    assert out.read_bytes() == before


def test_new_evalset_refuses_a_path_git_would_commit(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("private/\n")
    out = tmp_path / "sets" / "real.toml"
    with pytest.raises(EvalSetError) as exc:
        new_evalset(CHALLENGE, out)
    assert str(exc.value) == (
        f"{out} is not ignored by git; write real sets under hidden_seeds/private/ (or add the path to .gitignore) "
        "so their keys are never committed"
    )
    assert not out.exists()
    assert new_evalset(CHALLENGE, tmp_path / "private" / "real.toml").hidden
    assert new_evalset(CHALLENGE, out, allow_tracked=True).hidden


def test_the_repository_ignores_hidden_seeds_private() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "-q", "hidden_seeds/private/real.toml"], cwd=REPO, check=False)
    assert result.returncode == 0


def test_new_evalset_needs_a_template(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError) as exc:
        new_evalset(SAMPLE, tmp_path / "x.toml")
    assert str(exc.value) == f"{SAMPLE}: not a template (a template has `template = true`)"


def test_template_keeps_file_catalogs_reachable(tmp_path: Path) -> None:
    shutil.copy(REPO / "sim" / "tracks" / "layers_v1" / "data" / "lab_seed0.json", tmp_path / "c.json")
    template = write(
        tmp_path,
        "template = true\n"
        + with_scenario('catalog = "c"', header='\n[catalogs.c]\nkind = "file"\nfile = "c.json"\n').replace(
            "episodes = [{ seed = 0 }]", "generate = { private = 2 }\nepisodes = [{ seed = 0 }]"
        ),
        "template.toml",
    )
    es = new_evalset(template, tmp_path / "deep" / "er" / "real.toml")
    assert [(ep.id, ep.split, ep.hidden) for ep in es.scenarios[0].episodes] == [
        ("seed0", "public", False),
        ("prv000", "private", True),
        ("prv001", "private", True),
    ]
    assert 'file = "../../c.json"' in (tmp_path / "deep" / "er" / "real.toml").read_text()


def test_bad_generate_in_template(tmp_path: Path) -> None:
    template = write(tmp_path, "template = true\n" + with_scenario("generate = { public = -1 }"), "template.toml")
    with pytest.raises(EvalSetError) as exc:
        new_evalset(template, tmp_path / "x.toml")
    assert str(exc.value) == f"{template}: scenario 's': generate.public must be an integer >= 0, got -1"


# ------------------------------------------------------------------------------------------------ running


def test_keyed_episodes_are_reproducible(tmp_path: Path) -> None:
    es = new_evalset(CHALLENGE, tmp_path / "real.toml")
    small = EvalSet(
        "small",
        (
            es.scenarios[0].__class__(
                "one", 1.0, es.scenarios[0].scenario, es.scenarios[0].episodes[:2], es.scenarios[0].source
            ),
        ),
    )
    greedy = BASELINES["Greedy"]
    first = evaluate_policy(small, greedy, bundle_id="b")
    again = evaluate_policy(small, greedy, bundle_id="b")
    assert [r.trace_hash for r in first] == [r.trace_hash for r in again]
    assert first[0].trace_hash != first[1].trace_hash


def test_score_baselines_caches_by_commitment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    es = load_evalset(SAMPLE)
    results = score_baselines(es, tmp_path)
    assert sorted(results) == sorted(BASELINES)
    assert all(len(recs) == 6 for recs in results.values())
    cache = tmp_path / f"baselines-{es.commitment}-{SIM_VERSION}.json"
    assert cache.is_file()
    greedy = {(r.scenario, r.episode): r.mean_completion for r in results["Greedy"]}
    assert all(r.mean_completion > greedy[(r.scenario, r.episode)] for r in results["Random"])

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(evalset_runs, "_run_job", fail)
    assert score_baselines(es, tmp_path) == results
    # A cache written by other simulator rules is recomputed.
    payload = json.loads(cache.read_text())
    payload["rules_hash"] = "old"
    cache.write_text(json.dumps(payload))
    with pytest.raises(AssertionError, match="the cache should have been used"):
        score_baselines(es, tmp_path)


def test_baselines_match_in_process_runs() -> None:
    es = load_evalset(SAMPLE)
    small = EvalSet("small", es.scenarios[:1])
    records = evaluate_policy(small, BASELINES["Greedy"], bundle_id=evalset_module.baseline_bundle_id("Greedy"))
    assert records == score_baselines(small)["Greedy"]
    assert os.environ.get("PYTHONHASHSEED") is None or records  # results must not depend on hash seeds


def test_score_baselines_on_processes_gives_the_same_records_and_reports_progress() -> None:
    es = load_evalset(SAMPLE)
    calls: list[tuple[int, int]] = []
    on_two = score_baselines(es, workers=2, progress=lambda done, total: calls.append((done, total)))
    assert on_two == score_baselines(es)  # in this process, one episode after another
    assert calls == [(done, 6) for done in range(1, 7)]


def test_score_baselines_refuses_a_bad_number_of_workers() -> None:
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        score_baselines(load_evalset(SAMPLE), workers=0)


# hub-top70 holds hello-world:latest, 0.00 MB after rounding: LRS must not divide by its size.
@pytest.mark.parametrize("catalog", ["lab", "official-2023-01", "hub-top70-2023-07"])
def test_every_baseline_runs_on_every_builtin_catalog(tmp_path: Path, catalog: str) -> None:
    # Uniform popularity and 300 tasks: every image of the catalog is requested at least once.
    text = with_scenario(f'catalog = "{catalog}"\ncloud = true\nzipf_s = 0.0', episodes="[{ seed = 0 }, { seed = 1 }]")
    path = write(tmp_path, text.replace("n_tasks = 20", "n_tasks = 300"))
    results = score_baselines(load_evalset(path))
    assert all(len(recs) == 2 for recs in results.values())


def test_dump_escapes_any_description(tmp_path: Path) -> None:
    text = MINIMAL.replace('name = "t"', 'name = "t"\ndescription = "quote \\" tab \\t é 😀 del \\u007f nl \\n"')
    es = load_evalset(write(tmp_path, text, "a.toml"))
    assert es.description == 'quote " tab \t é 😀 del \x7f nl \n'
    again = load_evalset(write(tmp_path, dump_evalset(es), "b.toml"))
    assert again.description == es.description
    assert again.commitment == es.commitment
    assert dump_evalset(es).startswith("# layersched evaluation set (no secret keys).\n")


def test_baseline_scores_are_ratios_to_greedy(tmp_path: Path) -> None:
    es = load_evalset(SAMPLE)
    public = evalset_module.baseline_scores(es, tmp_path, "public")
    assert public["Greedy"].overall == 1.0
    assert set(public["Greedy"].ratios) == {"lab-300", "official-5n"}
    assert public["Random"].overall > 1.0
    records = score_baselines(es, tmp_path)
    pairs = evalset_module.paired_scenarios(es, records["Kube"], records["Greedy"], "private")
    assert [len(p.policy) for p in pairs] == [1, 1]
    kube = {(r.scenario, r.episode): r.mean_completion for r in records["Kube"]}
    greedy = {(r.scenario, r.episode): r.mean_completion for r in records["Greedy"]}
    assert pairs[0].policy == (kube[("lab-300", "seed2")],)
    assert pairs[0].reference == (greedy[("lab-300", "seed2")],)
    with pytest.raises(ValueError, match=r"policy has no result for episode \('lab-300', 'seed0'\)"):
        evalset_module.paired_scenarios(es, records["Kube"][1:], records["Greedy"], "public")


def test_every_episode_must_be_playable(tmp_path: Path) -> None:
    # One node of 1-2 GB: the lab's largest image, img39 of 1536.1 MB, fits only on some draws.
    small_nodes = "n_nodes = 1\nnodes = { storage_gb = [1.0, 2.0] }"
    ok = with_scenario(small_nodes, episodes="[{ seed = 1 }, { seed = 5 }]")
    assert len(load_evalset(write(tmp_path, ok, "ok.toml")).jobs()) == 2
    path = write(tmp_path, with_scenario(small_nodes, episodes="[{ seed = 1 }, { seed = 0 }]"), "bad.toml")
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == (
        f"{path}: scenario 's' episode 'seed0': image 'img39' (1536.1 MB) fits on no node of this episode "
        "(the largest holds 1454.7 MB); raise nodes.storage_gb or add a cloud node"
    )
    cloud = with_scenario(small_nodes + "\ncloud = true", episodes="[{ seed = 0 }]")
    assert load_evalset(write(tmp_path, cloud, "cloud.toml")).scenarios[0].scenario.cloud is not None


@pytest.mark.parametrize(
    ("template", "track", "episodes"),
    [("jobs-challenge-example.toml", "jobs-v1", 90), ("workflows-challenge-example.toml", "workflows-v1", 60)],
    ids=["jobs-v1", "workflows-v1"],
)
def test_the_other_tracks_templates_make_hidden_sets(tmp_path: Path, template: str, track: str, episodes: int) -> None:
    """The README's sequence makes a hidden set for each track from hidden_seeds' templates (issue 29)."""
    es = new_evalset(REPO / "hidden_seeds" / template, tmp_path / "private" / "spring.toml")
    assert (es.track, es.hidden, sum(len(sc.episodes) for sc in es.scenarios)) == (track, True, episodes)
    assert load_evalset(tmp_path / "private" / "spring.toml").commitment == es.commitment
