"""The stand-in track's template (tests/server/stand_in_track.py): what `layersched init --track standin-v1` copies."""


def policy(view, decision, rng):
    return 0
