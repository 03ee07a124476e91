"""``toy-unmeasurable-v1``: the toy track whose metrics fail (a bug in trusted code: ``infrastructure_error``)."""

from tests.toy_track.broken import UnmeasurableTrack

TRACK = UnmeasurableTrack()
