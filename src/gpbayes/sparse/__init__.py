"""Sparse variational GPs and MCMC for them (Hensman et al. 2015).

svgp        SVGP: whitened Gaussian q(u), Gauss-Hermite ELBO, gradients, L-BFGS fit
mcmc        sampler target log q*(v, theta), joint HMC with a tuner, Gibbs baseline,
            posterior predictive
multiclass  robust-max likelihood with 1-D quadrature
"""
