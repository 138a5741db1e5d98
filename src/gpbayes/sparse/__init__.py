"""Sparse variational GPs and MCMC for them (Hensman et al. 2015).

svgp        SVGP: whitened Gaussian q(u), Gauss-Hermite ELBO, gradients, L-BFGS fit
target      sampler target log q*(v, theta) and its gradient; posterior predictive from draws
mcmc        joint HMC with a tuner, Gibbs baseline
multiclass  robust-max likelihood with 1-D quadrature
"""
