"""Models: neighborhood attention, the NA Transformer backbone, LoRA/NSLoRA adapters."""
