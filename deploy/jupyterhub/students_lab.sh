#!/bin/sh
# The students' JupyterLab, set once when deploy/jupyterhub/Dockerfile builds the image (as
# root, where pip installed nbgrader and enabled all of it): nbgrader's Assignment List and
# Validate button stay; what only an instructor uses goes, the formgrader and the course list
# (their server and lab parts) and the Create Assignment sidebar. nbgrader's documentation
# gives these commands ("Installation", "Disabling extensions") and says which extension
# students need ("Using nbgrader with JupyterHub"). The lab plugins are also locked, so that
# JupyterLab's extension manager (4.1 and later) cannot turn them back on; a lock at this
# level also refuses `jupyter labextension enable --level=user`. The teacher's server runs
# this image too and grades with tools/course.py in a terminal (deploy/jupyterhub/README.md);
# nbgrader's formgrader shows a blank panel under JupyterHub 4.1 and later anyway (nbgrader's
# documentation, "Using nbgrader with JupyterHub").
#
# Hiding them is for clarity, not security: a student's formgrader could only show the
# course folder of the student's own server.
#
# jupyter's disable commands exit 0 even when they change nothing (a misspelt name, a level
# the extension was not enabled at), so the last step reads back what a server would load
# and fails the build unless it is exactly this (tests/course/test_hub_image.py).
set -eu

for extension in formgrader course_list; do
    jupyter server extension disable --sys-prefix "nbgrader.server_extensions.$extension"
done
for plugin in formgrader create-assignment course-list; do
    jupyter labextension disable --level=sys_prefix "@jupyter/nbgrader:$plugin"
    jupyter labextension lock --level=sys_prefix "@jupyter/nbgrader:$plugin"
done

python - <<'CHECK'
import sys

from jupyter_core.paths import jupyter_config_path
from jupyter_server.extension.config import ExtensionConfigManager
from jupyterlab_server.config import get_static_page_config

SERVER, LAB = "nbgrader.server_extensions.", "@jupyter/nbgrader:"
KEEP = ["assignment_list", "validate_assignment"]  # server extensions students use
HIDE = ["course-list", "create-assignment", "formgrader"]  # lab plugins they do not


def ours(names, prefix):
    return sorted(name[len(prefix):] for name, yes in names.items() if yes and name.startswith(prefix))


servers = ExtensionConfigManager(read_config_path=jupyter_config_path()).get_jpserver_extensions()
page = get_static_page_config(level="all")
on = ours(servers, SERVER)
off = ours(page.get("disabledExtensions", {}), LAB)
locked = ours(page.get("lockedExtensions", {}), LAB)
print(f"nbgrader for students: server extensions {on}; lab plugins off {off}, locked {locked}")
if on != KEEP or off != HIDE or locked != HIDE:
    sys.exit(f"students_lab.sh: want server extensions {KEEP} and lab plugins {HIDE} off")
CHECK
