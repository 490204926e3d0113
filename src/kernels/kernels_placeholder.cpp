// Placeholder until the kernels land.
