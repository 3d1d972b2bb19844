"""Count the published models' parameters and FLOPs from Keras and store them as model cards.

    python tools/model_cards.py           # rewrite dpkit/model_cards.json
    python tools/model_cards.py --check   # recount and fail if the file differs

Each card comes from building the Keras model (keras.applications with weights=None; AlexNet
layer by layer in dpkit.cards) and counting with dpkit.models: nothing is typed in by hand.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dpkit.plumbing import contract  # noqa: E402 -- after the path, before TensorFlow

contract.quiet_tensorflow(os.environ)


def main(argv: list[str]) -> int:
    from dpkit import cards

    counted = {name: dataclasses.asdict(cards.count(name)) for name in cards.PUBLISHED_MODELS}
    text = json.dumps(counted, indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        if cards.CARDS_FILE.read_text() != text:
            print(f"{cards.CARDS_FILE} is out of date: run python tools/model_cards.py")
            return 1
        print(f"{cards.CARDS_FILE}: {len(counted)} cards, up to date")
        return 0
    cards.CARDS_FILE.write_text(text)
    print(f"wrote {len(counted)} cards to {cards.CARDS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
