"""Which phase an upload goes to, and which track its policy is checked for (``layersched submit``).

``--phase`` names it; otherwise a kit made by ``layersched init --track`` goes to the open phase of its track
(``kit_track``), and a policy without a kit file to the only open phase, as the server chooses. The server's
refusals (no such phase, a closed one, a used-up quota) come from its allowance, before anything is bundled; a kit
for another track than the phase's is refused here, naming both, before it is checked against the wrong contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layersched.sdk.errors import ConfigError, LayerschedError, NotFound
from layersched.sdk.kit_track import KitTrack
from layersched.sim.tracks import Track, TrackError, get_track, track_ids


@dataclass(frozen=True)
class Target:
    """The phase an upload goes to (None: as the server chooses, a server older than phases) and the track its
    policy is checked for; ``checked`` says whether the server named that track (then it is sent with the upload)."""

    phase: str | None
    track: Track
    checked: bool


def choose_target(client: Any, phase: str | None, kit: KitTrack | None) -> Target:
    """The phase of ``--phase``, else the open phase of the kit's track, else the server's only open phase; its
    allowance checked (token, phase, quota, closed uploads) and the kit's track against the phase's."""
    if phase is None and kit is not None:
        phase = open_phase_of_track(client, kit)
    phase_track = _check_allowance(client, phase)
    if kit is not None and phase_track is not None and phase_track != kit.track.id:
        raise ConfigError(
            f"the kit is for track {kit.track.id} ({kit.file}), but phase {phase or '(the open one)'!r} runs track "
            f"{phase_track}: submit it to a phase of {kit.track.id} (layersched phases), or make a kit of "
            f"{phase_track} (layersched init DIR --track {phase_track})"
        )
    if phase_track is None and kit is not None:
        return Target(phase, kit.track, False)
    return Target(phase, server_track(client, phase_track), phase_track is not None)


def open_phase_of_track(client: Any, kit: KitTrack) -> str | None:
    """The one open phase whose track is the kit's; ConfigError naming the phases when the server runs none of
    that track, none is open now, or several are (then ``--phase`` chooses). None from a server older than phases."""
    track = kit.track.id
    try:
        phases = client.phases()
    except NotFound:
        return None
    of_track = [p for p in phases if p.track == track]
    if not of_track:
        runs = ", ".join(f"{p.name} ({p.track})" for p in phases) or "none yet"
        raise ConfigError(f"the server runs no phase of track {track}, the kit's ({kit.file}); its phases: {runs}")
    open_now = [p.name for p in of_track if p.open]
    if not open_now:
        listed = ", ".join(f"{p.name} ({p.status})" for p in of_track)
        raise ConfigError(f"no phase of track {track} is open now (its phases: {listed}); see layersched phases")
    if len(open_now) > 1:
        raise ConfigError(
            f"{len(open_now)} phases of track {track} are open ({', '.join(open_now)}): name one, e.g. "
            f"--phase {open_now[0]}"
        )
    return str(open_now[0])


def server_track(client: Any, track_id: str | None) -> Track:
    """The track of the phase submitted to (``track_id``, as the allowance named it); from a server older than
    phases, that of its current set."""
    track_id = track_id or client.current_evalset().track
    try:
        return get_track(track_id)
    except TrackError:
        raise LayerschedError(
            f"the server scores track {track_id!r}, which this installation does not know (known: "
            f"{', '.join(track_ids())}); install the organisers' track module and name it in LAYERSCHED_TRACK_MODULES"
        ) from None


def _check_allowance(client: Any, phase: str | None) -> str | None:
    """A wrong token, no such phase (or several open and none named), a used-up quota or closed uploads, told
    before the upload rather than after it; the track of the phase it would go to (None: an older server)."""
    try:
        allowance = client.allowance(phase)
    except NotFound:  # a server older than GET /me/allowance: at least the token is checked first
        client.me()
        return None
    allowance.raise_if_refused()
    track: str | None = allowance.track
    return track
