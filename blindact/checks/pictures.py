"""Checks over pictures the agent saved: does a saved picture still show a region of the original (a face, a
card number, a corner of a whiteboard), or not any more (blurred, pixelated, painted over, cropped away)?

The region's content is searched for, not its coordinates: a crop that keeps the region moves it, a
picture scaled as a whole scales it, a JPEG re-encoding changes every pixel a little. The search runs on
grey levels by normalised cross-correlation (numpy's FFT): a coarse pass over the whole picture finds where
the region's content is most alike, a fine pass at full size around that place measures two likenesses:
of the grey levels, and of the fine detail alone (the picture less its blur). A blur, a pixelation or a box
painted over the region keeps some likeness of the grey levels but loses the fine detail; a crop that
removes the region leaves nothing alike anywhere.
"""

from __future__ import annotations

import io
from typing import Any, Literal

import numpy as np
from pydantic import field_validator, model_validator

from blindact.checks.base import COPY_MAX_BYTES, PathCheck
from blindact.checks.reading import why_unreadable
from blindact.checks.result import CheckResult
from blindact.desktop.paths import home_relative
from blindact.desktop.pictures import ImageSpec
from blindact.desktop.safefs import SafeFolder

# likeness needed, at the best place, for the region to count as shown. Measured (grey / detail) on a line
# of 26-pixel text in a Pillow-made picture: unchanged 1.0 / 1.0, JPEG at quality 20 0.97 / 0.92, cropped
# and saved as JPEG 0.99 / 0.98, scaled by half (and saved as JPEG) 0.97 / 0.96, the whole picture blurred
# by radius 1 0.93 / 0.87; not shown: the region blurred by radius 2 0.76 / 0.48 (radius 6: 0.41 / 0.05),
# pixelated in 4-pixel blocks 0.66 / 0.28, boxed over or cropped away (or half of it) below 0.3 / 0.3
_GREY_BOUND = 0.8
_DETAIL_BOUND = 0.6
_MAX_PIXELS = 40_000_000  # a bigger picture is not decoded (a "decompression bomb")
_COARSE_SIDE = 480  # the coarse pass works on the picture scaled to this longest side


class ImageRegion(PathCheck):
    """The picture at `path` shows (`shown: true`) or no longer shows (`shown: false`) the content of `box`
    ([x, y, width, height], pixels of the original) of `original`: a picture spec as in the files step's
    `images:` (drawn again here, so what the agent did to the seeded file cannot change it) or the path of a
    picture in the home. Found wherever it is in the saved picture, at the same scale or scaled with the
    whole picture; a missing or unreadable file shows nothing (and so fails both ways)."""

    check: Literal["image_region"]
    original: str | ImageSpec
    box: tuple[int, int, int, int]
    shown: bool = True

    @field_validator("original", mode="before")
    @classmethod
    def _spec_or_path(cls, v):
        if isinstance(v, dict) and "path" not in v:
            v = {**v, "path": "original.png"}  # a spec's path names where it was seeded; here it is drawn
        if isinstance(v, str):
            v = home_relative(v)
        return v

    @model_validator(mode="after")
    def _box_fits(self) -> "ImageRegion":
        x, y, w, h = self.box
        if x < 0 or y < 0 or w < 8 or h < 8:
            raise ValueError(f"box {list(self.box)}: x and y from 0, width and height at least 8 pixels")
        if isinstance(self.original, ImageSpec) and (x + w > self.original.width or y + h > self.original.height):
            raise ValueError(f"box {list(self.box)} is not inside the {self.original.width}x{self.original.height} original")
        return self

    def describe(self) -> str:
        where = "the original" if isinstance(self.original, ImageSpec) else f"~/{self.original}"
        return (f"~/{self.path} {'still shows' if self.shown else 'no longer shows'} the region "
                f"{list(self.box)} of {where}")

    def _original(self, home: SafeFolder):
        if isinstance(self.original, ImageSpec):
            from blindact.desktop.pictures import render_image

            return render_image(self.original)
        return _decode(home.read_bytes(self.original, COPY_MAX_BYTES))

    def evaluate(self, home: SafeFolder, store: Any) -> CheckResult:
        try:
            saved = _decode(home.read_bytes(self.path, COPY_MAX_BYTES))
        except OSError as exc:
            return CheckResult(self.label(), False, f"cannot read ~/{self.path}: {why_unreadable(exc)}")
        except ValueError as exc:
            return CheckResult(self.label(), False, f"~/{self.path} is not a picture that can be read: {exc}")
        original = self._original(home)  # an unreadable original is the task's error, not the agent's
        x, y, w, h = self.box
        if x + w > original.width or y + h > original.height:
            raise ValueError(f"box {list(self.box)} is not inside the {original.width}x{original.height} original")
        found = find_region(original, self.box, saved)
        shown = found.shown
        return CheckResult(self.label(), shown == self.shown, found.describe(), round(found.detail, 3))


class Found:
    def __init__(self, grey: float, detail: float, at: tuple[int, int] | None, scale: float):
        self.grey, self.detail, self.at, self.scale = grey, detail, at, scale

    @property
    def shown(self) -> bool:
        return self.at is not None and self.grey >= _GREY_BOUND and self.detail >= _DETAIL_BOUND

    def describe(self) -> str:
        if self.at is None:
            return "the saved picture is smaller than the region: not shown"
        scale = "" if abs(self.scale - 1) < 0.01 else f" scaled by {self.scale:.2f}"
        return (f"{'shown' if self.shown else 'not shown'}: best likeness at {list(self.at)}{scale}: "
                f"grey levels {self.grey:.2f} (shown from {_GREY_BOUND}), fine detail {self.detail:.2f} "
                f"(shown from {_DETAIL_BOUND})")


def _decode(data: bytes):
    """A picture's pixels, flattened onto white (an erased, transparent region shows nothing)."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data))
        if image.width * image.height > _MAX_PIXELS:
            raise ValueError(f"{image.width}x{image.height} pixels is more than {_MAX_PIXELS}")
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        image = image.convert("RGBA")
        white = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(white, image)
    return image.convert("L")


def _grey(image) -> np.ndarray:
    return np.asarray(image, dtype=np.float64)


def _detail(image) -> np.ndarray:
    """The picture less its blur: edges and strokes, what a blur or a pixelation takes away."""
    from PIL import ImageFilter

    return _grey(image) - _grey(image.filter(ImageFilter.GaussianBlur(1.5)))


def _window_sums(a: np.ndarray, h: int, w: int) -> np.ndarray:
    """The sum of `a` over every h x w window (top-left corner order), by an integral image."""
    c = np.zeros((a.shape[0] + 1, a.shape[1] + 1))
    c[1:, 1:] = a.cumsum(0).cumsum(1)
    return c[h:, w:] - c[:-h, w:] - c[h:, :-w] + c[:-h, :-w]


def ncc_map(image: np.ndarray, template: np.ndarray) -> np.ndarray:
    """Normalised cross-correlation of `template` at every place it fits wholly in `image` (-1..1; 0 where
    the image is flat there)."""
    H, W = image.shape
    h, w = template.shape
    t = template - template.mean()
    t_norm = np.sqrt((t * t).sum())
    if t_norm < 1e-9:
        return np.zeros((H - h + 1, W - w + 1))
    corr = np.fft.irfft2(np.fft.rfft2(image) * np.conj(np.fft.rfft2(t, s=(H, W))), s=(H, W))[:H - h + 1, :W - w + 1]
    sums = _window_sums(image, h, w)
    squares = _window_sums(image * image, h, w)
    var = np.maximum(squares - sums * sums / (h * w), 0.0)
    denom = np.sqrt(var) * t_norm
    out = np.zeros_like(corr)
    ok = denom > 1e-6 * max(t_norm, 1.0)
    out[ok] = corr[ok] / denom[ok]
    return np.clip(out, -1.0, 1.0)


def _scaled(image, scale: float):
    from PIL import Image

    if abs(scale - 1) < 1e-3:
        return image
    return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))), Image.LANCZOS)


def _region(box: tuple[int, int, int, int], scale: float) -> tuple[int, int, int, int]:
    x, y, w, h = box
    return round(x * scale), round(y * scale), max(1, round(w * scale)), max(1, round(h * scale))


def find_region(original, box: tuple[int, int, int, int], saved) -> Found:
    """Where the saved picture (grey levels) is most like the region `box` of the original, and how alike:
    at the original's scale, and at the scale the saved picture has as a whole (the picture scaled)."""
    original = original.convert("L")
    saved = saved.convert("L")
    x, y, w, h = box
    region = original.crop((x, y, x + w, y + h))
    if float(np.std(_detail(region))) < 1.0:
        raise ValueError(f"the region {list(box)} of the original is flat: there is nothing in it to find")
    scales: list[float] = []
    for s in (1.0, saved.width / original.width, saved.height / original.height):
        if 0.05 <= s <= 20 and all(abs(s - t) > 0.01 for t in scales):
            scales.append(s)
    best = Found(0.0, 0.0, None, 1.0)
    for s in scales:
        found = _search(original, box, saved, s)
        if found.at is not None and (best.at is None or found.grey + found.detail > best.grey + best.detail):
            best = found
    return best


def _search(original, box, saved, scale: float) -> Found:
    rx, ry, rw, rh = _region(box, scale)
    if rw > saved.width or rh > saved.height:
        return Found(0.0, 0.0, None, scale)
    scaled = _scaled(original, scale)
    template = scaled.crop((rx, ry, rx + rw, ry + rh))
    # coarse: the whole saved picture, small
    f = min(1.0, _COARSE_SIDE / max(saved.width, saved.height))
    f = min(1.0, max(f, 12 / min(rw, rh)))
    if f < 1.0:
        small = _scaled(saved, f)
        small_template = _scaled(template, f)
    else:
        small, small_template = saved, template
    th, tw = _grey(small_template).shape
    if th > small.height or tw > small.width:
        small_template = small_template.crop((0, 0, min(tw, small.width), min(th, small.height)))
    coarse = ncc_map(_grey(small), _grey(small_template))
    cy, cx = np.unravel_index(int(np.argmax(coarse)), coarse.shape)
    # fine: full size, around the coarse place
    margin = int(np.ceil(2 / f)) + 2
    left = max(0, min(int(round(cx / f)) - margin, saved.width - rw))
    top = max(0, min(int(round(cy / f)) - margin, saved.height - rh))
    right = min(saved.width, left + rw + 2 * margin)
    bottom = min(saved.height, top + rh + 2 * margin)
    # the detail of the window is taken from the whole picture's, so the window's edges add none
    pad = 4
    outer = (max(0, left - pad), max(0, top - pad), min(saved.width, right + pad), min(saved.height, bottom + pad))
    around = saved.crop(outer)
    grey = _grey(around)
    detail = _detail(around)
    ox, oy = left - outer[0], top - outer[1]
    grey = grey[oy:oy + bottom - top, ox:ox + right - left]
    detail = detail[oy:oy + bottom - top, ox:ox + right - left]
    t_outer = (max(0, rx - pad), max(0, ry - pad), min(scaled.width, rx + rw + pad), min(scaled.height, ry + rh + pad))
    t_detail = _detail(scaled.crop(t_outer))[ry - t_outer[1]:ry - t_outer[1] + rh, rx - t_outer[0]:rx - t_outer[0] + rw]
    grey_map = ncc_map(grey, _grey(template))
    detail_map = ncc_map(detail, t_detail)
    py, px = np.unravel_index(int(np.argmax(grey_map + detail_map)), grey_map.shape)
    return Found(float(grey_map[py, px]), float(detail_map[py, px]), (left + int(px), top + int(py)), scale)

