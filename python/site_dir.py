# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""Prints the site directory this interpreter searches under PREFIX.

    python3 site_dir.py PREFIX

python/meson.build installs the package hq there. It is the platlib of
the interpreter's install scheme whose data directory is PREFIX and whose
platlib is on sys.path (Debian's python3: posix_local for /usr/local, which
gives /usr/local/lib/python3.X/dist-packages, and deb_system for /usr); for
a prefix no scheme of the interpreter covers, <PREFIX>/lib/python3.X/
site-packages, which needs PYTHONPATH.
"""

import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
default = (sysconfig.get_default_scheme()
           if hasattr(sysconfig, "get_default_scheme") else "posix_prefix")
for scheme in [default] + sorted(sysconfig.get_scheme_names()):
    if scheme.startswith(("nt", "osx")):
        continue
    paths = sysconfig.get_paths(scheme)
    if (os.path.normpath(paths["data"]) == prefix
            and paths["platlib"] in sys.path):
        print(paths["platlib"])
        break
else:
    print(sysconfig.get_paths(
        "posix_prefix", vars={"base": prefix, "platbase": prefix})["platlib"])
