"""systolic: generate, verify and measure systolic-array accelerators (see docs/architecture.md)."""
