"""`blindact image ...` and the Docker provider's command-line options; blindact.cli wires these in.

    add_image_parser(subparsers)      the `image` verb: build, prune, info
    add_docker_options(parser)        --image, --memory, --cpus, --shm-size for `run`/`bench`
    docker_desktop_factory(args)      a no-argument callable making one DockerDesktop per worker
    bench_docker(...)                 the Docker figures for `blindact bench --provider docker`
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Callable

from blindact.desktop.image import DEFAULT_IMAGE, ImageBuildError, build_image, prune


def add_image_parser(subparsers) -> argparse.ArgumentParser:
    image = subparsers.add_parser("image", help="build or prune the Docker desktop image",
                                  description="Build the desktop image offline (debootstrap + docker import) or remove it.")
    verbs = image.add_subparsers(dest="image_command", required=True)

    build = verbs.add_parser("build", help="build the desktop image (a no-op when up to date)")
    build.add_argument("--tag", default=DEFAULT_IMAGE, help=f"image tag to build (default {DEFAULT_IMAGE})")
    build.add_argument("--base", default="auto",
                       help="'auto' (own bootstrapped base, else the registry's debian:bookworm-slim, else bootstrap), "
                            "'bootstrap', or an image to build FROM")
    build.add_argument("--suite", default="bookworm", help="Debian suite of the base (default bookworm)")
    build.add_argument("--mirror", default=None,
                       help="Debian mirror URL for the base (default: the host's apt sources)")
    build.add_argument("--no-cache", action="store_true", help="rebuild the base and every layer")
    build.add_argument("--json", action="store_true", help="print the result as JSON")
    build.set_defaults(func=handle_image_build)

    prune_p = verbs.add_parser("prune", help="remove every blindact desktop container and old images")
    prune_p.add_argument("--containers-only", action="store_true", help="keep all images")
    prune_p.add_argument("--all", action="store_true", help="also remove the latest image and its base")
    prune_p.set_defaults(func=handle_image_prune)
    return image


def handle_image_build(args: argparse.Namespace) -> int:
    try:
        result = build_image(base=args.base, suite=args.suite, mirror=args.mirror, tag=args.tag, no_cache=args.no_cache)
    except ImageBuildError as exc:
        print(f"blindact image build: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        state = "built" if result.built else "up to date"
        print(f"{result.image}: {state} in {result.seconds:.1f} s, {result.size_bytes / 1e6:.0f} MB")
    return 0


def handle_image_prune(args: argparse.Namespace) -> int:
    try:
        removed = prune(images=not args.containers_only, keep_latest=not args.all)
    except ImageBuildError as exc:
        print(f"blindact image prune: {exc}", file=sys.stderr)
        return 1
    print(f"removed {removed['containers']} container(s), {removed['images']} image(s)")
    return 0


def add_docker_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("docker provider")
    group.add_argument("--image", default=DEFAULT_IMAGE, help=f"desktop image (default {DEFAULT_IMAGE})")
    group.add_argument("--memory", default="2g", help="memory limit per desktop container (default 2g)")
    group.add_argument("--cpus", type=float, default=1.5, help="CPU limit per desktop container (default 1.5)")
    group.add_argument("--shm-size", default="512m", help="/dev/shm size per container (default 512m)")


def docker_desktop_factory(args: argparse.Namespace, width: int = 1280, height: int = 720) -> Callable[[], object]:
    """Call once in the main thread (it installs the cleanup handlers); call the result per worker."""
    from blindact.desktop.docker_provider import DockerDesktop, install_cleanup_handlers

    install_cleanup_handlers()

    def make() -> DockerDesktop:
        return DockerDesktop(getattr(args, "image", DEFAULT_IMAGE), width, height,
                             memory=getattr(args, "memory", "2g"), cpus=getattr(args, "cpus", 1.5),
                             shm_size=getattr(args, "shm_size", "512m"))

    return make


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench_docker(image: str = DEFAULT_IMAGE, steps: int = 40, resets: int = 5, build: bool = True) -> dict:
    """Container figures: cached build, image size, start-to-ready, reset, step p50/p95.

    A step is what the env does per agent action: execute, settle, screenshot, accessibility tree.
    """
    from blindact.actions import action_from_dict
    from blindact.desktop.docker_provider import DockerDesktop, install_cleanup_handlers

    install_cleanup_handlers()
    out: dict = {}
    if build:
        result = build_image(tag=image)
        out["build_s"] = round(result.seconds, 2)
        out["image_built"] = result.built
        out["image_mb"] = round(result.size_bytes / 1e6, 1)
    setup = [{"launch": {"app": "terminal"}}]
    with DockerDesktop(image) as desk:
        out["ready_s"] = round(desk.start_seconds or 0.0, 3)
        reset_times = [desk.reset(setup).total_s for _ in range(resets)]
        step_times, shot_raw, shot_png = [], [], []
        for i in range(steps):
            act = action_from_dict({"type": "type", "text": "x"} if i % 2 else {"type": "move", "x": 100 + i, "y": 200})
            t = time.perf_counter()
            desk.execute(act)
            desk.settle(0.5)
            desk.screenshot()
            desk.accessibility_tree()
            step_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            desk.screenshot()
            shot_raw.append(time.perf_counter() - t)
            t = time.perf_counter()
            desk.screenshot_png()
            shot_png.append(time.perf_counter() - t)
    out.update({
        "reset_s_median": round(statistics.median(reset_times), 3),
        "step_s_p50": round(_pct(step_times, 0.5), 4),
        "step_s_p95": round(_pct(step_times, 0.95), 4),
        "screenshot_raw_s_p50": round(_pct(shot_raw, 0.5), 4),
        "screenshot_png_s_p50": round(_pct(shot_png, 0.5), 4),
    })
    return out
