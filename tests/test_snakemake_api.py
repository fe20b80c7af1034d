"""The Snakemake attributes defsent_plus/pipeline/snakemake_api.py reads beyond Snakemake's documented interface hold
for the installed Snakemake; another version fails here first, naming the module to check."""

import dataclasses
import inspect

import snakemake
from snakemake.modules import WorkflowModifier
from snakemake.path_modifier import PathModifier
from snakemake.settings.types import ResourceSettings

from defsent_plus.pipeline import snakemake_api


def test_the_installed_snakemake_is_one_the_private_attributes_were_checked_on():
    version = ".".join(snakemake.__version__.split(".")[:2])
    assert version in snakemake_api.TESTED_VERSIONS, (
        f"Snakemake {snakemake.__version__} is installed; defsent_plus/pipeline/snakemake_api.py reads attributes of "
        f"Snakemake's Workflow checked on {', '.join(snakemake_api.TESTED_VERSIONS)} only: check each of its functions "
        "against this version and add it to TESTED_VERSIONS")


def test_the_attributes_it_reads_exist():
    fields = {field.name for field in dataclasses.fields(ResourceSettings)}
    assert {"overwrite_resources", "default_resources", "cores"} <= fields
    assert PathModifier(None, None, None).prefix is None
    assert "self.path_modifier = PathModifier(" in inspect.getsource(WorkflowModifier.__init__)  # tests/test_module.py
