"""Generated documentation: state graphs, DOT and Mermaid diagrams, sequences, doc sections."""

__all__ = ["DiagramError"]


class DiagramError(ValueError):
    """A chart, scenario, kind or format that cannot be drawn; the message says why.  Public
    as `handoff.diagrams.DiagramError`: every drawing function raises it, the drawing layer
    included, never an error of the command line."""
