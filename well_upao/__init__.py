"""well-upao: unsupervised PDE-based adaptation of neighborhood-attention PDE foundation models, for The Well."""

__version__ = "0.1.0"
