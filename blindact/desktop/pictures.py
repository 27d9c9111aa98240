"""Pictures drawn at setup with Pillow, for context that is visual only: a screenshot with a password
on a sticky note, a badge naming a person, a whiteboard photo. The text is in the pixels, not in the
file name or the accessibility tree, so an agent must look at the picture to see it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blindact.desktop.paths import home_relative

_FONTS = {False: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
          True: "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"}
_COLOR = r"^(#[0-9a-fA-F]{6}|[a-z]+)$"


class Shape(BaseModel):
    """One thing drawn: a box (`box: [x, y, w, h]`, filled and/or outlined) and/or text at `at`."""

    model_config = ConfigDict(extra="forbid")
    box: tuple[int, int, int, int] | None = None
    fill: str | None = Field(None, pattern=_COLOR)
    outline: str | None = Field(None, pattern=_COLOR)
    text: str | None = None
    at: tuple[int, int] = (0, 0)
    size: int = Field(18, ge=6, le=200)
    bold: bool = False
    color: str = Field("#202020", pattern=_COLOR)
    angle: float = 0  # degrees counter-clockwise, for handwriting on a photo

    @model_validator(mode="after")
    def _something(self) -> "Shape":
        if self.box is None and self.text is None:
            raise ValueError("a shape needs a box and/or text")
        return self


class ImageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    width: int = Field(1024, ge=16, le=4096)
    height: int = Field(640, ge=16, le=4096)
    background: str = Field("#ffffff", pattern=_COLOR)
    shapes: list[Shape] = Field(min_length=1)
    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))

    @field_validator("path")
    @classmethod
    def _format(cls, v: str) -> str:
        if Path(v).suffix.lower() not in (".png", ".jpg", ".jpeg"):
            raise ValueError(f"path {v!r}: a picture is .png or .jpg")
        return v


@lru_cache(maxsize=32)
def _font(size: int, bold: bool):
    from PIL import ImageFont

    return ImageFont.truetype(_FONTS[bold], size)


def render_image(spec: ImageSpec):
    """The picture `spec` describes, as a Pillow image."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (spec.width, spec.height), spec.background)
    draw = ImageDraw.Draw(image)
    for shape in spec.shapes:
        if shape.box is not None:
            x, y, w, h = shape.box
            draw.rectangle((x, y, x + w, y + h), fill=shape.fill, outline=shape.outline, width=2)
        if shape.text is None:
            continue
        if shape.angle:
            font = _font(shape.size, shape.bold)
            left, top, right, bottom = draw.multiline_textbbox((0, 0), shape.text, font=font)
            layer = Image.new("RGBA", (right + 4, bottom + 4), (0, 0, 0, 0))
            ImageDraw.Draw(layer).multiline_text((2, 2), shape.text, font=font, fill=shape.color)
            rotated = layer.rotate(shape.angle, expand=True)
            image.paste(rotated, shape.at, rotated)
        else:
            draw.multiline_text(shape.at, shape.text, font=_font(shape.size, shape.bold), fill=shape.color)
    return image


def draw_image(spec: ImageSpec, home: Path) -> Path:
    target = home / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    render_image(spec).save(target)
    return target
