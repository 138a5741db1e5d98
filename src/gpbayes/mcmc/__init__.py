"""MCMC samplers as ``init`` + ``step`` over explicit state, and a chain driver."""
