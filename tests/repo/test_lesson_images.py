"""Pictures the lessons show: every one exists, is a PNG of a sane size, and is used.

The TensorBoard screenshots in ``lessons/images/`` are made by ``make screenshots``
(``browser_tests/test_screenshots.py``) and committed, so a lesson renders them anywhere.
The size is read from the PNG header by hand and checked against Pillow's reading.
A lesson carries each picture as an attachment of its markdown cell (so that Colab shows
it too), which must hold exactly the bytes of the file in ``lessons/images/``.
"""

import base64
import re
import struct
from pathlib import Path

import pytest
from PIL import Image

from tests.support.notebooks import LESSONS, ROOT, nbio

IMAGES = ROOT / "lessons" / "images"
MAX_BYTES = 300_000  # the repository stays light
#: Markdown images: ![alt](target "optional title"); links to the web are not files here.
IMAGE_REF = re.compile(r"!\[([^\]]*)\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header: the signature, then the IHDR chunk first.

    Raises:
        ValueError: the bytes are not a PNG.
    """
    if data[:8] != PNG_SIGNATURE:
        raise ValueError(f"not a PNG: starts with {data[:8]!r}")
    length, kind = struct.unpack(">I4s", data[8:16])
    if kind != b"IHDR" or length != 13:
        raise ValueError(f"the first chunk is {kind!r} of {length} bytes, not a 13-byte IHDR")
    return struct.unpack(">II", data[16:24])


def local_images(path: Path) -> list[tuple[str, Path]]:
    """(alt text, file) for every image a lesson's markdown shows from this repository."""
    found = []
    for cell in nbio.read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for alt, target in IMAGE_REF.findall(cell.source):
            if target.startswith("attachment:"):  # carried in the cell (tools/attach_images.py)
                name = target.removeprefix("attachment:")
                data = cell.get("attachments", {}).get(name, {}).get("image/png")
                assert data, f"{path.name} shows attachment {name}, which the cell does not hold"
                assert base64.b64decode(data) == (IMAGES / name).read_bytes(), (
                    f"{path.name}: attachment {name} differs from lessons/images/{name}; "
                    "run python tools/attach_images.py"
                )
                found.append((alt, IMAGES / name))
            elif not re.match(r"[a-z]+:", target):  # http:, https:, data:
                found.append((alt, path.parent / target))
    return found


REFERENCES = [(lesson, alt, image) for lesson in LESSONS for alt, image in local_images(lesson)]


def test_png_size_reads_a_known_header():
    header = PNG_SIGNATURE + struct.pack(">I4sII", 13, b"IHDR", 1200, 770) + bytes(9)
    assert png_size(header) == (1200, 770)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a" + bytes(30))


def test_lesson_06_shows_its_tensorboard_screenshots():
    shown = {image.name for lesson, _, image in REFERENCES if lesson.name.startswith("06_")}
    assert {"tensorboard_scalars.png", "tensorboard_histograms.png"} <= shown, shown


@pytest.mark.parametrize(
    "lesson, alt, image",
    REFERENCES,
    ids=[f"{lesson.stem}:{image.name}" for lesson, _, image in REFERENCES],
)
def test_every_image_a_lesson_shows_is_a_small_sane_png(lesson, alt, image):
    assert image.is_file(), f"{lesson.name} shows {image.name}, which does not exist"
    assert image.resolve().is_relative_to(IMAGES.resolve()), "keep pictures in lessons/images/"
    assert alt.strip(), f"{lesson.name}: give {image.name} alt text saying what it shows"
    data = image.read_bytes()
    assert len(data) < MAX_BYTES, f"{image.name} is {len(data)} bytes: crop or shrink it"
    width, height = png_size(data)
    assert 400 <= width <= 2400 and 200 <= height <= 1600, f"{image.name}: {width} x {height}"
    with Image.open(image) as picture:  # an independent reader agrees, and can decode it
        assert picture.format == "PNG" and picture.size == (width, height)
        picture.load()


def test_every_picture_in_lessons_images_is_shown_by_a_lesson():
    shown = {image.resolve() for _, _, image in REFERENCES}
    unused = [p.name for p in sorted(IMAGES.glob("*")) if p.resolve() not in shown]
    assert not unused, f"pictures no lesson shows (delete them or show them): {unused}"
