"""The Amaranth generator: PEs, meshes, buffers, controllers and the accelerator top, built from
the contract's configuration, widths, layouts and timing formulas."""
