"""``toy-broken-v1``: the toy track with a bug in its trusted check, to show that a track's own failure is the
service's (``infrastructure_error``: retried, never counted against the participant), not the policy's."""

from __future__ import annotations

from tests.toy_track import ToyEpisode, ToySimulator, ToyTrack


class BrokenEpisode(ToyEpisode):
    def check(self, value: object, step: int) -> int:
        if step == 2:
            raise KeyError("a bug in the track")
        return super().check(value, step)


class BrokenSimulator(ToySimulator):
    def episode(self, workload):  # type: ignore[no-untyped-def]
        return BrokenEpisode(self.scenario, workload)


class BrokenTrack(ToyTrack):
    id = "toy-broken-v1"

    def simulator(self, scenario):  # type: ignore[no-untyped-def]
        return BrokenSimulator(scenario)


TRACK = BrokenTrack()


class UnmeasurableEpisode(ToyEpisode):
    def metrics(self):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("a bug in the metrics")


class UnmeasurableSimulator(ToySimulator):
    def episode(self, workload):  # type: ignore[no-untyped-def]
        return UnmeasurableEpisode(self.scenario, workload)


class UnmeasurableTrack(ToyTrack):
    id = "toy-unmeasurable-v1"

    def simulator(self, scenario):  # type: ignore[no-untyped-def]
        return UnmeasurableSimulator(scenario)
