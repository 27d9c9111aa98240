"""Choosing a desktop provider by name."""

from __future__ import annotations

from blindact.desktop.base import Desktop

PROVIDERS = ("local", "docker")


def make_desktop(provider: str = "local", *, width: int = 1280, height: int = 720, **options) -> Desktop:
    """`local`: host processes in a bubblewrap sandbox (the default); `docker`: one container."""
    if provider == "local":
        from blindact.desktop.session import DesktopSession

        return DesktopSession(width=width, height=height, **options)
    if provider == "docker":
        from blindact.desktop.docker_provider import DockerDesktop

        return DockerDesktop(width=width, height=height, **options)
    raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
