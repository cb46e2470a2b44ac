"""The package version, in a module of its own: modules inside the package import it
from here (importing the package root from inside the package would be an upward
import, and a cycle)."""

__version__ = "0.1.0"
