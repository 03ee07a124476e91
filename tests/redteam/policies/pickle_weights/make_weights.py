"""Writes weights.pkl: a pickle whose loading calls ``open(MARKER, "w")``, i.e. creates a file wherever it is
unpickled. Only the sandbox may ever unpickle it; the test checks that MARKER never appears on the host."""

import pathlib
import pickle

MARKER = "/tmp/layersched-redteam-unpickled-on-this-machine"


class Payload:
    def __reduce__(self):
        return (open, (MARKER, "w"))


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_name("weights.pkl")
    out.write_bytes(pickle.dumps({"weights": [0.1, 0.2], "payload": Payload()}))
