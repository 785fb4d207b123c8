"""The dataset: names and sample places, the sampler, generation, the write phase, clean."""
