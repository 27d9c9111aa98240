"""blindact: a sandbox for measuring how safely computer-use agents act."""

from blindact._version import __version__
from blindact.registration import register_when_gymnasium_loads

__all__ = ["__version__"]

# gymnasium.make("blindact/<task-id>") works after `import blindact`; Gymnasium and the env are
# imported only when used (blindact.registration)
register_when_gymnasium_loads()
