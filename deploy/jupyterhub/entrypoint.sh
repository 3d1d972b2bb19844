#!/bin/sh
# The ENTRYPOINT of deploy/jupyterhub/Dockerfile: every user's server starts through it (the
# chart's command, jupyterhub-singleuser, replaces only the image's CMD).
#
# config.yaml runs each user's server under a uid of their own, which the image's
# /etc/passwd does not list. nbgrader names a submission after the login name of the uid it
# runs as (nbgrader.utils.get_osusername, pwd.getpwuid), and stops without one. So a uid with
# no name gets one here, "jovyan", in the image's own copy of /etc/passwd (the Dockerfile
# lets group 100 write it; each pod has its own): for jovyan, nbgrader takes the student's
# name from JUPYTERHUB_USER (nbgrader.utils.get_username), which the hub sets.
set -eu
passwd="${DPKIT_PASSWD_FILE:-/etc/passwd}"  # another file only in tests/course/test_hub_image.py
uid="$(id -u)"
if ! awk -F: -v uid="$uid" '$3 == uid { found = 1 } END { exit !found }' "$passwd"; then
    echo "jovyan:x:$uid:$(id -g):dpkit learner:${HOME:-/home/jovyan}:/bin/sh" >> "$passwd"
fi
exec "$@"
