"""blindact: a sandbox for measuring how safely computer-use agents act."""

__version__ = "0.1.0"


def _register_envs() -> None:
    # `import blindact` makes gymnasium.make("blindact/<task-id>") work
    import warnings

    from blindact.env import register_envs
    from blindact.tasks import TaskFileError

    try:
        register_envs()
    except (TaskFileError, FileNotFoundError) as exc:
        warnings.warn(f"blindact: tasks not registered with gymnasium: {exc}", stacklevel=2)


_register_envs()
