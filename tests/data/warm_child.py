"""A child for tests/test_child_process.py: its warm-up leaves a mark (or fails, with WARM_FAILS set),
and its job reports the mark and the device the child was started for."""

import os

from pydantic import BaseModel

from workers.child_process import CHILD_DEVICE_ENV, serve

warmed = False


class Ask(BaseModel):
    pass


class Answer(BaseModel):
    warmed: bool
    device: str


def warm() -> None:
    global warmed
    if os.environ.get("WARM_FAILS"):
        raise RuntimeError("no GPU today")
    warmed = True


if __name__ == "__main__":
    serve(Ask, lambda _: Answer(warmed=warmed, device=os.environ.get(CHILD_DEVICE_ENV, "")), warm=warm)
