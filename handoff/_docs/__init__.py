"""Generated documentation: state graphs, DOT and Mermaid diagrams, sequences, doc sections."""
