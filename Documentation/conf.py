# SPDX-License-Identifier: GPL-2.0
# Sphinx configuration of rpage's documentation: make htmldocs builds it
# into build/htmldocs; the host checks build it with warnings as errors.
# Its drawings are graphviz sources in the tree (.dot), which Sphinx's
# graphviz extension renders at build time, and gnuplot scripts with the
# data of real runs (.gp, .dat), which sphinx/rpage_gnuplot.py renders.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sphinx"))

project = "rpage"
copyright = "the rpage authors"
extensions = ["sphinx.ext.graphviz", "rpage_gnuplot"]
graphviz_output_format = "svg"
master_doc = "index"
exclude_patterns = []
html_theme = "classic"
