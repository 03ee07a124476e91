"""``layersched serve --demo``: the platform as it runs, on one machine.

A phase on each built-in track's public sample (``layers``, ``jobs``, ``workflows``: three tracks, three boards),
so that a starter kit of any track made by ``layersched init --track`` submits to the demo as it is (its
``layersched-kit.toml`` names the track, and ``submit`` finds the track's open phase); a demo organiser and a demo
student, whose tokens are printed; and the lab's starter policy submitted once as the student. A second demo on the
same data directory changes no phase, issues fresh tokens, and submits nothing (the student's quota stays as it
was).
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

import httpx

from layersched.server.config import Settings
from layersched.sim.evalset import evalset_file
from layersched.sim.tracks import get_track

# (phase, built-in set): one phase per track, on its public sample.
DEMO_PHASES = (("layers", "sample"), ("jobs", "jobs-sample"), ("workflows", "workflows-sample"))
STARTER_PHASE = "layers"  # the phase the demo student's starter policy goes to


def demo_sets() -> list[Path]:
    """The evaluation sets the demo's phases score on (each track's public sample)."""
    return [evalset_file(name).resolve() for _, name in DEMO_PHASES]


def demo_phases(settings: Settings) -> list[str]:
    """Make the demo's phases where they are missing (its rules and any other phase stay); the changes, in words."""
    from layersched.server import storage
    from layersched.server.db import make_engine, make_sessionmaker, session_scope
    from layersched.server.storage.challenge import PhaseRule
    from layersched.sim.evalset import load_evalset

    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            rules, existing = storage.export_challenge(session=session)
            names = {p.name for p in existing}
            wanted = [
                PhaseRule(
                    name=name, evalset=evalset, title=f"{get_track(load_evalset(evalset_file(evalset)).track).title}"
                )
                for name, evalset in DEMO_PHASES
                if name not in names
            ]
            plan = storage.apply_challenge(session=session, rules=rules, phases=wanted, actor=None, dry_run=False)
            return plan.changes
    finally:
        engine.dispose()


def demo_users(settings: Settings) -> dict[str, str]:
    """The demo organiser's and student's tokens (fresh ones for users an earlier demo made), printed."""
    from layersched.server import admin

    tokens: dict[str, str] = {}
    for role, name in (("organiser", "demo-organiser"), ("participant", "demo-student")):
        try:
            token = admin.add_user(name=name, email=f"{name}@example.org", role=role, settings=settings).token
        except admin.AdminError:  # exists from an earlier run: issue a fresh token
            token = admin.new_token(name=name, settings=settings).token
        tokens["student" if role == "participant" else "organiser"] = token
        print(f"layersched: {role} {name!r} token: {token}", flush=True)
    return tokens


def starter_policy() -> bytes:
    """The lab's starter policy, from the track's starter kit (wherever the track keeps it)."""
    package, folder = get_track("layers-v1").starter
    return resources.files(package).joinpath(folder).joinpath("policy.py").read_bytes()


def submit_demo(url: str, token: str) -> None:
    """Wait for the API, then submit the starter policy as the demo student, unless they submitted already."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    headers = {"Authorization": f"Bearer {token}"}
    mine = httpx.get(f"{url}/api/v1/submissions", headers=headers, params={"limit": 1}, timeout=10).json()
    if mine.get("count"):
        count = mine["count"]
        line = f"layersched: the demo student has {count} submission(s) from an earlier run: none is queued now"
        print(line, flush=True)
        return
    response = httpx.post(
        f"{url}/api/v1/submissions",
        headers=headers,
        files={"file": ("policy.py", starter_policy(), "text/x-python")},
        data={"name": "starter policy", "description": "submitted by layersched serve --demo", "phase": STARTER_PHASE},
        timeout=30,
    )
    if response.status_code == 201:
        print(f"layersched: demo submission {response.json()['id']} queued; watch {url}/", flush=True)
    else:
        print(f"layersched: demo submission refused: {response.status_code} {response.text}", flush=True)
