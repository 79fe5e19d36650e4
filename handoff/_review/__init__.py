"""The model review: exhaustive exploration of a coordinator, monitors, properties, report."""
