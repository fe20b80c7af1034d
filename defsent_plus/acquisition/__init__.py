"""Evaluation and dictionary data for users on a fresh machine: a local mirror or checked downloads.

:mod:`.download` fetches one URL (resume, retries, progress, SHA-256), :mod:`.catalog` lists the official archives
of each dataset and resolves its ``data.<name>`` settings, and :mod:`.layout` puts a dataset's files into its
directory from a mirror or from those archives, verified against ``sha256sum`` manifests, all or nothing.
"""
