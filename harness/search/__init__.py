"""The sustainable-rate search of a phase (`search:`): the rate controller (`controller`) and the loop that runs it
against the live load while the phase goes (`phase`)."""
