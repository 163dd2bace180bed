"""Export: a planned deployment as the engines launch it (``launch``), their configuration files
and launch scripts (``engine_configs``) and the benchmark commands that reproduce its load
(``benchmark_commands``)."""
