"""Design-space sweeps over dataflow x array shape x precision x workload: spec, workloads,
evaluation, the resumable runner and the report."""
