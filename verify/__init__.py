"""What users run to check a design: the regression of a configuration (`systolic regress`),
RTL against the model and SCALE-Sim (`systolic compare`), and gate-level power against the toggle
model (`systolic synth --power`)."""
