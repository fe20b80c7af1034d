"""Snakemake script: isotropy metrics and SVD/PCA plots of every analysed entry space."""

from defsent_plus.io import read_npy, write_json
from defsent_plus.isotropy import isotropy_metrics, plot_space
from defsent_plus.logs import log_to

log_to(snakemake.log[0])
options = snakemake.params.options
metrics = {}
for name, path, png in zip(snakemake.params.names, snakemake.input.spaces, snakemake.output.plots, strict=True):
    space = read_npy(path)
    metrics[name] = isotropy_metrics(space, seed=options["seed"], n_pairs=options["n_pairs"])
    title = f"{name} space of {snakemake.wildcards.encoder} on {snakemake.wildcards.dataset}"
    plot_space(space, png, title, max_points=options["plot_points"], seed=options["seed"])
write_json(snakemake.output.metrics, metrics)
