"""Serving under load: request streams, batching, a discrete-event simulation of accelerators
whose service times come from the hardware model, and the latency, throughput and energy it
measures."""
