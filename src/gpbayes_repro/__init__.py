"""gpbayes_repro: the reproduction of five papers on top of the ``gpbayes`` library.

This package holds what only the reproduction needs; the library
(``gpbayes``) never imports it (``tests/test_boundary.py``).

Modules
-------
config       the workflow config: loading, JSON-schema validation (schema
             shipped as package data in ``schemas/``), scale settings
data         the vendored data sets: manifest, checksums, readers, preparation,
             stand-ins, user CSV data sets
experiments  one module per paper (``regression_mh`` foundation slice;
             ``pm_gpc``, ``pm_gpc_mcmc``, ``pm_gpc_capacity`` Filippone &
             Girolami 2014; ``slice_ma`` Murray & Adams 2010; ``amis`` Xiong,
             Smidl & Filippone; ``sparse_mcmc`` Hensman et al. 2015; ``gplvm``
             Gadd et al.)
baselines    the probabilistic SVM of F&G 2014's classifier comparison
convergence  IQR-across-replicates convergence curves (Xiong et al.)
claims       the claims records and the claims page
plots        paper figures
workflow     glue for the thin Snakemake scripts (logging, one BLAS thread)
"""
