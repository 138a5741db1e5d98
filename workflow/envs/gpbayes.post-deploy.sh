#!/usr/bin/env bash
# Run by Snakemake inside the freshly built environment (--sdm conda), from the working
# directory: install gpbayes from the checkout this workflow belongs to -- the nearest
# directory at or above the working directory whose pyproject.toml is gpbayes' (the
# repository root, also for `--directory .test`).  Dependencies come from gpbayes.yaml.
set -euo pipefail
d="$PWD"
while [ "$d" != "/" ] && ! grep -qs '^name = "gpbayes"' "$d/pyproject.toml"; do
    d="$(dirname "$d")"
done
if [ "$d" = "/" ]; then
    echo "gpbayes.post-deploy.sh: no gpbayes checkout (pyproject.toml) at or above $PWD" >&2
    exit 1
fi
python -m pip install --no-deps -e "$d"
