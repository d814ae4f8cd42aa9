"""cocotb testbenches: the code that runs inside the simulator (driven by sim/)."""
