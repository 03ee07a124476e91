"""layersched."""
