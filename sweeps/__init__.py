"""Design-space sweeps over dataflow x array shape x precision x workload (arriving with the sweep
issue; see README.md)."""
