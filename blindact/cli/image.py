"""`blindact image build | prune`: the Docker desktop image, built offline."""

from __future__ import annotations

import argparse
import json

from blindact.cli.options import EXIT_PROBLEMS, console, err


def cmd_image_build(args: argparse.Namespace) -> int:
    from blindact.desktop.image import ImageBuildError, build_image

    try:
        result = build_image(base=args.base, suite=args.suite, mirror=args.mirror, tag=args.tag, no_cache=args.no_cache)
    except ImageBuildError as exc:
        err.print(f"[red]blindact image build[/red]: {exc}")
        return EXIT_PROBLEMS
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        state = "built" if result.built else "up to date"
        console.print(f"{result.image}: {state} in {result.seconds:.1f} s, {result.size_bytes / 1e6:.0f} MB")
    return 0


def cmd_image_prune(args: argparse.Namespace) -> int:
    from blindact.desktop.docker_engine import DockerEngineError, docker_client
    from blindact.desktop.docker_provider import cleanup_containers
    from blindact.desktop.image import prune_images

    try:
        client = docker_client()
    except DockerEngineError as exc:
        err.print(f"[red]blindact image prune[/red]: {exc}")
        return EXIT_PROBLEMS
    containers = cleanup_containers(client=client)
    images = 0 if args.containers_only else prune_images(client, keep_latest=not args.all)
    console.print(f"removed {containers} container(s), {images} image(s)")
    return 0


def add_image_parser(sub) -> None:
    from blindact.desktop.docker_engine import DEFAULT_IMAGE

    image = sub.add_parser("image", description="Build the desktop image offline (debootstrap + docker import) or remove it.")
    verbs = image.add_subparsers(dest="image_command", required=True)

    build = verbs.add_parser("build", help="build the desktop image (a no-op when up to date)")
    build.add_argument("--tag", default=DEFAULT_IMAGE, help=f"image tag to build (default {DEFAULT_IMAGE})")
    build.add_argument("--base", default="auto",
                       help="'auto' (own bootstrapped base, else the registry's debian:bookworm-slim, else bootstrap), "
                            "'bootstrap', or an image to build FROM")
    build.add_argument("--suite", default="bookworm", help="Debian suite of the base (default bookworm)")
    build.add_argument("--mirror", default=None, help="Debian mirror URL for the base (default: the host's apt sources)")
    build.add_argument("--no-cache", action="store_true", help="rebuild the base and every layer")
    build.add_argument("--json", action="store_true", help="print the result as JSON")
    build.set_defaults(func=cmd_image_build)

    prune = verbs.add_parser("prune", help="remove every blindact desktop container and old images")
    prune.add_argument("--containers-only", action="store_true", help="keep all images")
    prune.add_argument("--all", action="store_true", help="also remove the latest image and its base")
    prune.set_defaults(func=cmd_image_prune)
