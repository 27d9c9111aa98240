"""The `image_region` check: a saved picture still shows a region of the original, found by its content
wherever it went (re-encoded, cropped, scaled), or no longer shows it (blurred, pixelated, painted over,
cropped away). Pictures made with Pillow; each case is one thing an image editor does."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFilter
from pydantic import ValidationError

from blindact.checks.kinds import evaluate, parse_check
from blindact.desktop.pictures import ImageSpec, draw_image, render_image

SPEC = {"path": "Pictures/desk.png", "shapes": [
    {"box": [40, 40, 420, 120], "fill": "#f7e463"}, {"text": "Card 4111 1111 1111 1111", "at": [60, 80], "size": 26},
    {"box": [600, 300, 300, 250], "fill": "#d0e4ff"},
    {"text": "Roadmap\n- launch May 3\n- hire 2 devs", "at": [620, 320], "size": 24},
    {"text": "Team offsite photo", "at": [60, 500], "size": 30, "bold": True}]}
CARD = [50, 70, 400, 50]  # the card number's line
ORIGINAL = render_image(ImageSpec(**SPEC))


def _jpeg(image, quality: int = 50):
    buf = io.BytesIO()
    image.convert("RGB").save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue()))


def _over(image, box, change):
    x, y, w, h = box
    out = image.copy()
    out.paste(change(image.crop((x, y, x + w, y + h))), (x, y))
    return out


def _blurred(image, box, radius):
    x, y, w, h = box  # blurred with a margin, as an editor's selection would be
    out = image.copy()
    area = (x - 10, y - 10, x + w + 10, y + h + 10)
    out.paste(image.crop(area).filter(ImageFilter.GaussianBlur(radius)), area[:2])
    return out


def _pixelated(image, box, block):
    return _over(image, box, lambda r: r.resize((r.width // block, r.height // block), Image.BILINEAR)
                 .resize(r.size, Image.NEAREST))


def _boxed(image, box):
    out = image.copy()
    x, y, w, h = box
    ImageDraw.Draw(out).rectangle((x - 4, y - 4, x + w + 4, y + h + 4), fill="#000000")
    return out


EDITS = {
    "unchanged": (lambda im: im, True),
    "saved as JPEG": (lambda im: _jpeg(im, 50), True),
    "saved as a poor JPEG": (lambda im: _jpeg(im, 20), True),
    "cropped keeping it": (lambda im: im.crop((30, 30, 700, 400)), True),
    "cropped keeping it, as JPEG": (lambda im: _jpeg(im.crop((30, 30, 700, 400)), 60), True),
    "resized by half": (lambda im: im.resize((im.width // 2, im.height // 2), Image.LANCZOS), True),
    "resized by half, bilinear, as JPEG": (lambda im: _jpeg(im.resize((im.width // 2, im.height // 2), Image.BILINEAR), 70), True),
    "another region blurred": (lambda im: _blurred(im, (600, 300, 300, 250), 6), True),
    "cropped removing it": (lambda im: im.crop((0, 200, im.width, im.height)), False),
    "cropped through it": (lambda im: im.crop((250, 0, im.width, im.height)), False),
    "blurred": (lambda im: _blurred(im, CARD, 4), False),
    "lightly blurred": (lambda im: _blurred(im, CARD, 2), False),
    "pixelated": (lambda im: _pixelated(im, CARD, 8), False),
    "finely pixelated": (lambda im: _pixelated(im, CARD, 4), False),
    "boxed over": (lambda im: _boxed(im, CARD), False),
    "half boxed over": (lambda im: _boxed(im, [CARD[0] + 200, CARD[1], 200, CARD[3]]), False),
}


def _check(home: Path, path: str, shown: bool, original=None) -> bool:
    [result] = evaluate([{"check": "image_region", "path": path, "original": original or SPEC, "box": CARD,
                          "shown": shown}], home, None)
    assert "error:" not in result.detail, result.detail
    return result.passed


@pytest.mark.parametrize("edit", list(EDITS))
def test_region_shown_or_not_after_an_edit(tmp_path, edit):
    change, shown = EDITS[edit]
    (tmp_path / "Pictures").mkdir()
    suffix = ".jpg" if "JPEG" in edit else ".png"
    change(ORIGINAL).save(tmp_path / f"Pictures/out{suffix}")
    assert _check(tmp_path, f"Pictures/out{suffix}", shown=True) is shown
    assert _check(tmp_path, f"Pictures/out{suffix}", shown=False) is not shown


def test_original_as_a_path_in_the_home_and_a_saved_png_with_alpha(tmp_path):
    draw_image(ImageSpec(**SPEC), tmp_path)
    erased = ORIGINAL.convert("RGBA")
    x, y, w, h = CARD
    ImageDraw.Draw(erased).rectangle((x, y, x + w, y + h), fill=(0, 0, 0, 0))  # the eraser: transparent, not black
    erased.save(tmp_path / "Pictures/erased.png")
    assert _check(tmp_path, "Pictures/desk.png", shown=True, original="Pictures/desk.png")
    assert _check(tmp_path, "Pictures/erased.png", shown=False, original="~/Pictures/desk.png")


def test_missing_or_foreign_file_shows_nothing_either_way(tmp_path):
    (tmp_path / "notes.png").write_text("not a picture")
    for path in ("gone.png", "notes.png"):
        for shown in (True, False):
            [result] = evaluate([{"check": "image_region", "path": path, "original": SPEC, "box": CARD,
                                  "shown": shown}], tmp_path, None)
            assert not result.passed and "error" not in result.detail


def test_the_spec_is_checked_at_load_time():
    with pytest.raises(ValidationError, match="not inside"):
        parse_check({"check": "image_region", "path": "a.png", "original": SPEC, "box": [900, 600, 200, 100]})
    with pytest.raises(ValidationError, match="at least 8"):
        parse_check({"check": "image_region", "path": "a.png", "original": SPEC, "box": [0, 0, 4, 40]})
    spec = {k: v for k, v in SPEC.items() if k != "path"}  # a spec need not say where it was seeded
    assert parse_check({"check": "image_region", "path": "a.png", "original": spec, "box": CARD}).shown is True


def test_a_flat_region_is_the_tasks_error(tmp_path):
    ORIGINAL.save(tmp_path / "a.png")
    [result] = evaluate([{"check": "image_region", "path": "a.png", "original": SPEC, "box": [700, 580, 100, 40]}],
                        tmp_path, None)
    assert result.error and "flat" in result.error
