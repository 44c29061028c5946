"""A run as a whole: its directory and writer (store), trials counted once across sources
(pooling), resume, progress, budgets, the circuit breaker, the gate they and a first Ctrl-C
close to stop new trials (stop), the run-level plugins that wire them (plugins), and a
finished run's trajectories and code measures taken again (trajectories, measuring). May
import trial/, plan/ and everything below; never scoring/ (which reads runs), report/ or the
face."""
