# SPDX-License-Identifier: GPL-2.0
"""The gnuplot directive of rpage's documentation.

    .. gnuplot:: rpage-vm-move.gp
       :data: rpage-vm-move.dat

runs gnuplot on the script (in its own directory, so that it reads its
data file by name) when the HTML is built, and puts the SVG it writes on
standard output into the page, as sphinx.ext.graphviz does with a .dot:
a drawing generated from a script and the figures of a real run, both in
the tree, never a picture drawn by hand. A failing gnuplot fails the
build.
"""
import os
import subprocess

from docutils import nodes
from docutils.parsers.rst import Directive, directives


class Gnuplot(Directive):
    required_arguments = 1
    option_spec = {"data": directives.unchanged, "alt": directives.unchanged}

    def run(self):
        env = self.state.document.settings.env
        rel, path = env.relfn2path(self.arguments[0])
        env.note_dependency(rel)
        if "data" in self.options:
            env.note_dependency(env.relfn2path(self.options["data"])[0])
        try:
            out = subprocess.run(["gnuplot", os.path.basename(path)],
                                 cwd=os.path.dirname(path), check=True,
                                 capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            err = getattr(e, "stderr", "") or str(e)
            raise self.error(f"gnuplot {rel}: {err.strip()}")
        start = out.find("<svg")
        if start < 0:
            raise self.error(f"gnuplot {rel} wrote no SVG")
        # Inline in the page: the SVG element alone, no XML prolog.
        svg = out[start:]
        alt = self.options.get("alt", "")
        html = f'<div class="gnuplot" role="img" aria-label="{alt}">{svg}</div>'
        return [nodes.raw("", html, format="html")]


def setup(app):
    app.add_directive("gnuplot", Gnuplot)
    return {"version": "1", "parallel_read_safe": True,
            "parallel_write_safe": True}
