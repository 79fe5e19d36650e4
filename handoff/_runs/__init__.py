"""Drivers of real coordinators: calls, the cooperative runtime, traces, simulation, demo."""
