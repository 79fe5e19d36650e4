"""A chart's compilation: the flat table the coordinator and every tool run."""
