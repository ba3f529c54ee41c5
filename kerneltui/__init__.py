"""kerneltui: write GPU kernels with an LLM agent against a harness you can trust."""

__version__ = "0.1.0"
