"""Quality benchmarks: what a change does to ranking quality, measured on ../shared/data."""
