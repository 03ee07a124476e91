"""The stand-in track's template (tests/server/stand_in_track.py): what `layersched init --track standin-v1` copies."""


def policy(bins, rng):
    return 0
